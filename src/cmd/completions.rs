//! `shake completions <shell>`: a completion script generated from the clap definitions.

use std::io::Write;

use shake_plumbing::Result;

/// Print a shell completion script
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for
    pub shell: clap_complete::Shell,
}

/// Runs `shake completions`.
pub fn run(args: &CompletionsArgs, out: &mut dyn Write) -> Result {
    // clap_complete panics when its writer fails (`shake completions bash | head`, a full disk):
    // render into memory, then write, so a failed write is an error like any other output's.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut crate::cli::command(), "shake", &mut script);
    out.write_all(&script)?;
    Ok(0)
}
