//! `shake fold --example`: the quick start's session. A real pi session ships inside the binary
//! (`tests/fixtures/pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl`); the example writes
//! a fresh private copy of it into the store's folder, so nothing of the user's, and not pi's own
//! session folders, is touched, and the commands that follow name it by its session id.

use std::path::PathBuf;

use shake_plumbing::durable;
use shake_plumbing::{Context, Result};

/// The bundled session's bytes.
const SESSION: &[u8] = include_bytes!("../../tests/fixtures/pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl");

/// The bundled session's id (its header's), which names the copy on the command line.
pub const SESSION_ID: &str = "ffae836b";

/// Writes a fresh copy of the bundled session to `<store>/example/example.jsonl` (replacing an
/// earlier one, folds and all) and returns its path.
pub fn fresh_copy(ctx: &Context) -> Result<PathBuf> {
    let dir = ctx.store_dir.join("example");
    let path = dir.join("example.jsonl");
    durable::write(&path, SESSION)?;
    // shake wrote it: the fold that follows does not warn that pi may have it open.
    crate::own_write::record(ctx, &path);
    Ok(path)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bundled_session_has_the_documented_id() {
        let header = std::str::from_utf8(&super::SESSION[..200]).unwrap();
        assert!(header.starts_with(&format!("{{\"type\":\"session\",\"id\":\"{}", super::SESSION_ID)), "{header}");
    }
}
