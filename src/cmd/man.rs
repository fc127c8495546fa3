//! `shake man`: the roff man pages generated from the clap definitions: `shake.1` on stdout, or
//! with `--dir DIR` one page per command (`shake.1`, `shake-fold.1`, `shake-audit-fork.1`, …), the
//! pages `shake.1` refers to.

use std::io::Write;
use std::path::PathBuf;

use clap::CommandFactory;
use shake_plumbing::durable::FileError;
use shake_plumbing::Result;

/// Print the man page (roff), e.g. `shake man > shake.1`; or write one page per command with --dir
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write shake.1 and one page per command (shake-fold.1, …) into DIR, and list them
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `shake man`.
pub fn run(args: &ManArgs, out: &mut dyn Write) -> Result {
    // No `help` subcommand: it has no page of its own (`generate_to` leaves it out too).
    let cmd = crate::cli::Cli::command().disable_help_subcommand(true);
    let Some(dir) = &args.dir else {
        clap_mangen::Man::new(cmd).render(out)?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).map_err(FileError::at(dir, "create"))?;
    clap_mangen::generate_to(cmd, dir).map_err(FileError::at(dir, "write the man pages in"))?;
    let mut pages: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(FileError::at(dir, "read"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("shake")))
        .collect();
    pages.sort();
    for page in pages {
        writeln!(out, "{}", page.display())?;
    }
    Ok(0)
}
