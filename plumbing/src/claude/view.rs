//! The view of a Claude Code transcript at one leaf behind the seam ([`HostView`]): what Claude
//! Code sends for each row of the loader's chain, its pieces for the tokenizers, and the way a
//! folded row comes back (a tool result's saved original, a tool call's saved input).

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::host::{parse_content, ClaudeSession, ResultHead};
use super::loader::Chain;
use super::{project, write};
use crate::host::view::Positions;
use crate::host::Pieces;
use crate::host::{self, Block, BlockKind, Content, HostView, Projected, View};

/// One leaf's context, as Claude Code loads and sends it.
pub struct ClaudeView<'s, 'a> {
    pub(super) host: &'s ClaudeSession<'a>,
    pub(super) chain: Chain,
    /// Each node's position in the chain (the context list, which the view holds).
    pub(super) positions: Positions,
}

impl<'s> ClaudeView<'s, '_> {
    /// The message content of assistant node `index` with the input of each call a fold
    /// replaced put back from its saved file, when every such input is there and is what the
    /// fold replaced: the fork's input is the saved one with some string members turned into
    /// one placeholder naming that file (`None` when no call is folded, or one cannot be put back).
    fn original_inputs(&self, index: usize) -> Option<Box<RawValue>> {
        let raw = self.host.nodes[index].content?;
        let content = parse_content(Some(raw));
        let mut splices: Vec<(usize, usize, String)> = Vec::new();
        for block in content.blocks() {
            let BlockKind::ToolCall { id: Some(id), arguments: Some(args), .. } = &block.kind else { continue };
            if !write::holds_folded_input(args.get()) {
                continue;
            }
            // The path comes from the file: only this call's saved input is read.
            let saved = write::folded_input_path(args)?;
            if saved.file_name()?.to_str()? != format!("{id}.{}", write::INPUT_EXT) {
                return None;
            }
            let original = std::fs::read_to_string(&saved).ok()?;
            if !write::is_folded_input(args, &original, &saved)? {
                return None;
            }
            let at = (args.get().as_ptr() as usize).checked_sub(raw.get().as_ptr() as usize)?;
            splices.push((at, args.get().len(), original));
        }
        let mut out = raw.get().to_string();
        for (at, len, original) in splices.iter().rev() {
            out.get(*at..at + len)?;
            out.replace_range(*at..at + len, original);
        }
        (!splices.is_empty()).then(|| RawValue::from_string(out).ok()).flatten()
    }

    /// The leaf row's uuid.
    fn leaf_id(&self) -> Option<&str> {
        self.chain.leaf.and_then(|r| self.host.t.rows[r].uuid())
    }

    /// Feeds the pieces of node `n`'s row, with `replaced` standing for the content of its
    /// tool result (a user row) or its message (an assistant row) when given.
    fn row_pieces(&self, n: usize, replaced: Option<&Content<'_>>, sink: &mut dyn Pieces) {
        let row = self.host.row(n);
        match row.kind() {
            "user" => {
                let content = parse_content(self.host.nodes[n].content);
                for block in content.blocks() {
                    match (&block.kind, replaced) {
                        (BlockKind::ToolResult { .. }, Some(new)) => content_pieces(new, sink),
                        (BlockKind::ToolResult { .. }, None) => {
                            let inner = serde_json::from_str::<ResultHead<'_>>(block.raw.get()).ok();
                            content_pieces(&parse_content(inner.and_then(|r| r.content)), sink);
                        }
                        _ => block_pieces(block, sink),
                    }
                }
            }
            "assistant" => {
                let own;
                let content = match replaced {
                    Some(new) => new,
                    None => {
                        own = parse_content(self.host.nodes[n].content);
                        &own
                    }
                };
                for block in content.blocks() {
                    match &block.kind {
                        BlockKind::Text(s) | BlockKind::Thinking(s) => sink.text(s),
                        BlockKind::ToolCall { name, arguments, .. } => {
                            sink.text(name);
                            sink.text(arguments.map_or("{}", |a| a.get()));
                        }
                        _ => {}
                    }
                }
            }
            "attachment" => {
                for part in project::rendered_parts(&self.host.t, row).unwrap_or_default() {
                    match &part {
                        Value::String(s) => sink.text(s),
                        Value::Array(blocks) => blocks
                            .iter()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .for_each(|s| sink.text(s)),
                        _ => {}
                    }
                }
            }
            _ => return,
        }
        sink.end_message();
    }
}

/// Text and images of a content value, as a user message or a tool result carries them.
fn content_pieces(content: &Content<'_>, sink: &mut dyn Pieces) {
    match content {
        Content::Text(s) => sink.text(s),
        Content::Blocks(blocks) => blocks.iter().for_each(|b| block_pieces(b, sink)),
        Content::Other => {}
    }
}

fn block_pieces(block: &Block<'_>, sink: &mut dyn Pieces) {
    match &block.kind {
        BlockKind::Text(s) => sink.text(s),
        BlockKind::Image { .. } => sink.image(),
        _ => {}
    }
}

impl<'s> HostView<'s> for ClaudeView<'s, '_> {
    fn projected(&self, _index: usize) -> Projected<'s> {
        Projected::Raw
    }

    fn content(&self, index: usize) -> Option<Content<'s>> {
        Some(parse_content(self.host.own(index)))
    }

    fn edit_target(&self, _index: usize) -> Option<Cow<'s, str>> {
        None
    }

    fn replacement(&self, _edit: usize) -> Option<&'s RawValue> {
        None
    }

    fn positions(&self) -> &Positions {
        &self.positions
    }

    fn pieces(&self, _pos: usize, index: usize, sink: &mut dyn Pieces) {
        self.row_pieces(index, None, sink)
    }

    fn pieces_with(&self, index: usize, content: &Content<'_>, sink: &mut dyn Pieces) {
        self.row_pieces(index, Some(content), sink)
    }

    fn messages_json(&self, _pos: usize, index: usize) -> Vec<Value> {
        let row = self.host.row(index);
        match row.kind() {
            kind @ ("user" | "assistant") => {
                self.host.t.content(row).map(|c| json!({"role": kind, "content": c})).into_iter().collect()
            }
            "attachment" => project::rendered_parts(&self.host.t, row)
                .unwrap_or_default()
                .into_iter()
                .map(|part| json!({"role": "user", "content": part}))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn original(&self, index: usize) -> Option<Box<RawValue>> {
        if self.host.row(index).kind() == "assistant" {
            return self.original_inputs(index);
        }
        let result = self.host.nodes[index].result.as_ref()?;
        let content = parse_content(result.content);
        let Content::Blocks(blocks) = &content else { return None };
        let [Block { kind: BlockKind::Text(text), .. }] = blocks.as_slice() else { return None };
        let path = text.strip_prefix("<persisted-output>\n")?.lines().next()?.split_once("Full output saved to: ")?.1;
        let path = std::path::Path::new(path);
        let original = std::fs::read_to_string(path).ok()?;
        // Only an original the placeholder was made from is put back.
        (write::noted_placeholder(&original, path, write::note_of(text)) == *text)
            .then(|| RawValue::from_string(crate::js::json::js_string(&original)).ok())
            .flatten()
    }

    fn own_placeholder(&self, index: usize, why: Option<&str>) -> Option<Box<RawValue>> {
        let result = self.host.nodes[index].result.as_ref()?;
        let text = parse_content(result.content);
        let Content::Blocks(blocks) = &text else { return None };
        let [Block { kind: BlockKind::Text(text), .. }] = blocks.as_slice() else { return None };
        let sid = self.host.session_id()?;
        let saved = super::fork::saved_path(&self.host.t.file.path, sid, &result.call_id);
        RawValue::from_string(crate::js::json::js_string(&write::noted_placeholder(text, &saved, why))).ok()
    }

    fn input_way_back(&self, index: usize, block: usize) -> Option<String> {
        let content = parse_content(self.host.nodes.get(index)?.content);
        let BlockKind::ToolCall { id: Some(id), arguments, .. } = &content.blocks().get(block)?.kind else {
            return None;
        };
        // Folded already: the file its placeholder names (a fork's name its source's).
        let saved = match arguments.and_then(write::folded_input_path) {
            Some(saved) => saved,
            None => super::fork::saved_input_path(&self.host.t.file.path, self.host.session_id()?, id),
        };
        Some(write::input_way_back(&saved))
    }

    fn tail(&self, view: &View<'s, '_>, ids: &mut dyn FnMut(&str)) -> Option<host::Tail> {
        super::tail::ClaudeTail::of(self, view, ids).map(|t| t.into_tail())
    }

    fn to_json(&self, _context: &[usize]) -> Value {
        json!({"leafId": self.leaf_id(), "messages": project::project(&self.host.t, &self.chain)})
    }

    /// [`HostView::to_json`]'s bytes, one message at a time (the messages as one `Value` were
    /// ~2.5x their JSON, 1.8x the file).
    fn write_json_text(&self, _context: &[usize], out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use std::io::Write;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        out.write_all(b"{\"leafId\":")?;
        serde_json::to_writer(&mut out, &self.leaf_id())?;
        out.write_all(b",\"messages\":[")?;
        let mut written = Ok(0);
        project::each_message(&self.host.t, &self.chain, |m| {
            if let Ok(n) = &mut written {
                let comma = if *n > 0 { out.write_all(b",") } else { Ok(()) };
                *n += 1;
                if let Err(e) = comma.and_then(|()| serde_json::to_writer(&mut out, &m).map_err(std::io::Error::from)) {
                    written = Err(e);
                }
            }
        });
        written?;
        out.write_all(b"]}")?;
        out.flush()
    }
}
