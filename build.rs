//! Names the commit in `shake --version` when built from a git checkout: `SHAKE_VERSION` is
//! `0.1.0 (0904230)`, or the package's version alone where git or the checkout is missing.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let commit = git(&["rev-parse", "--short=7", "HEAD"]);
    // Built again when HEAD moves: a commit, a checkout, a merge.
    for dir in [git(&["rev-parse", "--git-dir"]), git(&["rev-parse", "--git-common-dir"])].into_iter().flatten() {
        for name in ["HEAD", "refs/heads", "packed-refs"] {
            let path = Path::new(&dir).join(name);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    let full = match commit {
        Some(commit) => format!("{version} ({commit})"),
        None => version,
    };
    println!("cargo:rustc-env=SHAKE_VERSION={full}");
}
