//! The plumbing commands: one file each, holding its clap `Args` and `run(ctx, args, out)`.
//! Their output is a contract (`docs/plumbing.md`).

pub mod cat_object;
pub mod cat_session;
pub mod count_objects;
pub mod count_tokens;
pub mod export;
pub mod fetch;
pub mod fsck;
pub mod gc;
pub mod generate_session;
pub mod hash_entry;
pub mod import;
pub mod ls_entries;
pub mod ls_leaves;
pub mod project;
pub mod push;
pub mod remote;
pub mod restore;
pub mod rev_parse;
pub mod sessions;
pub mod show_ref;
pub mod tokens;
pub mod update_ref;
