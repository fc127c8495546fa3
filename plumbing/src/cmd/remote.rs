//! `shake remote add|list|remove`: the remotes this store pushes to and fetches from.

use std::io::Write;

use serde_json::json;

use crate::output::json_or;
use crate::{Context, Result};

/// Add, list or remove remotes (S3, GCS, Azure, a folder); credentials stay the services' own
#[derive(clap::Args, Debug)]
pub struct RemoteArgs {
    #[command(subcommand)]
    pub action: Action,
}

/// What to do with the remotes.
#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Add a remote: s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, az://CONTAINER/PREFIX, file:///PATH or a folder
    Add {
        /// The name it goes by (letters, digits, '.', '_', '-')
        name: String,
        /// Where it is; credentials come from the service's own environment and config, never from shake
        url: String,
    },
    /// List the remotes: name and URL
    List {
        /// Print JSON: [{"name","url"}]
        #[arg(long)]
        json: bool,
    },
    /// Remove a remote from the list (nothing on it, nor anything fetched, is deleted)
    Remove {
        /// Its name
        name: String,
    },
}

/// Runs `shake remote`.
pub fn run(ctx: &Context, args: &RemoteArgs, out: &mut dyn Write) -> Result {
    match &args.action {
        Action::Add { name, url } => {
            let remote = crate::remote::add(ctx, name, url)?;
            writeln!(out, "added remote {} {}", remote.name, remote.url)?;
        }
        Action::List { json } => {
            let all = crate::remote::remotes(&ctx.store_dir)?;
            let value = || json!(all.iter().map(|r| json!({"name": r.name, "url": r.url})).collect::<Vec<_>>());
            json_or(out, *json, value, |out: &mut dyn Write| {
                all.iter().try_for_each(|r| writeln!(out, "{}\t{}", r.name, r.url))
            })?;
        }
        Action::Remove { name } => {
            crate::remote::remove(ctx, name)?;
            writeln!(out, "removed remote {name}")?;
        }
    }
    Ok(0)
}
