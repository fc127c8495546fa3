//! The pauses the fault tests widen a race window with: a test sets the variable to a number of
//! milliseconds, and the step sleeps that long where another writer may come in (pi appending
//! between shake's check and its write, a flush landing on a file just renamed over).
//!
//! Compiled in only for test builds: `cargo test` turns on the `fault-pauses` feature through
//! the root package's dev-dependency, so the binary the integration tests run pauses; a release
//! build, or any build that is not for tests, neither reads the variables nor sleeps.

/// Sleeps as many milliseconds as the environment variable `var` says, in a build for tests;
/// does nothing in any other.
#[inline]
pub fn pause(var: &str) {
    #[cfg(feature = "fault-pauses")]
    if let Some(ms) = std::env::var(var).ok().and_then(|v| v.parse().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    #[cfg(not(feature = "fault-pauses"))]
    let _ = var;
}
