//! `shake diff`: how two leaves differ, in the same session or across sessions (a fork against
//! its source): the prefix they share (equal node ids), the entries only on each side, and each
//! entry the model sees differently, with what it sees on each side (`docs/plumbing.md`).

use std::io::Write;

use serde_json::{json, Value};
use shake_plumbing::cmd::rev_parse::write_record;
use shake_plumbing::{Context, Error, Result};

use crate::leaf::{id_of, with_two_leaves, LeafView, Seen, Shared};

/// Show how two leaves differ: shared prefix, entries only on each side, what the model sees differently
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// The first leaf: SESSION[:ENTRY] (a session file or id; default entry: pi's leaf on load)
    #[arg(value_name = "REV_A")]
    pub a: String,
    /// The second leaf, in the same session or another one (a fork)
    #[arg(value_name = "REV_B")]
    pub b: String,
    /// Print JSON: {"a","b","shared","onlyA","onlyB","targets":[{"id","type","a","b"}],"same"}
    #[arg(long, conflicts_with = "nul")]
    pub json: bool,
    /// End every field with NUL and print ids verbatim
    #[arg(short = 'z', id = "nul")]
    pub nul: bool,
}

/// An entry the model sees differently at the two leaves.
struct Changed {
    id: String,
    kind: String,
    a: Option<usize>,
    b: Option<usize>,
}

/// Runs `shake diff`: exit 0 when the leaves are the same, 1 when they differ, 2 on error.
pub fn run(ctx: &Context, args: &DiffArgs, out: &mut dyn Write) -> Result {
    with_two_leaves(ctx, &args.a, &args.b, |a, b| report(a, b, args, out)).map_err(Error::trouble)
}

fn report(a: &LeafView<'_, '_>, b: &LeafView<'_, '_>, args: &DiffArgs, out: &mut dyn Write) -> Result {
    let shared = Shared::of(a, b);
    let (only_a, only_b) = (&a.path()[shared.length..], &b.path()[shared.length..]);
    let changed = changed(a, b);
    let same = only_a.is_empty() && only_b.is_empty() && changed.is_empty();
    if args.json {
        let value = json!({
            "a": a.describe(),
            "b": b.describe(),
            "shared": shared.json(),
            "onlyA": entries_json(a, only_a, shared.length),
            "onlyB": entries_json(b, only_b, shared.length),
            "targets": changed
                .iter()
                .map(|c| json!({"id": c.id, "type": c.kind, "a": side_json(a, c.a), "b": side_json(b, c.b)}))
                .collect::<Vec<_>>(),
            "same": same,
        });
        serde_json::to_writer(&mut *out, &value).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        shared.write_record(out, args.nul)?;
        for (mark, side, only) in [("<", a, only_a), (">", b, only_b)] {
            for &i in only {
                let e = &side.session().entries[i];
                write_record(out, &[mark, &e.id, &e.kind, &e.line.to_string()], args.nul)?;
            }
        }
        for c in &changed {
            write_record(out, &["~", &c.id, seen(a, c.a).as_str(), seen(b, c.b).as_str()], args.nul)?;
        }
    }
    Ok(u8::from(!same))
}

/// The entries of either context whose messages differ, A's context order first, then B's.
fn changed(a: &LeafView<'_, '_>, b: &LeafView<'_, '_>) -> Vec<Changed> {
    let in_context = |side: &LeafView<'_, '_>, id: &str| side.session().index_of(id).filter(|&i| side.in_context(i));
    let mut out = Vec::new();
    let from_a =
        a.projection.context.iter().map(|&i| (id_of(a.session(), i), Some(i), in_context(b, id_of(a.session(), i))));
    let from_b = b.projection.context.iter().filter_map(|&j| {
        let id = id_of(b.session(), j);
        in_context(a, id).is_none().then_some((id, None, Some(j)))
    });
    for (id, ia, ib) in from_a.chain(from_b) {
        let messages = |side: &LeafView<'_, '_>, i: Option<usize>| i.map(|i| side.messages(i)).unwrap_or_default();
        if messages(a, ia) == messages(b, ib) {
            continue;
        }
        let kind = match (ia, ib) {
            (Some(i), _) => a.session().entries[i].kind.to_string(),
            (None, Some(j)) => b.session().entries[j].kind.to_string(),
            (None, None) => String::new(),
        };
        out.push(Changed { id: id.to_string(), kind, a: ia, b: ib });
    }
    out
}

fn seen(side: &LeafView<'_, '_>, index: Option<usize>) -> Seen {
    index.map_or(Seen::Absent, |i| side.seen(i))
}

/// `{"seen","regions"}` for one side of a changed entry.
fn side_json(side: &LeafView<'_, '_>, index: Option<usize>) -> Value {
    let regions = index.map(|i| side.regions_json(id_of(side.session(), i))).unwrap_or_default();
    json!({"seen": seen(side, index).as_str(), "regions": regions})
}

/// `[{"id","type","line","node"}]` for the path entries after the shared prefix.
fn entries_json(side: &LeafView<'_, '_>, only: &[usize], offset: usize) -> Vec<Value> {
    only.iter()
        .enumerate()
        .map(|(k, &i)| {
            let e = &side.session().entries[i];
            json!({"id": e.id, "type": e.kind, "line": e.line, "node": side.nodes[offset + k].to_hex()})
        })
        .collect()
}
