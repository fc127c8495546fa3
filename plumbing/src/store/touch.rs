//! Implicit import: every command that reads a session file brings it into the store first (one
//! `stat` when unchanged), so a user never runs `shake import`. The store is a cache of the
//! session files, never a reason to fail: a store that cannot be opened or written is reported
//! once per process and the command goes on.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use std::fmt::Display;

use crate::host::error::HostError;
use crate::host::SessionFile;
use crate::Context;

use super::import::ImportError;
use super::{ImportReport, Store};

static WARNED: AtomicBool = AtomicBool::new(false);

/// Imports `path` into the context's store; on failure warns (once per process) and returns
/// `None`.
pub fn import(ctx: &Context, path: &Path) -> Option<ImportReport> {
    reported(ctx, |store| store.import_file(path, ctx.host))
}

/// [`import`] of a file the command has read already ([`Store::import_read`]: a whole read
/// uses its bytes when the file did not change since).
pub fn import_read(ctx: &Context, file: &SessionFile) -> Option<ImportReport> {
    reported(ctx, |store| store.import_read(file, ctx.host))
}

fn reported(
    ctx: &Context,
    import: impl FnOnce(&mut Store) -> Result<ImportReport, ImportError>,
) -> Option<ImportReport> {
    match Store::open(ctx).map_err(ImportError::from).and_then(|mut store| import(&mut store)) {
        Ok(report) => Some(report),
        Err(e) => {
            warn_once(ctx, &reason(&e));
            None
        }
    }
}

/// What the warning says of an import's failure: its whole source chain, as a command says it;
/// a host's refusal in the host's words alone.
fn reason(e: &ImportError) -> String {
    match e {
        ImportError::Host(HostError::Refused { message, .. }) => message.clone(),
        e => crate::output::chain(e),
    }
}

/// Warns about a store failure the first time one happens in this process; `reason` says
/// what failed.
pub fn warn_once(ctx: &Context, reason: &dyn Display) {
    if !WARNED.swap(true, Ordering::Relaxed) {
        ctx.warn(format_args!("store {} not updated: {reason}; going on without it", ctx.store_dir.display()));
    }
}
