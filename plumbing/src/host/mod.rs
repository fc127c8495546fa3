//! The host seam: everything the engine knows about a session format goes through here.

pub mod file;
