//! `shake rev-parse`: names the leaf a revision resolves to, by node id and pi entry id; and the
//! helpers the tree commands (`ls-entries`, `ls-leaves`) share: chain node ids, leaf paths, and
//! the quoting of free-text fields in line output (`docs/revisions.md`, `docs/plumbing.md`).

use std::borrow::Cow;
use std::io::Write;

use serde_json::json;

use crate::host::Session;
use crate::id::ObjectId;
use crate::nodes::{entry_object, NodeIds};
use crate::rev::{Rev, RevArgs};
use crate::{Context, Error, Result};

/// Print the node id and pi entry id of the leaf a revision names
#[derive(clap::Args, Debug)]
pub struct RevParseArgs {
    #[command(flatten)]
    pub rev: RevArgs,
    /// Print JSON: {"file","leafId","line","node","object"}
    #[arg(long)]
    pub json: bool,
}

/// Runs `shake rev-parse`.
pub fn run(ctx: &Context, args: &RevParseArgs, out: &mut dyn Write) -> Result {
    let (file, rev) = args.rev.load(ctx)?;
    let session = crate::host::load(&file, ctx.host)?;
    ctx.warn_session(&session);
    let (leaf, path) = leaf_path(&session, &rev)?;
    let nodes = NodeIds::new(&session).path(&path);
    let entry = &session.entries[leaf];
    let node = nodes.last().copied().unwrap_or(ObjectId::NULL);
    if args.json {
        let value = json!({
            "file": file.display(),
            "leafId": entry.id,
            "line": entry.line,
            "node": node.to_hex(),
            "object": entry_object(entry).to_hex(),
        });
        serde_json::to_writer(&mut *out, &value).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{node} {}", quote(&entry.id))?;
    }
    Ok(0)
}

/// Resolves a revision to its leaf and the root→leaf path; fails on an empty session or a cycle.
pub fn leaf_path(session: &Session<'_>, rev: &Rev) -> Result<(usize, Vec<usize>)> {
    let leaf = rev
        .leaf(session)?
        .ok_or_else(|| Error::user(format!("{}: the session has no entries, so no leaf", session.file.display())))?;
    Ok((leaf, path_of(session, leaf)?))
}

/// Returns the root→leaf path, or an error naming the entry and line where `parentId` loops.
pub fn path_of(session: &Session<'_>, leaf: usize) -> Result<Vec<usize>> {
    session.path(leaf).map_err(|cycle| {
        Error::user(format!("{}: {cycle}", session.file.display()))
            .hint("repair the parentId of one entry on the loop by hand")
    })
}

/// Quotes a free-text field (entry id, type) for line output the way git quotes paths: as is
/// when it is plain, else (control characters, `"`, `\`, or empty) in double quotes with C
/// escapes (`\t`, `\n`, `\"`, `\\`, octal).
pub fn quote(s: &str) -> Cow<'_, str> {
    let plain = !s.is_empty() && !s.chars().any(|c| c.is_ascii_control() || c == '"' || c == '\\');
    if plain {
        return Cow::Borrowed(s);
    }
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\t' => q.push_str("\\t"),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            c if c.is_ascii_control() => q.push_str(&format!("\\{:03o}", c as u8)),
            c => q.push(c),
        }
    }
    q.push('"');
    Cow::Owned(q)
}

/// Writes one record of line output: fields separated by TAB and ended by a newline, each
/// quoted; or with `-z`, every field verbatim and ended by NUL.
pub fn write_record(out: &mut dyn Write, fields: &[&str], nul: bool) -> std::io::Result<()> {
    if nul {
        for field in fields {
            out.write_all(field.as_bytes())?;
            out.write_all(b"\0")?;
        }
        return Ok(());
    }
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.write_all(b"\t")?;
        }
        out.write_all(quote(field).as_bytes())?;
    }
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_is_git_like() {
        assert_eq!(quote("1a2b3c4d"), "1a2b3c4d");
        assert_eq!(quote("sp ace é"), "sp ace é");
        assert_eq!(quote("a\tb\nc"), "\"a\\tb\\nc\"");
        assert_eq!(quote("\"x"), "\"\\\"x\"");
        assert_eq!(quote("back\\slash"), "\"back\\\\slash\"");
        assert_eq!(quote("\u{1}\u{7f}"), "\"\\001\\177\"");
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn records_tab_or_nul() {
        let mut out = Vec::new();
        write_record(&mut out, &["a\tb", "message", "ff"], false).unwrap();
        write_record(&mut out, &["a\tb", "message", "ff"], true).unwrap();
        assert_eq!(out, b"\"a\\tb\"\tmessage\tff\na\tb\0message\0ff\0");
    }
}
