//! The one integration-test binary: each module tests one command or one property end to end,
//! running the real `shake` binary against a private store and pi session folder.

mod append;
mod audit;
mod bad_input;
mod claude_fork_live;
mod claude_live;
mod claude_project;
mod conformance;
mod diff;
mod env;
mod export;
mod family;
mod fold;
mod generate;
mod host_plan;
mod inspect;
mod lifecycle;
mod meter;
mod pi_live;
mod project;
mod seam;
mod sessions;
mod store;
mod synthetic;
mod tokens;
mod tree;

/// `27838` → `27,838`, as shake prints counts.
pub fn render_thousands(n: u64) -> String {
    shake_porcelain::render::thousands(n)
}
