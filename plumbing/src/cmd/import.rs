//! `shake import`: bring session files into the store, incrementally and idempotently.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::store::{ImportReport, Store};
use crate::{Context, Error, Result};

/// Import session files of every host into the store (only what changed since the last import)
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// Session files, or folders to walk for *.jsonl files; default: every host's sessions folder (pi's, oh-my-pi's, Claude Code's)
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print JSON: {"files":[{"path","session","entries","newObjects","bytes","unchanged","rewritten","version","warnings":[{"line","message"}]}]}
    #[arg(long)]
    pub json: bool,
}

/// Below this many files, no progress line is drawn.
const PROGRESS_MIN_FILES: usize = 200;

/// Runs `shake import`.
pub fn run(ctx: &Context, args: &ImportArgs, out: &mut dyn Write) -> Result {
    // By default, every host's main sessions root.
    let roots = match args.paths.is_empty() {
        true => crate::hosts::HOSTS.iter().filter_map(|h| h.session_roots(ctx).into_iter().next()).collect(),
        false => args.paths.clone(),
    };
    let mut files = Vec::new();
    for root in &roots {
        collect(root, !args.paths.is_empty(), &mut files)?;
    }
    files.dedup();
    let mut store = Store::open(ctx)?;
    let show = std::io::stderr().is_terminal() && files.len() >= PROGRESS_MIN_FILES;
    let total = files.len();
    let mut progress = |done: usize| {
        if show && (done.is_multiple_of(50) || done == total) {
            let _ =
                write!(std::io::stderr().lock(), "\rimporting {done}/{total}{}", if done == total { "\n" } else { "" });
        }
    };
    let results = store.import_files(&files, ctx.host, &mut progress)?;
    // 1 when a file failed, 3 when one failed on a corrupt store (the others are imported).
    let mut code = 0;
    let mut rows = Vec::new();
    for result in results {
        match result {
            Ok(report) => {
                for w in &report.warnings {
                    ctx.warn(format_args!("{}:{}: {}", crate::output::path(&report.path), w.line, w.message));
                }
                if args.json {
                    rows.push(to_json(&report));
                } else {
                    writeln!(out, "{}", line(&report))?;
                }
            }
            Err(e) => {
                let e = crate::Error::from(e);
                code = code.max(if e.kind == crate::ErrorKind::Corrupt { 3 } else { 1 });
                ctx.warn(e.message);
            }
        }
    }
    if args.json {
        crate::output::write_json(out, &json!({ "files": rows }))?;
    }
    Ok(code)
}

/// Adds `root` (a file) or the `*.jsonl` files under it (a folder), sorted. A missing default
/// folder is no error: pi has simply not run yet.
fn collect(root: &Path, named: bool, files: &mut Vec<PathBuf>) -> Result<()> {
    if root.is_file() {
        files.push(root.to_path_buf());
        return Ok(());
    }
    if !root.is_dir() {
        return match named {
            true => Err(Error::user(format!("no such file or folder: {}", root.display()))),
            false => Ok(()),
        };
    }
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.map_err(|e| Error::user(format!("cannot walk {}: {e}", root.display())))?;
        if entry.file_type().is_file() && entry.path().extension().is_some_and(|x| x == "jsonl") {
            files.push(entry.into_path());
        }
    }
    Ok(())
}

fn line(r: &ImportReport) -> String {
    let path = crate::output::path(&r.path);
    match r.unchanged {
        true => format!("unchanged {path}: {} entries", r.entries),
        false => format!(
            "{} {path}: {} entries, {} new objects, {} warnings",
            if r.rewritten { "rewritten" } else { "imported" },
            r.entries,
            r.new_objects,
            r.warnings.len()
        ),
    }
}

fn to_json(r: &ImportReport) -> serde_json::Value {
    json!({
        "path": r.path.to_string_lossy(),
        "session": r.session_id,
        "entries": r.entries,
        "newObjects": r.new_objects,
        "bytes": r.bytes,
        "unchanged": r.unchanged,
        "rewritten": r.rewritten,
        "version": r.version.to_hex(),
        "warnings": r.warnings.iter().map(|w| json!({"line": w.line, "message": w.message})).collect::<Vec<_>>(),
    })
}
