//! shake's engine: the hosts' session models (pi, Claude Code, oh-my-pi) and their projections,
//! the content-addressed store, token counting, and the low-level (plumbing) commands whose
//! output is a contract.

// The store's and the hosts' writes rest on POSIX (flock, O_NOFOLLOW, folder fsync, file modes,
// `std::os::unix` in several rooms): on another system the build stops here, saying so, rather
// than at the first of those calls.
#[cfg(not(unix))]
compile_error!("shake builds on Unix only: Linux, where every test runs, and macOS and the BSDs");

pub mod append;
pub mod calibration;
pub mod claude;
#[cfg(feature = "cli")]
pub mod cmd;
pub mod context;
pub mod durable;
pub mod error;
pub mod fault;
pub mod fork_record;
pub mod host;
pub mod hosts;
pub mod id;
pub mod js;
pub mod nodes;
pub mod omp;
pub mod output;
pub mod own_write;
pub mod pi;
pub mod proof;
pub mod regions;
pub mod rev;
pub mod search;
pub mod store;
pub mod time;
pub mod token_cache;
pub mod tokens;

pub use context::Context;
pub use error::{Error, ErrorKind, Result};
