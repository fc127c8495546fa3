//! shake for people: fold policy (profiles, scopes, placeholders, the wall), the commands that
//! write folds back (`fold`, `undo`) and the ones that read them (`status`, `log`, `show`), and the
//! pi integration (`pi-extension`).

pub mod audit;
pub mod batch;
pub mod diff;
pub mod fold;
pub mod host_plan;
pub mod leaf;
pub mod log;
pub mod log_entry;
pub mod meter;
pub mod omp_meter;
pub mod overlay;
pub mod pi_extension;
pub mod plan;
pub mod profile;
pub mod render;
pub mod show;
pub mod status;
pub mod undo;
pub mod wall;
