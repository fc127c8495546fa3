//! shake's engine: the hosts' session models (pi, Claude Code, oh-my-pi) and their projections,
//! the content-addressed store, token counting, and the low-level (plumbing) commands whose
//! output is a contract.

// The store's and the hosts' writes rest on POSIX (flock, O_NOFOLLOW, folder fsync, file modes,
// `std::os::unix` in several rooms): on another system the build stops here, saying so, rather
// than at the first of those calls.
#[cfg(not(unix))]
compile_error!("shake builds on Unix only: Linux, where every test runs, and macOS and the BSDs");

pub mod append;
// The hosts are the registry's (`hosts.rs`): the porcelain and the binary reach one only through
// the seam (`host/`), so outside this crate a host module is private. The tests' surface
// (`fixture-host`, on only in test builds) opens their insides to the conformance, fault and
// live studies that drive a host's own reader and writer directly.
#[cfg(feature = "fixture-host")]
pub mod claude;
#[cfg(not(feature = "fixture-host"))]
pub(crate) mod claude;
#[cfg(feature = "cli")]
pub mod cmd;
// The CLI's error (exit codes, hints) and the command boundary that makes it from the engine's
// own errors are the commands' (`docs/architecture.md`): the engine cannot build one.
#[cfg(feature = "cli")]
mod command_error;
pub mod context;
pub mod durable;
#[cfg(feature = "cli")]
pub mod error;
pub mod fault;
pub mod fork_record;
pub mod host;
pub mod hosts;
pub mod id;
pub mod js;
pub mod nodes;
#[cfg(feature = "fixture-host")]
pub mod omp;
#[cfg(not(feature = "fixture-host"))]
pub(crate) mod omp;
pub mod output;
pub mod own_write;
#[cfg(feature = "fixture-host")]
pub mod pi;
#[cfg(not(feature = "fixture-host"))]
pub(crate) mod pi;
pub mod proof;
pub mod regions;
pub mod remote;
pub mod rev;
pub mod search;
pub mod store;
pub mod time;
pub mod tokens;

pub use context::Context;
#[cfg(feature = "cli")]
pub use error::{Error, ErrorKind, Result};
