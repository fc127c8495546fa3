//! What shake itself last wrote to each session file: `<store>/written/<key>` (keyed as the
//! file's import state) holds the file's size and modification time right after shake's write,
//! so a write refuses "pi may have this session open" only when someone else wrote the file
//! last, never after shake's own fold, undo, export, restore or generated session. A hint, not
//! data: losing it brings back one refusal, which `--force` passes.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::durable;
use crate::store::state::state_path;
use crate::Context;

/// The record of `path` in the store (`key` as for import states: blake3 of the absolute path).
fn record_path(ctx: &Context, path: &Path) -> PathBuf {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let import_state = state_path(&ctx.store_dir, &path.to_string_lossy());
    ctx.store_dir.join("written").join(import_state.file_name().unwrap_or_default())
}

/// `<size> <mtime in ns>` of the file now; `None` when it cannot be read.
fn stamp(path: &Path) -> Option<String> {
    let meta = path.metadata().ok()?;
    let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some(format!("{} {mtime}\n", meta.len()))
}

/// Records that shake has just written `path`. A failure is ignored: the record is only a hint.
pub fn record(ctx: &Context, path: &Path) {
    let (Some(stamp), record) = (stamp(path), record_path(ctx, path)) else { return };
    let _ = durable::write_cache(&record, stamp.as_bytes());
}

/// Tells whether the last write to `path` was shake's own: its size and modification time are
/// still those recorded right after shake wrote it.
pub fn is_last(ctx: &Context, path: &Path) -> bool {
    let recorded = std::fs::read_to_string(record_path(ctx, path)).ok();
    recorded.is_some() && recorded == stamp(path)
}
