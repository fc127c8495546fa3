//! `shake cat-session`: a session file's bytes as the store holds them, byte for byte.

use std::io::Write;
use std::path::Path;

use crate::store::Store;
use crate::{Context, Error, Result};

/// Print a session file's bytes as imported (a path is imported first)
#[derive(clap::Args, Debug)]
pub struct CatSessionArgs {
    /// Session file, or session id (or unique prefix) of an imported session
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// Print version N of the file (1 = first import) instead of the latest
    #[arg(long, value_name = "N")]
    pub version: Option<usize>,
}

/// Runs `shake cat-session`.
pub fn run(ctx: &Context, args: &CatSessionArgs, out: &mut dyn Write) -> Result {
    let mut store = Store::open(ctx)?;
    let latest = if Path::new(&args.session).is_file() {
        store.import_file(Path::new(&args.session), ctx.host)?.version
    } else {
        crate::store::session_by_id(&store.sessions()?, &args.session)?.version
    };
    let id = match args.version {
        None => latest,
        Some(n) => {
            let chain = store.version_chain(&latest)?;
            *n.checked_sub(1)
                .and_then(|i| chain.get(i))
                .ok_or_else(|| Error::user(format!("{}: no version {n} (it has {})", args.session, chain.len())))?
        }
    };
    out.write_all(&store.version_bytes(&id)?)?;
    Ok(0)
}
