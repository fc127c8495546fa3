//! The pager for long output to a terminal, as git does it: `$SHAKE_PAGER`, else `$PAGER`, else
//! `less -FRX` (quits when the output fits one screen, keeps colours, leaves the screen as it
//! is), run through `sh -c`. Never when stdout is not a terminal, with `--no-pager`, or when the
//! pager is set to the empty string or `cat`.

use std::process::{Child, ChildStdin, Command, Stdio};

/// A running pager: output goes to its stdin; [`Pager::wait`] lets it finish.
pub struct Pager {
    child: Child,
}

impl Pager {
    /// Starts the pager the environment names; `None` when there is none or it cannot start
    /// (then output goes straight to stdout).
    pub fn start() -> Option<(Pager, ChildStdin)> {
        let var = |name: &str| std::env::var(name).ok();
        let command = var("SHAKE_PAGER").or_else(|| var("PAGER")).unwrap_or_else(|| "less".into());
        if command.trim().is_empty() || command.trim() == "cat" {
            return None;
        }
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&command).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            cmd.env("LESS", "FRX");
        }
        let mut child = cmd.spawn().ok()?;
        let stdin = child.stdin.take()?;
        Some((Pager { child }, stdin))
    }

    /// Waits for the pager to exit (the user read the output or quit it).
    pub fn wait(mut self) {
        let _ = self.child.wait();
    }
}
