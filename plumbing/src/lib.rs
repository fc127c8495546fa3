//! shake's engine: the pi session model and projection, the content-addressed store, token
//! counting, and the low-level (plumbing) commands whose output is a contract.

pub mod append;
pub mod calibration;
pub mod claude;
pub mod cmd;
pub mod context;
pub mod durable;
pub mod error;
pub mod host;
pub mod hosts;
pub mod id;
pub mod js;
pub mod json;
pub mod nodes;
pub mod omp;
pub mod output;
pub mod pi;
pub mod proof;
pub mod regions;
pub mod rev;
pub mod store;
pub mod time;
pub mod token_cache;
pub mod tokens;

pub use context::Context;
pub use error::{Error, ErrorKind, Result};
