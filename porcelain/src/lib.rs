//! shake for people: fold policy (profiles, scopes, placeholders, the wall) and the library the
//! commands share (plans, batches, overlays, rendering); the commands themselves in [`cmd`]
//! (re-exported here under their own names), the pi integration (`pi-extension`) among them.

pub mod batch;
pub mod cmd;
pub mod config;
pub mod example;
pub mod fingerprint;
pub mod host_history;
pub mod host_plan;
pub mod leaf;
pub mod log_entry;
pub mod overlay;
pub mod plan;
pub mod price;
pub mod profile;
pub mod render;
pub mod rewind;
pub mod rules;
pub mod scope;
pub mod wall;

pub use cmd::{audit, diff, drop, fold, grep, log, meter, pi_extension, regions, scan, show, status, undo};
