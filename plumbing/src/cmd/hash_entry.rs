//! `shake hash-entry`: the object id of each input line, as the store would name it.

use std::io::{Read, Write};
use std::path::PathBuf;

use crate::durable::FileError;
use crate::id::{Kind, ObjectId};
use crate::store::Store;
use crate::{Context, Error, Result};

/// Print the entry object id of each line of a file (without storing it unless -w)
#[derive(clap::Args, Debug)]
pub struct HashEntryArgs {
    /// The file whose lines to hash
    #[arg(value_name = "FILE", required_unless_present = "stdin")]
    pub file: Option<PathBuf>,
    /// Read the lines from standard input
    #[arg(long, conflicts_with = "file")]
    pub stdin: bool,
    /// Also write the entry objects into the store
    #[arg(short = 'w')]
    pub write: bool,
}

/// Runs `shake hash-entry`.
pub fn run(ctx: &Context, args: &HashEntryArgs, out: &mut dyn Write) -> Result {
    let bytes = match &args.file {
        Some(path) => std::fs::read(path).map_err(FileError::at(path, "read"))?,
        None => {
            let mut buf = Vec::new();
            std::io::stdin().read_to_end(&mut buf).map_err(|e| Error::io("cannot read standard input", e))?;
            buf
        }
    };
    // A last line without "\n" is still a line; the "\n" that ends the input starts none.
    let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let lines: Vec<&[u8]> = if bytes.is_empty() { Vec::new() } else { body.split(|&b| b == b'\n').collect() };
    if args.write {
        let mut store = Store::open(ctx)?;
        let mut batch = store.batch()?;
        for line in &lines {
            writeln!(out, "{}", batch.put(Kind::Entry, line)?)?;
        }
        batch.commit()?;
    } else {
        for line in &lines {
            writeln!(out, "{}", ObjectId::hash(Kind::Entry, line))?;
        }
    }
    Ok(0)
}
