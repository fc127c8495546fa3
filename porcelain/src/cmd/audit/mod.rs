//! `shake audit`: checks scripts run over forks and rewinds. Each answers with exit 0 when it
//! found everything consistent, 1 when it found a difference, 2 when it could not answer
//! (`docs/plumbing.md`).

pub mod fork;
pub mod rewind;

use std::io::Write;

use shake_plumbing::host::Session;
use shake_plumbing::{Context, Error, Result};

use crate::log_entry::{self, LogData, Op};

/// Check that folds survive forks and rewinds (exit 0 consistent, 1 difference found, 2 error)
#[derive(clap::Args, Debug)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
}

/// The audits.
#[derive(clap::Subcommand, Debug)]
pub enum AuditCommand {
    Fork(fork::ForkArgs),
    Rewind(rewind::RewindArgs),
}

/// Runs `shake audit …`; any error exits 2 so it is never read as a finding.
pub fn run(ctx: &Context, args: &AuditArgs, out: &mut dyn Write) -> Result {
    match &args.command {
        AuditCommand::Fork(args) => fork::run(ctx, args, out),
        AuditCommand::Rewind(args) => rewind::run(ctx, args, out),
    }
    .map_err(Error::trouble)
}

/// The fold log entry an entry is, if it is one (undo entries and other entries are not).
fn fold_of<'a>(session: &Session<'a>, index: usize) -> Option<LogData<'a>> {
    log_entry::parse(session, index).filter(|d| d.op() == Some(Op::Fold))
}
