//! `shake diff`: how two leaves differ, in the same session or across sessions (a fork against
//! its source): the prefix they share (equal node ids), the entries only on each side, and each
//! entry the model sees differently, with what it sees on each side (`docs/plumbing.md`). Two
//! versions of an oh-my-pi file (`SESSION@N`) are compared by `crate::host_history`.

use std::io::Write;

use serde_json::{json, Value};
use shake_plumbing::hosts::short_path;
use shake_plumbing::output::{answer, json_or, table, write_record, RecordArgs};
use shake_plumbing::rev::split_version;
use shake_plumbing::tokens::cache::open_tokenizer;
use shake_plumbing::tokens::TokenizerName;
use shake_plumbing::{Context, Error, Result};

use crate::leaf::{id_of, with_two_leaves, LeafView, Seen, Shared};
use crate::render::{plural, thousands, Paint};

/// Show how two leaves differ: shared prefix, entries only on each side, what the model sees differently
#[derive(clap::Args, Debug)]
#[command(mut_arg("json", |a| a.help(r#"Print JSON: {"a","b","shared","onlyA","onlyB","targets":[{"id","type","a","b"}],"same"}"#)))]
pub struct DiffArgs {
    /// The first leaf: SESSION[:ENTRY] (a session file or id; default entry: the agent's leaf on load), or SESSION@N, version N of an oh-my-pi file
    #[arg(value_name = "REV_A")]
    pub a: String,
    /// The second leaf, in the same session or another one (a fork), or SESSION@N with REV_A a version too
    #[arg(value_name = "REV_B")]
    pub b: String,
    #[command(flatten)]
    pub output: RecordArgs,
    /// Tokenizer for the token figures of the text for people [default: Claude's own for leaf A's model when it is Claude, else o200k]
    #[arg(long, value_enum)]
    pub tokenizer: Option<TokenizerName>,
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
    match (split_version(&args.a), split_version(&args.b)) {
        (Some(a), Some(b)) => {
            return crate::host_history::diff(ctx, a, b, &args.output, out).map_err(Error::trouble);
        }
        (None, None) => {}
        _ => {
            return Err(Error::user("compare two versions (SESSION@N SESSION@M) or two leaves, not one of each")
                .hint("`shake sessions --versions` numbers a file's versions")
                .trouble())
        }
    }
    with_two_leaves(ctx, &args.a, &args.b, |a, b| report(ctx, a, b, args, out)).map_err(Error::trouble)
}

// One pair of lifetimes for both sides, as `with_two_leaves` gives them: a view is invariant
// in them (the host's reading behind it is a trait object).
fn report<'s, 'a>(
    ctx: &Context,
    a: &LeafView<'s, 'a>,
    b: &LeafView<'s, 'a>,
    args: &DiffArgs,
    out: &mut dyn Write,
) -> Result {
    let shared = Shared::of(a, b);
    let (only_a, only_b) = (&a.path()[shared.length..], &b.path()[shared.length..]);
    let changed = changed(a, b);
    let same = only_a.is_empty() && only_b.is_empty() && changed.is_empty();
    if args.output.for_people() {
        let text = human(ctx, (a, b), &shared, (only_a, only_b), &changed, args.tokenizer)?;
        return answer(Ok(u8::from(!same)), out.write_all(text.as_bytes()));
    }
    let written = json_or(
        out,
        args.output.json,
        || {
            json!({
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
            })
        },
        |out| {
            shared.write_record(out, args.output.nul)?;
            for (mark, side, only) in [("<", a, only_a), (">", b, only_b)] {
                for &i in only {
                    let e = &side.session().entries[i];
                    write_record(out, &[mark, e.id(), e.kind(), &e.line().to_string()], args.output.nul)?;
                }
            }
            for c in &changed {
                write_record(out, &["~", &c.id, seen(a, c.a).as_str(), seen(b, c.b).as_str()], args.output.nul)?;
            }
            Ok(())
        },
    );
    answer(Ok(u8::from(!same)), written)
}

/// The text for people: each leaf with its context size, the shared prefix, the entries only on
/// one side, a table of what the model sees differently, and a summary line in tokens. Counted
/// first, then written, so a closed pipe cannot change the answer.
fn human<'s, 'a>(
    ctx: &Context,
    (a, b): (&LeafView<'s, 'a>, &LeafView<'s, 'a>),
    shared: &Shared,
    (only_a, only_b): (&[usize], &[usize]),
    changed: &[Changed],
    tokenizer: Option<TokenizerName>,
) -> Result<String> {
    let paint = Paint::new(ctx);
    // One tokenizer for both sides (the summary subtracts their counts): the one chosen, else
    // the default of side A's session at its leaf.
    let tokenizer =
        Some(shake_plumbing::tokens::resolve(tokenizer, a.session(), a.projection.leaf, ctx.model.as_deref()));
    let (tok_a, tok_b) =
        (open_tokenizer(ctx, tokenizer, a.session(), None)?, open_tokenizer(ctx, tokenizer, b.session(), None)?);
    tok_a.prefetch(&a.projection);
    tok_b.prefetch(&b.projection);
    let mut out = Vec::new();
    let context =
        |side: &LeafView<'_, '_>, tok| side.projection.context.iter().map(|&i| side.tokens(i, tok)).sum::<u64>();
    for (name, side, tok) in [("A", a, &tok_a), ("B", b, &tok_b)] {
        let leaf = side.projection.leaf.map_or("(empty)".to_string(), |l| id_of(side.session(), l).to_string());
        let file = short_path(ctx, &side.session().file.path);
        writeln!(
            out,
            "{name}  {file}:{leaf}  {} on the path, ~{} tokens in context",
            plural(side.path().len(), "entry"),
            thousands(context(side, tok))
        )?;
    }
    match &shared.id {
        Some(id) => writeln!(out, "Shared: the first {} (up to {id}).", plural(shared.length, "entry"))?,
        None => writeln!(out, "Shared: nothing (the paths differ from the first entry).")?,
    }
    for (name, side, only) in [("A", a, only_a), ("B", b, only_b)] {
        let entries = &side.session().entries;
        if let (Some(&first), Some(&last)) = (only.first(), only.last()) {
            let (first, last) = (&entries[first], &entries[last]);
            writeln!(
                out,
                "Only at {name}: {}, {} (line {}) to {} (line {}).",
                plural(only.len(), "entry"),
                first.id(),
                first.line(),
                last.id(),
                last.line()
            )?;
        }
    }
    let (mut at_a, mut at_b) = (0, 0);
    let mut rows = Vec::new();
    for c in changed {
        let (ta, tb) = (c.a.map_or(0, |i| a.tokens(i, &tok_a)), c.b.map_or(0, |i| b.tokens(i, &tok_b)));
        (at_a, at_b) = (at_a + ta, at_b + tb);
        let side = |view: &LeafView<'_, '_>, i: Option<usize>, t: u64| match seen(view, i) {
            Seen::Absent => "absent".to_string(),
            s => format!("{} (~{})", s.as_str(), thousands(t)),
        };
        rows.push(vec![c.id.clone(), c.kind.clone(), side(a, c.a, ta), side(b, c.b, tb)]);
    }
    let summary = if rows.is_empty() && only_a.is_empty() && only_b.is_empty() {
        "Same leaf: the model sees the same context.".to_string()
    } else if rows.is_empty() {
        "The paths differ, but the model sees the same context at both leaves.".to_string()
    } else {
        writeln!(out, "Seen differently:")?;
        table(&mut out, &["ID", "TYPE", "A", "B"], &rows, &[])?;
        format!(
            "The model sees {} differently: ~{} tokens at A, ~{} at B. Tokenizer: {}.",
            plural(changed.len(), "entry"),
            thousands(at_a),
            thousands(at_b),
            tok_a.name
        )
    };
    writeln!(out, "{}", paint.strong(&summary))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
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
            (Some(i), _) => a.session().entries[i].kind().to_string(),
            (None, Some(j)) => b.session().entries[j].kind().to_string(),
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
    let regions = index.map(|i| side.regions_at(i)).unwrap_or_default();
    json!({"seen": seen(side, index).as_str(), "regions": regions})
}

/// `[{"id","type","line","node"}]` for the path entries after the shared prefix.
fn entries_json(side: &LeafView<'_, '_>, only: &[usize], offset: usize) -> Vec<Value> {
    only.iter()
        .enumerate()
        .map(|(k, &i)| {
            let e = &side.session().entries[i];
            json!({"id": e.id(), "type": e.kind(), "line": e.line(), "node": side.nodes[offset + k].to_hex()})
        })
        .collect()
}
