//! `shake fold --example`: the quick start's session. A real pi session ships inside the binary
//! (`tests/fixtures/pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl`); the example writes
//! a fresh private copy of it into the store's folder, so nothing of the user's, and not pi's own
//! session folders, is touched, and the commands that follow name it by its session id.

use std::path::PathBuf;

use shake_plumbing::durable::{self, FileError};
use shake_plumbing::host::SessionFile;
use shake_plumbing::Context;

/// The bundled session's bytes.
const SESSION: &[u8] = include_bytes!("../../tests/fixtures/pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl");

/// The bundled session's id (its header's), which names the copy on the command line.
pub const SESSION_ID: &str = "ffae836b";

/// Where the example's copy lives: `<store>/example/example.jsonl`.
pub fn path(ctx: &Context) -> PathBuf {
    ctx.store_dir.join("example").join("example.jsonl")
}

/// Writes a fresh copy of the bundled session at [`path`] (replacing an earlier one, folds and
/// all) and returns its path.
pub fn fresh_copy(ctx: &Context) -> Result<PathBuf, FileError> {
    let path = path(ctx);
    durable::write(&path, SESSION)?;
    // shake wrote it: the fold that follows does not warn that pi may have it open.
    shake_plumbing::own_write::record(ctx, &path);
    Ok(path)
}

/// The fresh copy a real run would write, held in memory at [`path`]'s name and written
/// nowhere: what a dry run reads, so it neither replaces the copy a fold was made on nor
/// stores a version of it.
pub fn fresh_in_memory(ctx: &Context) -> SessionFile {
    SessionFile::from_bytes(path(ctx), SESSION.to_vec())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bundled_session_has_the_documented_id() {
        let header = std::str::from_utf8(&super::SESSION[..200]).unwrap();
        assert!(header.starts_with(&format!("{{\"type\":\"session\",\"id\":\"{}", super::SESSION_ID)), "{header}");
    }
}
