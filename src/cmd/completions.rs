//! `shake completions <shell>`: a completion script generated from the clap definitions.

use std::io::Write;

use shake_plumbing::Result;

/// Print a shell completion script
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for
    pub shell: clap_complete::Shell,
}

/// Runs `shake completions` for the command line `cli` (handed in: the definitions are the
/// binary's top, which this command's arguments are part of).
pub fn run(args: &CompletionsArgs, mut cli: clap::Command, out: &mut dyn Write) -> Result {
    // clap_complete panics when its writer fails (`shake completions bash | head`, a full disk):
    // render into memory, then write, so a failed write is an error like any other output's.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "shake", &mut script);
    out.write_all(&script)?;
    Ok(0)
}
