//! The plumbing commands: one file each, holding its clap `Args` and `run(ctx, args, out)`.
//! Their output is a contract (`docs/plumbing.md`).

pub mod cat_object;
pub mod cat_session;
pub mod count_objects;
pub mod export;
pub mod fsck;
pub mod hash_entry;
pub mod import;
pub mod project;
pub mod show_ref;
pub mod update_ref;
