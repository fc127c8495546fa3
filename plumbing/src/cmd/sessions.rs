//! `shake sessions`: every imported session file with its size, tree and family (forks found
//! through shared node ids), and optionally each imported version.

use std::ffi::OsStr;
use std::io::Write;

use serde_json::{json, Value};

use crate::hosts::short_path;
use crate::id::ObjectId;
use crate::output::{self, write_record, write_record_os, RecordArgs};
use crate::regions::thousands;
use crate::store::{family, Store};
use crate::{Context, Result};

/// List imported sessions: file, entries, leaves, bytes, versions and family (forks)
#[derive(clap::Args, Debug)]
#[command(mut_arg("json", |a| a.help(r#"Print JSON: [{"session","path","entries","leaves","bytes","versions","version","family":[{"session","path","shared"}]}]"#)))]
pub struct SessionsArgs {
    /// Also list every imported version of each file (number, version id, bytes, how it came)
    #[arg(long)]
    pub versions: bool,
    #[command(flatten)]
    pub output: RecordArgs,
}

/// One imported version of a file.
struct VersionRow {
    id: ObjectId,
    bytes: usize,
    how: &'static str,
}

/// Runs `shake sessions`.
pub fn run(ctx: &Context, args: &SessionsArgs, out: &mut dyn Write) -> Result {
    let store = Store::open(ctx)?;
    let sessions = store.sessions()?;
    let trees = sessions.iter().map(|s| store.session_tree(s)).collect::<Result<Vec<_>, _>>()?;
    let relatives = family::families(&trees);
    let group = family_numbers(&relatives);
    let records = args.output.records();
    let mut rows = Vec::new();
    let mut table = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let versions = if args.versions { versions(&store, &s.version)? } else { Vec::new() };
        if args.output.json {
            let family: Vec<Value> = relatives[i]
                .iter()
                .map(|&(j, shared)| json!({"session": sessions[j].session_id, "path": sessions[j].path.to_string_lossy(), "shared": shared}))
                .collect();
            let mut row = json!({
                "session": s.session_id, "path": s.path.to_string_lossy(), "entries": s.entries,
                "leaves": trees[i].leaves, "bytes": s.size, "versions": s.versions, "version": s.version.to_hex(),
                "family": family,
            });
            if args.versions {
                row["history"] = versions
                    .iter()
                    .enumerate()
                    .map(|(n, v)| json!({"number": n + 1, "version": v.id.to_hex(), "bytes": v.bytes, "how": v.how}))
                    .collect();
            }
            rows.push(row);
            continue;
        }
        let numbers = [
            s.entries.to_string(),
            trees[i].leaves.to_string(),
            s.size.to_string(),
            s.versions.to_string(),
            group[i].to_string(),
        ];
        let sid = s.session_id.as_deref().unwrap_or("-");
        if !records {
            let short: String = sid.chars().take(8).collect();
            let count = |n: u64| thousands(n);
            table.push(vec![
                short,
                count(s.entries),
                count(trees[i].leaves as u64),
                count(s.size),
                count(u64::from(s.versions)),
                group[i].to_string(),
                short_path(ctx, &s.path),
            ]);
            for (n, v) in versions.iter().enumerate() {
                let what =
                    format!("version {} {} ({} bytes, {})", n + 1, v.id.short(12), thousands(v.bytes as u64), v.how);
                table.push(vec![
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    what,
                ]);
            }
            continue;
        }
        let mut fields: Vec<&OsStr> = vec![OsStr::new("session"), OsStr::new(sid)];
        fields.extend(numbers.iter().map(OsStr::new));
        fields.push(s.path.as_os_str());
        write_record_os(out, &fields, args.output.nul)?;
        for (n, v) in versions.iter().enumerate() {
            write_record(
                out,
                &["version", &(n + 1).to_string(), &v.id.to_hex(), &v.bytes.to_string(), v.how],
                args.output.nul,
            )?;
        }
    }
    if args.output.json {
        crate::output::write_json(out, &Value::Array(rows))?;
    } else if !records {
        if sessions.is_empty() {
            writeln!(out, "No sessions imported yet (shake imports every session it reads).")?;
            return Ok(0);
        }
        let header = ["SESSION", "ENTRIES", "LEAVES", "BYTES", "VERSIONS", "FAMILY", "FILE"];
        output::table(out, &header, &table, &[])?;
        let families = group.iter().max().copied().unwrap_or(0);
        let bytes: u64 = sessions.iter().map(|s| s.size).sum();
        writeln!(
            out,
            "{} session{} in {} famil{} (forks share a family), {} bytes.",
            sessions.len(),
            if sessions.len() == 1 { "" } else { "s" },
            families,
            if families == 1 { "y" } else { "ies" },
            thousands(bytes)
        )?;
    }
    Ok(0)
}

/// Numbers families 1, 2, … in the order their first member is listed.
fn family_numbers(relatives: &[Vec<(usize, usize)>]) -> Vec<usize> {
    let mut number = vec![0; relatives.len()];
    let mut next = 0;
    for start in 0..relatives.len() {
        if number[start] != 0 {
            continue;
        }
        next += 1;
        let mut todo = vec![start];
        while let Some(i) = todo.pop() {
            if number[i] == 0 {
                number[i] = next;
                todo.extend(relatives[i].iter().map(|&(j, _)| j));
            }
        }
    }
    number
}

/// Lists a file's versions, oldest first, with their sizes and whether each appended to its
/// parent or rewrote the file.
fn versions(store: &Store, latest: &ObjectId) -> Result<Vec<VersionRow>> {
    let mut rows = Vec::new();
    for id in store.version_chain(latest)? {
        let how = store.version(&id)?.how();
        rows.push(VersionRow { id, bytes: store.version_bytes(&id)?.len(), how });
    }
    Ok(rows)
}
