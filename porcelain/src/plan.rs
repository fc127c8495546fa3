//! The fold engine: from a projection and options to a [`Plan`] (regions, replacements, token
//! figures). `fold --dry-run`, the real fold and the meter all print from the same plan, so the
//! number they show is one number.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::profile::Profile;
use crate::rules::Rules;
use crate::scope::{input_regions, regions, Scope};
use serde_json::value::RawValue;
use shake_plumbing::host::{BlockKind, Content, Role, Unit, View};
use shake_plumbing::js::json::{js_string, raw, trusted, RawObject};
use shake_plumbing::js::string_json;
use shake_plumbing::js::utf16_len;
use shake_plumbing::regions::claude_shake::{is_tombstone, ClaudeShake, Output};
use shake_plumbing::regions::rules::{keep_tool_uses, stale_changes, superseded};
use shake_plumbing::regions::{is_big_string, skip, tail_start, RegionKind, Skip};
use shake_plumbing::tokens::{tokens_with, Tokenizer};

use crate::wall::{Item, Wall};

/// What a fold does: the scope, the profile's thresholds, the rules, and the tokenizer that
/// counts.
#[derive(Clone, Debug)]
pub struct FoldOptions {
    /// What to fold.
    pub scope: Scope,
    /// Tail and block minimum (used by `elide` only).
    pub profile: Profile,
    /// Counts every token figure of the plan.
    pub tokenizer: Tokenizer,
    /// Excluded tools (every scope); kept tool uses, superseded reads and the floor (`elide`).
    pub rules: Rules,
}

impl FoldOptions {
    /// The options of a scope with the profile's own rules.
    pub fn new(scope: Scope, profile: Profile, tokenizer: Tokenizer) -> FoldOptions {
        FoldOptions { scope, profile, tokenizer, rules: Rules::of(profile) }
    }

    /// For each context position, whether it is a superseded read this fold takes even in the
    /// tail (empty when the rule is off or the scope is not `elide`).
    fn superseded(&self, view: &View<'_, '_>) -> Vec<bool> {
        match self.scope == Scope::Elide && self.rules.superseded_reads {
            true => superseded(view),
            false => Vec::new(),
        }
    }
}

/// One target's new content.
#[derive(Debug)]
pub struct TargetEdit<'s> {
    /// The target entry's id (Claude Code: the tool_use_id), borrowed from the session where it
    /// can be (an edit per folded target).
    pub target: Cow<'s, str>,
    /// Its index in the session's entries.
    pub index: usize,
    /// The replacement `content`, as the JSON written into the edit: borrowed from the session
    /// when it is content the session holds already (an undo's restored content, most often),
    /// built otherwise (a fold's).
    pub content: Cow<'s, RawValue>,
    /// Tokens the model sees of this entry now.
    pub before: u64,
    /// Tokens it sees after the edit.
    pub after: u64,
}

/// What a fold would do at a leaf, borrowing the session planned.
#[derive(Debug)]
pub struct Plan<'s> {
    /// The options planned with.
    pub options: FoldOptions,
    /// The regions newly folded, in context order (`log` is empty: not written yet).
    pub regions: Vec<Item<'s>>,
    /// One edit per target, in context order (a fold's content is always built).
    pub edits: Vec<TargetEdit<'s>>,
    /// Tokens the model would no longer see: Σ (before − after) over the edits.
    pub tokens_freed: u64,
    /// First protected context position (`elide`), or the context length.
    pub tail_start: usize,
    /// What the fold would have freed when the floor stopped it (claude-shake's: less than 15%
    /// of the context); the plan is then empty.
    pub below_floor: Option<u64>,
}

impl Plan<'_> {
    /// Counts the new regions of one kind.
    pub fn count(&self, kind: RegionKind) -> usize {
        self.regions.iter().filter(|r| r.kind == kind).count()
    }

    /// Counts the tool results folded whole, superseded reads included (the meter's figure).
    pub fn tool_results(&self) -> usize {
        self.regions.iter().filter(|r| r.kind.is_whole()).count()
    }

    /// Tells whether the fold would change nothing.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }
}

/// Plans a fold given the wall already derived for this projection and the context's counts by
/// `options`' tokenizer (`tokens`, [`context_tokens`]: counted once, not again by the plan).
///
/// [`context_tokens`]: shake_plumbing::tokens::context_tokens
pub fn plan_with_wall<'s>(projection: &View<'s, '_>, wall: &Wall, options: &FoldOptions, tokens: &[u64]) -> Plan<'s> {
    let tail_start = match (options.scope, options.profile) {
        (Scope::Elide, Profile::ClaudeShake) => claude_shake_tail(projection, wall),
        (Scope::Elide, profile) => tail_start(tokens, profile.tail()),
        (Scope::Thinking | Scope::Images, _) => projection.context.len(),
    };
    let tail_start = match options.scope {
        Scope::Elide => tail_start.min(keep_tool_uses(projection, options.rules.keep_tool_uses)),
        Scope::Thinking | Scope::Images => tail_start,
    };
    let superseded = options.superseded(projection);
    let inputs = stale_inputs(projection, wall, options, tokens, tail_start, &superseded);
    let mut plan = plan_before(projection, wall, options, tokens, tail_start, &superseded, &inputs);
    let floor = options.rules.floor.filter(|_| options.scope == Scope::Elide);
    if let Some(floor) = floor.filter(|_| !plan.is_empty()) {
        if !floor.passes(plan.tokens_freed, tokens.iter().sum()) {
            plan.below_floor = Some(plan.tokens_freed);
            (plan.regions, plan.edits, plan.tokens_freed) = (Vec::new(), Vec::new(), 0);
        }
    }
    plan
}

/// The tool calls whose arguments `--fold-tool-inputs` folds, by call id: each whose result this
/// fold (planned first without them) or an earlier one folds whole, or whose file a later result
/// writes, edits or reads whole ([`stale_changes`]). Empty when the rule is off.
fn stale_inputs(
    view: &View<'_, '_>,
    wall: &Wall,
    options: &FoldOptions,
    tokens: &[u64],
    tail_start: usize,
    superseded: &[bool],
) -> HashSet<String> {
    if options.scope != Scope::Elide || !options.rules.fold_tool_inputs {
        return HashSet::new();
    }
    let results = plan_before(view, wall, options, tokens, tail_start, superseded, &HashSet::new());
    let folded: HashSet<&str> = results.regions.iter().filter(|r| r.kind.is_whole()).map(|r| &*r.target).collect();
    let changed = stale_changes(view);
    let units = view.units.iter().enumerate().filter(|(_, u)| u.role == Role::ToolResult);
    units
        .filter_map(|(pos, u)| {
            let call = u.tool.as_deref()?.call_id.as_deref()?;
            let whole = |t: &str| folded.contains(t) || wall.items_of(t).iter().any(|it| it.kind.is_whole());
            (changed[pos] || u.target.is_some_and(|t| whole(t.0))).then(|| call.to_string())
        })
        .collect()
}

/// The tool results of the context as claude-shake sees them: context position, text length
/// (UTF-16 units) and whether it is already a placeholder.
fn tool_outputs(view: &View<'_, '_>, wall: &Wall) -> Vec<(usize, Output)> {
    view.units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.role == Role::ToolResult)
        .map(|(pos, u)| {
            let text = view.parse_content(wall.base_content(view, u.index)).joined_text();
            let tombstone = u.tombstone || is_tombstone(&text);
            (pos, Output { chars: utf16_len(&text), tombstone })
        })
        .collect()
}

/// claude-shake's window as a tail: the position of the oldest tool result whose strictly
/// newer results' text is under 16,000 tokens at 0.34 a character (peer-rules §4(b)).
fn claude_shake_tail(view: &View<'_, '_>, wall: &Wall) -> usize {
    let outputs = tool_outputs(view, wall);
    let results: Vec<Output> = outputs.iter().map(|(_, o)| *o).collect();
    outputs.get(ClaudeShake::default().window_start(&results)).map_or(view.context.len(), |(pos, _)| *pos)
}

/// What folding one context position frees and folds, whatever the tail: a plan's figures are
/// the sums of its positions' gains before its `tail_start` (each position is planned alone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Gain {
    /// Tokens freed (`before − after` of the position's edit, 0 without one).
    pub tokens: u64,
    /// Tool results folded.
    pub tool_results: usize,
    /// Blocks folded.
    pub blocks: usize,
    /// A superseded read: folded even inside the tail.
    pub superseded: bool,
    /// A tool use's result (what "keep the last N tool uses" counts), folded or not.
    pub tool_use: bool,
}

/// The gain of every context position, as if no tail protected any (`tokens` as for
/// [`plan_with_wall`]).
pub fn gains(projection: &View<'_, '_>, wall: &Wall, options: &FoldOptions, tokens: &[u64]) -> Vec<Gain> {
    let superseded = options.superseded(projection);
    // Tool inputs are not counted here: a call's gain depends on its result's place (the
    // growing meter measures whole when the rule is on).
    let plan = plan_before(projection, wall, options, tokens, projection.context.len(), &superseded, &HashSet::new());
    let pos_of: HashMap<usize, usize, foldhash::fast::RandomState> =
        projection.context.iter().enumerate().map(|(pos, &index)| (index, pos)).collect();
    let mut gains: Vec<Gain> = projection
        .units
        .iter()
        .enumerate()
        .map(|(pos, u)| Gain {
            superseded: superseded.get(pos).copied().unwrap_or(false),
            tool_use: shake_plumbing::regions::rules::is_tool_use(u.role),
            ..Gain::default()
        })
        .collect();
    for edit in &plan.edits {
        gains[pos_of[&edit.index]].tokens += edit.before.saturating_sub(edit.after);
    }
    for r in &plan.regions {
        let g = &mut gains[pos_of[&r.index]];
        match r.kind {
            RegionKind::ToolResult | RegionKind::SupersededRead => g.tool_results += 1,
            RegionKind::Block => g.blocks += 1,
            RegionKind::Thinking | RegionKind::Image | RegionKind::ToolInput => {}
        }
    }
    gains
}

/// Plans the positions before `tail_start` (the later ones are protected), and the `superseded`
/// reads wherever they are; the arguments of the tool calls `inputs` names ([`stale_inputs`]).
fn plan_before<'s>(
    view: &View<'s, '_>,
    wall: &Wall,
    options: &FoldOptions,
    tokens: &[u64],
    tail_start: usize,
    superseded: &[bool],
    inputs: &HashSet<String>,
) -> Plan<'s> {
    let tok = &options.tokenizer;
    let mut plan = Plan {
        options: options.clone(),
        regions: Vec::new(),
        edits: Vec::new(),
        tokens_freed: 0,
        tail_start,
        below_floor: None,
    };
    let claude_shake = options.scope == Scope::Elide && options.profile == Profile::ClaudeShake;
    // Past the tail's start only superseded reads are in play.
    let end = superseded.iter().rposition(|s| *s).map_or(tail_start, |last| tail_start.max(last + 1));
    for (pos, unit) in view.units.iter().enumerate().take(end) {
        let stale = superseded.get(pos).copied().unwrap_or(false);
        if pos >= tail_start && !stale {
            continue;
        }
        if unit.role == Role::ToolResult && unit.tool.as_ref().is_some_and(|t| options.rules.excludes(&t.name)) {
            continue;
        }
        let index = unit.index;
        let Some(base_raw) = wall.base_content(view, index) else { continue };
        let base = view.parse_content(Some(base_raw));
        let skipped = skip(view, unit, Some(&base));
        // A host may rewrite the calls of an entry whose content it takes back otherwise only
        // whole (Claude Code splices a call's `input` alone): only its calls are in play then.
        let calls_only = skipped == Some(Skip::OddContent)
            && !inputs.is_empty()
            && unit.role == Role::Assistant
            && view.host().foldable_inputs(unit.role, &base);
        if skipped.is_some() && !calls_only {
            continue;
        }
        // claude-shake folds tool results longer than 2,000 characters, nothing else.
        let small = || utf16_len(&base.joined_text()) <= ClaudeShake::default().min_result_chars;
        if claude_shake && (unit.role != Role::ToolResult || small()) {
            continue;
        }
        let Some(target) = unit.target.map(|t| Cow::Borrowed(t.0)) else { continue };
        let new = regions_in(view, unit, (&target, &base), wall, options, stale, (inputs, calls_only));
        if new.is_empty() {
            continue;
        }
        let mut all: Vec<&Item> = wall.items_of(&target).iter().collect();
        all.extend(&new);
        // A host with a placeholder of its own writes it for a whole tool result (Claude Code's
        // `<persisted-output>`): the plan counts what is written, and skips a result it would not
        // shrink.
        let whole = all.iter().all(|it| it.kind.is_whole());
        let why = all.iter().any(|it| it.kind == RegionKind::SupersededRead).then_some(crate::scope::SUPERSEDED_WHY);
        let own = whole.then(|| view.own_placeholder(index, why)).flatten();
        let shrinks_only = own.is_some();
        let content = own.unwrap_or_else(|| compose(&base, base_raw, &all));
        let before = tokens[pos];
        let after = tokens_with(view, index, &view.parse_content(Some(&content)), tok);
        if shrinks_only && after >= before {
            continue;
        }
        plan.tokens_freed += before.saturating_sub(after);
        plan.edits.push(TargetEdit { target, index, content: Cow::Owned(content), before, after });
        plan.regions.extend(new);
    }
    // Grown by doubling: up to half of each was room for what the plan does not hold, and a
    // fold holds its plan until the batch is written (1.3 MiB on 25,000 targets).
    plan.regions.shrink_to_fit();
    plan.edits.shrink_to_fit();
    plan
}

/// The regions of one target that the scope would fold and the wall has not folded yet (a whole
/// tool result is folded once, as a superseded read or not); the arguments of the calls
/// `inputs` names, and only those when `calls_only`.
fn regions_in<'s>(
    view: &View<'s, '_>,
    unit: &Unit<'s>,
    (target, base): (&Cow<'s, str>, &Content<'_>),
    wall: &Wall,
    o: &FoldOptions,
    superseded: bool,
    (inputs, calls_only): (&HashSet<String>, bool),
) -> Vec<Item<'s>> {
    let folded: Vec<_> = wall.items_of(target).iter().map(Item::key).collect();
    let whole = wall.items_of(target).iter().any(|it| it.kind.is_whole());
    let mut found = match calls_only {
        true => Vec::new(),
        false => regions(unit, base, o.scope, o.profile, &o.tokenizer, superseded),
    };
    if !inputs.is_empty() && unit.role == Role::Assistant {
        found.extend(input_regions(base, inputs, o.profile, &o.tokenizer, |name| o.rules.excludes(name)));
    }
    found
        .into_iter()
        .filter(|r| !(folded.contains(&r.key()) || whole && r.kind.is_whole()))
        .map(|r| Item::new(target.clone(), unit.index, r, "").in_view(view))
        .collect()
}

/// Builds a target's replacement: its pre-shake content with every given fold applied.
/// Untouched blocks keep their exact bytes; only rewritten text blocks are re-serialised.
pub fn compose(base: &Content<'_>, base_raw: &RawValue, items: &[&Item]) -> Box<RawValue> {
    let json = match base {
        Content::Text(s) => string_json(&replace_spans(s, exact_text(Some(base_raw)).as_deref(), items, None)),
        Content::Blocks(blocks) => {
            let whole = items.iter().find(|it| it.kind.is_whole());
            let mut placed = false;
            let mut out: Vec<String> = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.iter().enumerate() {
                let has = |kind| items.iter().any(|it| it.kind == kind && it.block == Some(i));
                match &b.kind {
                    BlockKind::Text(t) if whole.is_some() => {
                        if !placed && !t.is_empty() {
                            let placeholder = whole.and_then(|w| w.placeholder()).unwrap_or_default();
                            out.push(with_text(b.raw, placeholder.as_bytes()));
                            placed = true;
                        }
                    }
                    BlockKind::Text(t) if has(RegionKind::Block) => {
                        let exact = RawObject::parse(b.raw.get())
                            .and_then(|o| exact_text(o.raw("text")).map(|t| t.into_owned()));
                        out.push(with_text(b.raw, &replace_spans(t, exact.as_deref(), items, Some(i))))
                    }
                    BlockKind::Thinking(_) if has(RegionKind::Thinking) => {}
                    BlockKind::ToolCall { arguments: Some(args), .. } if has(RegionKind::ToolInput) => {
                        let it = items.iter().find(|it| it.kind == RegionKind::ToolInput && it.block == Some(i));
                        let text = it.and_then(|it| it.placeholder()).unwrap_or_default();
                        out.push(match folded_arguments(args, &text) {
                            Some(json) => with_member(b.raw, args, &json),
                            None => b.raw.get().to_string(),
                        });
                    }
                    BlockKind::Image { .. } if has(RegionKind::Image) => {
                        let it = items.iter().find(|it| it.kind == RegionKind::Image && it.block == Some(i));
                        let text = it.and_then(|it| it.placeholder()).unwrap_or_default();
                        out.push(format!("{{\"type\":\"text\",\"text\":{}}}", js_string(&text)));
                    }
                    _ => out.push(b.raw.get().to_string()),
                }
            }
            format!("[{}]", out.join(","))
        }
        Content::Other => base_raw.get().to_string(),
    };
    RawValue::from_string(json).unwrap_or_else(|_| base_raw.to_owned())
}

/// A tool call's arguments with each big string member ([`is_big_string`]) replaced by
/// `placeholder`; every other member keeps its place and exact bytes. `None` when they are not an
/// object whose keys hold no escape.
fn folded_arguments(args: &RawValue, placeholder: &str) -> Option<String> {
    let members: Vec<(&[u8], &RawValue)> = trusted::members(args)?.collect::<Option<_>>()?;
    let folded = js_string(placeholder);
    let mut out = String::with_capacity(args.get().len().min(1024));
    out.push('{');
    write_members(&mut out, &members, |_, value| is_big_string(value).then_some(folded.as_str()))?;
    out.push('}');
    Some(out)
}

/// Writes an object's members (keys without escapes) as JSON into `out`, comma-separated, each
/// value as `new` gives it for its key and raw value, else its own bytes; `None` when a key is
/// not UTF-8.
fn write_members<'n>(
    out: &mut String,
    members: &[(&[u8], &RawValue)],
    mut new: impl FnMut(&[u8], &RawValue) -> Option<&'n str>,
) -> Option<()> {
    for (i, (key, raw)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(std::str::from_utf8(key).ok()?);
        out.push_str("\":");
        out.push_str(new(key, raw).unwrap_or(raw.get()));
    }
    Some(())
}

/// A block's JSON with one member's value (`member`, a slice of the block's own text) replaced
/// by `json`; every other byte kept. The block unchanged when `member` is not inside it.
fn with_member(block: &RawValue, member: &RawValue, json: &str) -> String {
    let (whole, part) = (block.get(), member.get());
    let start = (part.as_ptr() as usize).wrapping_sub(whole.as_ptr() as usize);
    match whole.get(start..start.saturating_add(part.len())) {
        Some(inside) if std::ptr::eq(inside.as_ptr(), part.as_ptr()) => {
            format!("{}{json}{}", &whole[..start], &whole[start + part.len()..])
        }
        _ => whole.to_string(),
    }
}

/// A raw JSON string's exact characters (WTF-8: a lone surrogate stays one, [`shake_plumbing::js`]).
fn exact_text(raw: Option<&RawValue>) -> Option<Cow<'_, [u8]>> {
    shake_plumbing::js::string_wtf8(raw?.get())
}

/// Replaces the block regions of one text (block `block`) with their placeholders. Spans are
/// found in `text`; they are cut from `exact`, the same text with its lone surrogates kept (at
/// the same byte offsets), so every character a fold keeps keeps its exact bytes.
fn replace_spans(text: &str, exact: Option<&[u8]>, items: &[&Item], block: Option<usize>) -> Vec<u8> {
    let mut spans: Vec<(usize, usize, String)> = items
        .iter()
        .filter(|it| it.kind == RegionKind::Block && it.block == block)
        .filter_map(|it| Some((it.at?.0, it.at?.1, it.placeholder()?)))
        .filter(|(a, b, _)| text.get(*a..*b).is_some())
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut out = exact.filter(|e| e.len() == text.len()).unwrap_or(text.as_bytes()).to_vec();
    let mut limit = usize::MAX;
    for (a, b, ph) in spans {
        if b <= limit {
            out.splice(a..b, ph.bytes());
            limit = a;
        }
    }
    out
}

/// A block's JSON with its `text` (WTF-8) replaced; every other key keeps its place and exact
/// bytes.
fn with_text(raw_block: &RawValue, text: &[u8]) -> String {
    if let Some(json) = with_text_plain(raw_block, text) {
        return json;
    }
    match RawObject::parse(raw_block.get()) {
        Some(mut block) => {
            block.set("text", raw(string_json(text)));
            block.to_json()
        }
        None => format!("{{\"type\":\"text\",\"text\":{}}}", string_json(text)),
    }
}

/// [`with_text`] for a block whose keys hold no escape and come once (as pi writes every
/// block): its members written back as they are walked, which is what [`RawObject`] writes for
/// it (a plain key is its own JSON), without serde_json building the object again (half of a
/// fold's composing, on many small results). `None` for any other block.
fn with_text_plain(raw_block: &RawValue, text: &[u8]) -> Option<String> {
    let members: Vec<(&[u8], &RawValue)> = trusted::members(raw_block)?.collect::<Option<_>>()?;
    if members.iter().enumerate().any(|(i, (key, _))| members[..i].iter().any(|(k, _)| k == key)) {
        return None;
    }
    let value = string_json(text);
    let mut out = String::with_capacity(raw_block.get().len() + value.len());
    out.push('{');
    let mut set = false;
    write_members(&mut out, &members, |key, _| {
        set |= key == b"text";
        (key == b"text").then_some(value.as_str())
    })?;
    if !set {
        if !members.is_empty() {
            out.push(',');
        }
        out.push_str("\"text\":");
        out.push_str(&value);
    }
    out.push('}');
    Some(out)
}

/// Groups regions by target, keeping first-seen order.
pub fn by_target<'i>(items: &'i [Item]) -> Vec<(&'i str, Vec<&'i Item<'i>>)> {
    let mut order: Vec<&str> = Vec::new();
    let mut map: HashMap<&str, Vec<&Item>, foldhash::fast::RandomState> = HashMap::default();
    for it in items {
        if !map.contains_key(&*it.target) {
            order.push(&it.target);
        }
        map.entry(&it.target).or_default().push(it);
    }
    order.into_iter().map(|t| (t, map.remove(t).unwrap_or_default())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(kind: RegionKind, block: Option<usize>, at: Option<(usize, usize)>) -> Item<'static> {
        Item { target: "t".into(), index: 0, kind, label: "x".into(), tokens: 5, block, at, log: "", way_back: None }
    }

    fn parse(r: &RawValue) -> Content<'_> {
        shake_plumbing::hosts::named("pi").unwrap().parse_content(Some(r))
    }

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn tool_result_keeps_images_and_other_keys() {
        let r = raw(
            r#"[{"type":"text","text":"a"},{"type":"image","data":"QQ==","mimeType":"image/png"},{"type":"text","text":"b"}]"#,
        );
        let c = parse(&r);
        let out = compose(&c, &r, &[&item(RegionKind::ToolResult, None, None)]);
        assert_eq!(
            out.get(),
            r#"[{"type":"text","text":"[x output omitted (~5 tokens)]"},{"type":"image","data":"QQ==","mimeType":"image/png"}]"#
        );
    }

    #[test]
    fn blocks_thinking_and_images_compose() {
        let r = raw(
            r#"[{"type":"thinking","thinking":"hm","thinkingSignature":"s"},{"type":"text","text":"p\n```\nc\n```\nq","textSignature":"z","n":1.0},{"type":"image","data":"","mimeType":"image/png"}]"#,
        );
        let c = parse(&r);
        let items = [
            item(RegionKind::Thinking, Some(0), None),
            item(RegionKind::Block, Some(1), Some((2, 11))),
            item(RegionKind::Image, Some(2), None),
        ];
        let refs: Vec<&Item> = items.iter().collect();
        assert_eq!(
            compose(&c, &r, &refs).get(),
            r#"[{"type":"text","text":"p\n[x block omitted (~5 tokens)]\nq","textSignature":"z","n":1.0},{"type":"text","text":"[x omitted (~5 tokens)]"}]"#
        );
        assert_eq!(compose(&c, &r, &[]).get(), r.get());
    }

    /// A block walked member by member is written as the object serde_json reads: the same
    /// bytes, whatever its spacing, keys and `text`.
    #[test]
    fn plain_blocks_are_written_as_objects_are() {
        let blocks = [
            r#"{"type":"text","text":"a\nb","textSignature":"z"}"#,
            r#" { "type" : "text" , "n" : [ 1 , {"x":"}"} ] } "#,
            r#"{"text":1,"type":"text"}"#,
            r#"{"type":"text","text":"x","é":"\u00e9"}"#,
            "{}",
        ];
        for block in blocks {
            let r = raw(block);
            let mut object = RawObject::parse(r.get()).unwrap();
            object.set("text", shake_plumbing::js::json::raw(string_json(b"new\n\"t\"")));
            assert_eq!(with_text_plain(&r, b"new\n\"t\"").as_deref(), Some(object.to_json().as_str()), "{block}");
        }
        for other in [r#"{"t\u0065xt":"a","text":"b"}"#, r#"{"text":"a","text":"b"}"#, "[1]"] {
            assert_eq!(with_text_plain(&raw(other), b"x"), None, "{other}");
        }
    }

    #[test]
    fn string_content_stays_a_string() {
        let r = raw(r#""a <b>\n<t>\nx\n</t>""#);
        let c = parse(&r);
        let out = compose(&c, &r, &[&item(RegionKind::Block, None, Some((6, 16)))]);
        assert_eq!(out.get(), r#""a <b>\n[x block omitted (~5 tokens)]""#);
    }
}
