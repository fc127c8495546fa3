//! The context the model sees at one leaf, format-neutral: the path, the context list (what the
//! host sends, compaction-aware), one [`Unit`] per context entry (role, fold target, tool,
//! tombstone, omitted), the tool calls in it, and the host's own reading behind [`HostView`](super::HostView).

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::Value;

use super::model::Pieces;
use super::model::{Content, Role, Tool};
use super::session::Session;
use super::{Host, HostView};

/// Entry index → its position in a context list, for every entry of the session (a table, not
/// a hash map: every unit, fold and estimate looks positions up). The host's side of a view
/// keeps it ([`HostView::positions`](super::HostView::positions)), reading its own per-position
/// data by it, and the view reads it there: not a second table.
pub struct Positions(Vec<u32>);

impl Positions {
    /// [`Positions::get`]'s mark for an entry not in the context.
    const NOT_IN_CONTEXT: u32 = u32::MAX;

    /// The positions of `context`'s entries in a session of `entries` entries (positions fit 32
    /// bits: a session has at most `u32::MAX` lines).
    pub(crate) fn new(context: &[usize], entries: usize) -> Positions {
        let mut position = vec![Positions::NOT_IN_CONTEXT; entries];
        for (p, &i) in context.iter().enumerate() {
            position[i] = p as u32;
        }
        Positions(position)
    }

    /// Entry `index`'s position in the context list, if it is there.
    pub fn get(&self, index: usize) -> Option<usize> {
        self.0.get(index).filter(|&&p| p != Positions::NOT_IN_CONTEXT).map(|&p| p as usize)
    }
}

/// The model-visible content of one context entry after edits.
#[derive(Clone, Copy, Debug)]
pub enum Projected<'a> {
    /// No edit applies: the entry's own content.
    Raw,
    /// An edit removes the entry from the context (pi: `replacement: null`).
    Omitted,
    /// An edit's content replaces the entry's (raw JSON; `None` when the edit has no usable
    /// content).
    Replaced(Option<&'a RawValue>),
}

/// One entry of the context, as the engine needs to know it.
#[derive(Clone, Debug)]
pub struct Unit<'a> {
    /// The entry's index in the session.
    pub index: usize,
    /// Who speaks (for entries that give no message, [`Role::Other`]).
    pub role: Role,
    /// The stable id a fold names this entry by, when the host lets a fold replace its content
    /// (pi: the entry id of a user, assistant or tool-result message or a custom message; Claude
    /// Code: the tool call's id).
    pub target: Option<Target<'a>>,
    /// For a tool result: the tool, the call's id and the call's arguments (boxed: most units
    /// are not tool results, and a unit is held per context position).
    pub tool: Option<Box<Tool<'a>>>,
    /// The content is already a placeholder the host wrote, never folded again.
    pub tombstone: bool,
    /// The host leaves it out of what the model sees.
    pub omitted: bool,
    /// The edit that wins for it, as an entry index, [`NO_EDIT`] for none ([`Unit::edit`]): 32
    /// bits without an `Option`'s tag, as a session has fewer than `u32::MAX` lines.
    pub(crate) edit: u32,
}

// A view holds one per context position (it was 120 bytes with the tool inline, 64 with a
// `usize` edit, 56 with an owned target and an `Option` edit); not to grow unnoticed.
const _: () = assert!(std::mem::size_of::<Unit>() <= 40);

/// [`Unit::edit`] when no edit wins. Entry indexes are below it: a session has at most
/// `u32::MAX` lines ([`super::file::MAX_LINES`]).
pub(crate) const NO_EDIT: u32 = u32::MAX;

impl Unit<'_> {
    /// The edit that wins for this entry, as an entry index.
    pub fn edit(&self) -> Option<usize> {
        (self.edit != NO_EDIT).then_some(self.edit as usize)
    }
}

/// The id a fold names an entry by ([`Unit::target`]): borrowed from the session, which holds it
/// already (an owned copy per unit was 24 bytes of a unit's 56). Read as a `&str` through
/// `Deref` (`unit.target.as_deref()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target<'a>(pub &'a str);

impl std::ops::Deref for Target<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        self.0
    }
}

/// A tool call in the context: its id, the tool's name and its raw arguments.
#[derive(Clone, Debug)]
pub struct Call<'a> {
    /// The call's id.
    pub id: Cow<'a, str>,
    /// The tool's name.
    pub name: Cow<'a, str>,
    /// The raw arguments.
    pub arguments: Option<&'a RawValue>,
}

/// The context at one leaf.
pub struct View<'s, 'a> {
    /// The session viewed.
    pub session: &'s Session<'a>,
    /// The leaf (index into entries); `None` for the empty leaf.
    pub leaf: Option<usize>,
    /// The root→leaf path.
    pub path: Vec<usize>,
    /// The entries the host sends, in order (pi's `buildContextEntries`).
    pub context: Vec<usize>,
    /// One unit per context position.
    pub units: Vec<Unit<'s>>,
    /// Every tool call in the context, in order.
    pub calls: Vec<Call<'s>>,
    /// The host's own projection (a trait object: this module names no host).
    data: Box<dyn HostView<'s> + 's>,
}

impl<'s, 'a> View<'s, 'a> {
    /// The context the host sends at `leaf` (an entry index; `None` is the empty leaf).
    pub fn at(session: &'s Session<'a>, leaf: Option<usize>) -> super::error::Result<View<'s, 'a>> {
        session.data.view(session, leaf)
    }

    /// [`View::at`] for one of many leaves of a session: the host may keep what it reads of
    /// each entry for the session's other shared views, so projecting every leaf (`audit
    /// rewind`, stranded folds) reads each entry once, not once per leaf.
    pub fn shared(session: &'s Session<'a>, leaf: Option<usize>) -> super::error::Result<View<'s, 'a>> {
        session.data.view_shared(session, leaf)
    }

    /// Assembles a view (called by the host modules).
    pub(crate) fn new(
        session: &'s Session<'a>,
        leaf: Option<usize>,
        path: Vec<usize>,
        context: Vec<usize>,
        units: Vec<Unit<'s>>,
        calls: Vec<Call<'s>>,
        data: Box<dyn HostView<'s> + 's>,
    ) -> View<'s, 'a> {
        View { session, leaf, path, context, units, calls, data }
    }

    /// The host of the session.
    pub fn host(&self) -> &'static dyn Host {
        self.session.host()
    }

    /// Returns entry `index`'s position in the context list, if it is there.
    pub fn position(&self, index: usize) -> Option<usize> {
        self.data.positions().get(index)
    }

    /// Returns the unit of entry `index`, if it is in the context.
    pub fn unit(&self, index: usize) -> Option<&Unit<'s>> {
        self.position(index).map(|p| &self.units[p])
    }

    /// Returns the edit that wins for entry `index`, as an entry index.
    pub fn edit_of(&self, index: usize) -> Option<usize> {
        self.unit(index).and_then(Unit::edit)
    }

    /// What the model sees of entry `index` (which must be in the context).
    pub fn projected(&self, index: usize) -> Projected<'s> {
        self.data.projected(index)
    }

    /// The content the model sees for a foldable entry (the winning edit's, else its own).
    pub fn content(&self, index: usize) -> Option<Content<'s>> {
        self.data.content(index)
    }

    /// A foldable entry's own content, as written.
    pub fn own_content(&self, index: usize) -> Option<&'s RawValue> {
        self.data.own_content(index).unwrap_or_else(|| self.session.own_content(index))
    }

    /// The target of entry `index` when it is an edit.
    pub fn edit_target(&self, index: usize) -> Option<Cow<'s, str>> {
        self.data.edit_target(index)
    }

    /// The content edit `edit` puts in place of its target's (`None`: omitted, or no content).
    pub fn replacement(&self, edit: usize) -> Option<&'s RawValue> {
        self.data.replacement(edit)
    }

    /// Parses raw content with the session's host.
    pub fn parse_content<'r>(&self, raw: Option<&'r RawValue>) -> Content<'r> {
        self.host().parse_content(raw)
    }

    /// Feeds the pieces the model sees of context position `pos`.
    pub fn pieces(&self, pos: usize, sink: &mut dyn Pieces) {
        self.data.pieces(pos, self.context[pos], sink)
    }

    /// Feeds the pieces foldable entry `index` would give with `content` in place of its own.
    pub fn pieces_with(&self, index: usize, content: &Content<'_>, sink: &mut dyn Pieces) {
        self.data.pieces_with(index, content, sink)
    }

    /// The messages context position `pos` gives the model, as the host's own JSON.
    pub fn messages_json(&self, pos: usize) -> Vec<Value> {
        self.data.messages_json(pos, self.context[pos])
    }

    /// The original content of entry `index` when it is a placeholder the host's fork wrote
    /// and the saved original is still there, byte for byte.
    pub fn original(&self, index: usize) -> Option<Box<RawValue>> {
        self.data.original(index)
    }

    /// The content the host writes in place of tool result `index`'s whole text, when it has a
    /// placeholder of its own, saying `why` when the fold says why (a superseded read).
    pub fn own_placeholder(&self, index: usize, why: Option<&str>) -> Option<Box<RawValue>> {
        self.data.own_placeholder(index, why)
    }

    /// How the model gets back the arguments of the tool call in block `block` of entry
    /// `index` once folded, when the host keeps them itself ([`super::HostView::input_way_back`]).
    pub fn input_way_back(&self, index: usize, block: usize) -> Option<String> {
        self.data.input_way_back(index, block)
    }

    /// What the host keeps to follow rows appended after this context, the view being at its
    /// own leaf; `ids` is given every id of the file a new row must not reuse.
    pub fn tail(&self, ids: &mut dyn FnMut(&str)) -> Option<super::Tail> {
        self.data.tail(self, ids)
    }

    /// The whole context as the host's own JSON.
    pub fn to_json(&self) -> Value {
        self.data.to_json(&self.context)
    }

    /// Writes the whole context as the host itself would write it, byte for byte (`shake
    /// project`).
    pub fn write_json_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.data.write_json_text(&self.context, out)
    }
}
