//! The one integration-test binary: each module tests one command or one property end to end,
//! running the real `shake` binary against a private store and pi session folder.

mod env;
mod export;
mod pi_live;
mod project;
