//! The porcelain commands, one file each (a folder for `audit`'s subcommands): clap `Args` and a
//! `run(ctx, args, out)`. What they share lives beside this folder, in the library modules.

pub mod audit;
mod command_error;
pub mod diff;
pub mod drop;
pub mod fold;
pub mod grep;
pub mod log;
pub mod meter;
pub mod pi_extension;
pub mod regions;
pub mod scan;
pub mod show;
pub mod status;
pub mod undo;
