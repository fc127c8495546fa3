//! `shake grep PATTERN`: search every stored session (every file shake imported, whichever
//! host wrote it) with ripgrep's engine, in the text a person reads: message text, tool input
//! and tool output, JSON escapes decoded (`docs/search.md`). Exit 0 when something matched, 1
//! when nothing did, 2 when the search could not run (3 a corrupt store, 4 the system), as grep.

use std::io::Write;
use std::path::Path;

use serde_json::json;
use shake_plumbing::hosts::short_path;
use shake_plumbing::output::{write_json, write_record, RecordArgs};
use shake_plumbing::remote;
use shake_plumbing::search::grep::{self, Hit, How};
use shake_plumbing::search::{self, Entries, Readable, Who};
use shake_plumbing::store::{SessionInfo, Store};
use shake_plumbing::{Context, Error, Result};

use crate::render::Paint;

/// Search every stored session's text (messages, tool input, tool output) with ripgrep's engine
#[derive(clap::Args, Debug)]
#[command(mut_arg("json", |a| a.help(r#"Print JSON, one object per matching line: {"host","session","path","machine","entry","line","role","timestamp","text","spans"}; machine: the machine a fetched session came from, else null"#)))]
pub struct GrepArgs {
    /// A regular expression (ripgrep's syntax), or a plain string with -F
    pub pattern: String,
    /// Only sessions whose id starts with this, or whose file's path (full, or as shake prints it) does, or <machine>/<session> for a fetched one; repeat for more
    #[arg(long, value_name = "SESSION")]
    pub session: Vec<String>,
    /// Only lines of entries by this role: user, assistant (its text, thinking and tool input), tool (tool output), other; repeat for more
    #[arg(long, value_enum, value_name = "ROLE")]
    pub role: Vec<Who>,
    /// Only entries written at or after this time (ISO 8601: 2026-12-01, 2026-12-01T13:00Z)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub since: Option<i64>,
    /// Only entries written before this time (ISO 8601)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub until: Option<i64>,
    /// Case does not matter
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Case does not matter unless the pattern holds an upper-case letter
    #[arg(short = 'S', long)]
    pub smart_case: bool,
    /// The pattern is a plain string, not a regular expression
    #[arg(short = 'F', long)]
    pub fixed_strings: bool,
    /// Only whole words match
    #[arg(short = 'w', long)]
    pub word_regexp: bool,
    #[command(flatten)]
    pub output: RecordArgs,
}

fn parse_time(s: &str) -> std::result::Result<i64, String> {
    shake_plumbing::time::parse_iso_millis(s).ok_or_else(|| format!("not an ISO 8601 time: {s:?}"))
}

/// One matching line, ready to print.
struct Row {
    hit: Hit,
    entry: search::Entry,
}

/// One session's matches.
struct Found {
    host: Option<&'static str>,
    rows: Vec<Row>,
}

/// Runs `shake grep`.
pub fn run(ctx: &Context, args: &GrepArgs, out: &mut dyn Write) -> Result {
    search_all(ctx, args, out).map_err(Error::trouble)
}

fn search_all(ctx: &Context, args: &GrepArgs, out: &mut dyn Write) -> Result {
    let how = How {
        ignore_case: args.ignore_case,
        smart_case: args.smart_case,
        fixed: args.fixed_strings,
        word: args.word_regexp,
    };
    let matcher = grep::matcher(&args.pattern, how)?;
    let store = Store::open(ctx)?;
    let sessions: Vec<SessionInfo> = store.sessions()?.into_iter().filter(|s| chosen(ctx, &args.session, s)).collect();
    let paint = Paint::new(ctx);
    let mut found = false;
    let mut failed: Result<()> = Ok(());
    let work = |info: &SessionInfo| -> Result<Option<Found>> {
        let raw = search::session_bytes(&store, info)?;
        let readable = Readable::of(&raw);
        let mut hits = grep::search(&matcher, &readable, None);
        // A line an entry holds twice is told once (Claude Code keeps a tool's output in the
        // message and again in `toolUseResult`).
        let mut seen = std::collections::HashSet::new();
        hits.retain(|h| seen.insert((h.line, h.text.clone())));
        if hits.is_empty() {
            return Ok(None);
        }
        drop(readable);
        let lines: Vec<u32> = hits.iter().map(|h| h.line).collect();
        let entries = Entries::read(&info.path, raw, &lines);
        if ctx.host.is_some() && entries.host != ctx.host {
            return Ok(None);
        }
        let rows: Vec<Row> = hits
            .into_iter()
            .map(|hit| Row { entry: entries.at(hit.line), hit })
            .filter(|row| kept(args, &row.entry))
            .collect();
        Ok(Some(Found { host: entries.host.map(|h| h.as_str()), rows }))
    };
    search::each_in_order(&sessions, search::threads(), work, |i, result| {
        let written = match result {
            Ok(None) => Ok(()),
            Ok(Some(f)) => {
                found |= !f.rows.is_empty();
                print(ctx, args, &paint, &sessions[i], &f, out)
            }
            Err(e) => {
                failed = Err(e);
                return false;
            }
        };
        match written {
            Ok(()) => true,
            Err(e) => {
                failed = Err(e.into());
                false
            }
        }
    });
    failed?;
    Ok(if found { 0 } else { 1 })
}

/// Tells whether `--session` takes this session (no `--session`: every one).
fn chosen(ctx: &Context, wanted: &[String], s: &SessionInfo) -> bool {
    if wanted.is_empty() {
        return true;
    }
    let name = shown(ctx, &s.path, s.session_id.as_deref(), remote::machine_of(&ctx.store_dir, &s.path).as_deref());
    wanted.iter().any(|w| {
        s.session_id.as_deref().is_some_and(|id| id.starts_with(w.as_str()))
            || s.path.to_string_lossy().starts_with(w.as_str())
            || name.starts_with(w.as_str())
    })
}

/// What a person calls the session: its path as shake prints it, or `<machine>/<session>` for
/// one fetched from another machine (the name every read command takes).
/// `machine`: `remote::machine_of` for `path`, found once by the caller (who prints it in `--json` too).
pub(crate) fn shown(ctx: &Context, path: &Path, session: Option<&str>, machine: Option<&str>) -> String {
    match (machine, session) {
        (Some(machine), Some(id)) => format!("{machine}/{id}"),
        _ => short_path(ctx, path),
    }
}

/// Tells whether `--role`, `--since` and `--until` keep this entry (an entry without a time is
/// left out when a time is asked for).
fn kept(args: &GrepArgs, entry: &search::Entry) -> bool {
    let role = args.role.is_empty() || entry.who.is_some_and(|w| args.role.contains(&w));
    let time = || entry.timestamp.as_deref().and_then(shake_plumbing::time::parse_iso_millis);
    let since = args.since.is_none_or(|s| time().is_some_and(|t| t >= s));
    let until = args.until.is_none_or(|u| time().is_some_and(|t| t < u));
    role && since && until
}

/// Prints one session's matching lines as `--json`, records or text for people.
fn print(
    ctx: &Context,
    args: &GrepArgs,
    paint: &Paint,
    info: &SessionInfo,
    found: &Found,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let host = found.host.unwrap_or("-");
    let sid = info.session_id.as_deref().unwrap_or("-");
    let machine = remote::machine_of(&ctx.store_dir, &info.path);
    let name = shown(ctx, &info.path, info.session_id.as_deref(), machine.as_deref());
    for Row { hit, entry } in &found.rows {
        let text = String::from_utf8_lossy(&hit.text);
        let role = entry.who.unwrap_or(Who::Other).as_str();
        if args.output.json {
            write_json(
                out,
                &json!({
                    "host": found.host, "session": info.session_id, "path": info.path.to_string_lossy(),
                    "machine": machine, "entry": entry.id, "line": hit.line, "role": role, "timestamp": entry.timestamp,
                    "text": text, "spans": hit.spans,
                }),
            )?;
        } else if args.output.records() {
            let line = hit.line.to_string();
            let id = entry.id.as_deref().unwrap_or("-");
            write_record(out, &[host, sid, &info.path.to_string_lossy(), id, &line, role, &text], args.output.nul)?;
        } else {
            let id = entry.id.clone().unwrap_or_else(|| format!("line {}", hit.line));
            let place = paint.dim(&format!("{id} {role}"));
            let text = coloured(paint, &hit.text, &hit.spans);
            writeln!(out, "{} {}:{place}: {text}", paint.dim(host), paint.strong(&name))?;
        }
    }
    Ok(())
}

/// The line for a terminal: control characters (a session may hold any) shown as `^X`, never
/// sent, and the matches in bold.
fn coloured(paint: &Paint, text: &[u8], spans: &[(usize, usize)]) -> String {
    let shown = |b: &[u8]| -> String {
        String::from_utf8_lossy(b)
            .chars()
            .map(|c| match c {
                '\t' => "\t".to_string(),
                c if c.is_control() && (c as u32) < 0x20 => format!("^{}", char::from(c as u8 + 0x40)),
                c if c.is_control() => "\u{fffd}".to_string(),
                c => c.to_string(),
            })
            .collect()
    };
    let mut line = String::new();
    let mut at = 0;
    for &(start, end) in spans {
        if start < at || end > text.len() {
            continue;
        }
        line.push_str(&shown(&text[at..start]));
        line.push_str(&paint.matched(&shown(&text[start..end])));
        at = end;
    }
    line.push_str(&shown(&text[at..]));
    line
}
