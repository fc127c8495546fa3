//! `shake update-ref`: set a ref, optionally only if it still holds an expected id.

use std::io::Write;

use crate::id::ObjectId;
use crate::store::{Expect, Store};
use crate::{Context, Error, Result};

/// Point a ref at an object; with OLD, only if the ref still holds OLD (compare-and-swap)
#[derive(clap::Args, Debug)]
pub struct UpdateRefArgs {
    /// The ref, e.g. refs/overlays/<node-id>
    #[arg(value_name = "REF")]
    pub name: String,
    /// The object id (or unique prefix) to point it at
    #[arg(value_name = "NEW")]
    pub new: String,
    /// The full id the ref must hold now; 64 zeros: the ref must not exist
    #[arg(value_name = "OLD")]
    pub old: Option<String>,
}

/// Runs `shake update-ref`.
pub fn run(ctx: &Context, args: &UpdateRefArgs, _out: &mut dyn Write) -> Result {
    let mut store = Store::open(ctx)?;
    let new = store.resolve(&args.new)?;
    let expect = match args.old.as_deref() {
        None => Expect::Any,
        Some(old) => match old.parse::<ObjectId>() {
            Ok(id) if id == ObjectId::NULL => Expect::Absent,
            Ok(id) => Expect::Id(id),
            Err(e) => return Err(Error::user(format!("OLD: {e}"))),
        },
    };
    store.update_ref(&args.name, &new, expect)?;
    Ok(0)
}
