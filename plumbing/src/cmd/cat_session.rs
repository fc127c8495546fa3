//! `shake cat-session`: a session file's bytes as the store holds them, byte for byte.

use std::io::Write;
use std::path::Path;

use crate::store::{SessionInfo, Store};
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
        find(&store.sessions()?, &args.session)?.version
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

/// Finds the one imported session whose id starts with `prefix`.
pub fn find<'a>(sessions: &'a [SessionInfo], prefix: &str) -> Result<&'a SessionInfo> {
    let hits: Vec<&SessionInfo> =
        sessions.iter().filter(|s| s.session_id.as_deref().is_some_and(|id| id.starts_with(prefix))).collect();
    match hits.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::user(format!("no session file or imported session id {prefix:?}"))
            .hint("name the session file, or run shake import first")),
        many => {
            let paths: Vec<String> = many.iter().map(|s| crate::output::path(&s.path).into_owned()).collect();
            Err(Error::user(format!("session id {prefix:?} matches {} imported files", many.len()))
                .hint(format!("name one of the files: {}", paths.join(", "))))
        }
    }
}
