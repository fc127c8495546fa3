//! The plumbing commands: one file each, holding its clap `Args` and `run(ctx, args, out)`.
//! Their output is a contract (`docs/plumbing.md`).

pub mod export;
pub mod generate_session;
pub mod ls_entries;
pub mod ls_leaves;
pub mod project;
pub mod regions;
pub mod rev_parse;
