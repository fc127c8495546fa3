//! `shake man`: the roff man page generated from the clap definitions.

use std::io::Write;

use clap::CommandFactory;
use shake_plumbing::Result;

/// Print the man page (roff); e.g. `shake man > shake.1`
#[derive(clap::Args, Debug)]
pub struct ManArgs {}

/// Runs `shake man`.
pub fn run(_args: &ManArgs, out: &mut dyn Write) -> Result {
    clap_mangen::Man::new(crate::cli::Cli::command()).render(out)?;
    Ok(0)
}
