//! The engine builds without the command line (issue 34.4): `plumbing` names clap only behind
//! its `cli` feature (the plumbing commands in `cmd/`, and the argument types the binary and the
//! porcelain build their command lines from), so `cargo check -p shake-plumbing
//! --no-default-features` builds it without clap.

use std::path::Path;

/// Tells whether a line of code names clap without the `cli` feature's guard.
fn unguarded_clap(line: &str) -> bool {
    let code = line.trim_start();
    !code.starts_with("//") && code.contains("clap") && !code.contains("cfg_attr(feature = \"cli\"")
}

#[test]
fn plumbing_names_clap_only_behind_its_cli_feature() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("plumbing");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("clap = { workspace = true, optional = true }"), "clap is optional in plumbing");
    assert!(manifest.contains("cli = [\"dep:clap\"]"), "the cli feature brings clap");
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    assert!(lib.contains("#[cfg(feature = \"cli\")]\npub mod cmd;"), "the plumbing commands are the cli feature's");
    let cmd = root.join("src/cmd");
    let mut files = 0;
    let mut leaks = Vec::new();
    for entry in walkdir::WalkDir::new(root.join("src")) {
        let path = entry.unwrap().into_path();
        if path.extension().is_none_or(|x| x != "rs") || path.starts_with(&cmd) {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| unguarded_clap(l)) {
            leaks.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
        }
    }
    assert!(files > 50, "plumbing/src moved: {files} files");
    assert!(leaks.is_empty(), "clap outside the cli feature (guard it with cfg_attr):\n{}", leaks.join("\n"));
    // The check itself sees what it must.
    assert!(unguarded_clap("#[derive(clap::Args)]"));
    assert!(!unguarded_clap("#[cfg_attr(feature = \"cli\", derive(clap::Args))]"));
    assert!(!unguarded_clap("/// as clap's usage errors"));
}

/// Tells whether a line of code builds or names the CLI's `Error` (exit codes and hints are the
/// command boundary's, `plumbing/src/error.rs`), rather than an engine error of its own.
fn names_cli_error(line: &str) -> bool {
    let code = line.trim_start();
    let named = [
        "Error::user(",
        "Error::corrupt(",
        "Error::os(",
        "Error::io(",
        "crate::Error",
        "crate::Result",
        "crate::error::",
        "ErrorKind::",
    ];
    let bare = |n: &str| {
        code.match_indices(n).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
    };
    !code.starts_with("//")
        && (named.iter().any(|n| bare(n))
            || code.starts_with("use crate::{")
                && [" Error,", " Error}", "{Error", " Result,", " Result}", "{Result"].iter().any(|n| code.contains(n))
                && code.contains('}'))
}

/// The engine returns its own typed errors (issue 34.4): the store's, the hosts' (the seam's
/// `host::error::HostError`), revisions' (`rev::RevError`), the calibration's, the search's, the
/// remotes', … None builds or names the CLI's `Error` or picks an exit code: the command
/// boundary does (`command_error.rs`), and the CLI's `Error` (`error.rs`) is the `cli`
/// feature's with the plumbing commands (`cmd/`), so the engine cannot build one at all
/// (`cargo check -p shake-plumbing --no-default-features`). Tests may look at what the boundary
/// makes of an error.
#[test]
fn the_store_returns_its_own_errors_and_the_boundary_picks_exit_codes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("plumbing/src");
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    for gated in ["mod command_error;", "pub mod error;", "pub use error::{Error, ErrorKind, Result};"] {
        assert!(
            lib.contains(&format!("#[cfg(feature = \"cli\")]\n{gated}")),
            "lib.rs: {gated} is not the cli feature's"
        );
    }
    let mut files = 0;
    let mut leaks = Vec::new();
    let boundary = [root.join("cmd"), root.join("command_error.rs"), root.join("error.rs")];
    for entry in walkdir::WalkDir::new(&root) {
        let path = entry.unwrap().into_path();
        let skip = boundary.iter().any(|b| path.starts_with(b)) || path.file_name().is_some_and(|n| n == "tests.rs");
        if path.extension().is_none_or(|x| x != "rs") || skip {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate().filter(|(_, l)| names_cli_error(l)) {
            leaks.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
        }
    }
    assert!(files > 100, "plumbing/src moved: {files} files");
    assert!(leaks.is_empty(), "an engine room builds the CLI's error:\n{}", leaks.join("\n"));
    // The check itself sees what it must.
    assert!(names_cli_error("    return Err(Error::corrupt(format!(\"x\")));"));
    assert!(names_cli_error("use crate::{Context, Error, Result};"));
    assert!(names_cli_error("use crate::{Error, Result};"));
    assert!(names_cli_error("use crate::{Context, Result};"));
    assert!(names_cli_error("use crate::Result;"));
    assert!(!names_cli_error("use crate::host::error::{HostError, Result};"));
    assert!(!names_cli_error("use super::{RemoteError, Result};"));
    assert!(!names_cli_error("use crate::{Context, StoreError};"));
    assert!(!names_cli_error("return Err(PackError::corrupt(path, \"bad\"));"));
    assert!(!names_cli_error("Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}"));
}

/// Tells whether a line of the porcelain's library builds or names the CLI's `Error` (the
/// porcelain reaches it as `shake_plumbing::Error`) rather than a typed error of its own.
fn porcelain_names_cli_error(line: &str) -> bool {
    let code = line.trim_start();
    let bare = |n: &str| {
        code.match_indices(n).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
    };
    !code.starts_with("//")
        && (["Error::user(", "Error::corrupt(", "Error::os(", "Error::io(", "Error::from(", "ErrorKind::"]
            .iter()
            .any(|n| bare(n))
            || code.contains("shake_plumbing::Error")
            || code.contains("shake_plumbing::ErrorKind")
            || code.starts_with("use shake_plumbing::{")
                && [" Error,", " Error}", "{Error,", "{Error}"].iter().any(|n| code.contains(n)))
}

/// The porcelain's library returns its own typed errors too (issue 34.4): the config's, the
/// batch's, the host history's, … and the commands (`porcelain/src/cmd/`, the porcelain's
/// boundary) turn them into the CLI's `Error` (`cmd/command_error.rs`), its exit code and hints.
#[test]
fn the_porcelain_library_returns_its_own_errors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("porcelain/src");
    let mut files = 0;
    let mut leaks = Vec::new();
    for entry in walkdir::WalkDir::new(&root) {
        let path = entry.unwrap().into_path();
        if path.extension().is_none_or(|x| x != "rs") || path.starts_with(root.join("cmd")) {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate().filter(|(_, l)| porcelain_names_cli_error(l)) {
            leaks.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
        }
    }
    assert!(files > 15, "porcelain/src moved: {files} files");
    assert!(leaks.is_empty(), "a porcelain library room builds the CLI's error:\n{}", leaks.join("\n"));
    // The check itself sees what it must.
    assert!(porcelain_names_cli_error("        return Err(Error::user(format!(\"x\")));"));
    assert!(porcelain_names_cli_error("use shake_plumbing::{Context, Error, Result};"));
    assert!(porcelain_names_cli_error("        return Err(shake_plumbing::Error::user("));
    assert!(porcelain_names_cli_error("let err = Error::from(append::partial_line(path));"));
    assert!(!porcelain_names_cli_error("use shake_plumbing::{Context, Result};"));
    assert!(!porcelain_names_cli_error("Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}"));
    assert!(!porcelain_names_cli_error("return Err(ConfigError::Unreadable { path, source });"));
}

/// The porcelain's small circles are gone (issue 34.5) and stay gone: the meter's rooms import
/// one way (`watch` → `memo` → `grow` → `stamp`: the loop, the memo, the append shortcut, the
/// file's stamp), and the stranded folds of a rewind (`rewind.rs`) are the library's, which
/// `status` and `audit rewind` use and which uses no command.
#[test]
fn the_meter_rooms_and_the_rewind_import_one_way() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("porcelain/src");
    let code = |file: &str| {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        text.split("#[cfg(test)]").next().unwrap().to_string()
    };
    let forbidden = [
        ("cmd/meter/stamp.rs", &["super::memo", "super::grow", "super::watch"][..]),
        ("cmd/meter/grow.rs", &["super::memo", "super::watch"][..]),
        ("cmd/meter/memo.rs", &["super::watch"][..]),
        ("rewind.rs", &["crate::cmd", "crate::status", "crate::audit"][..]),
    ];
    let mut back = Vec::new();
    for (file, names) in forbidden {
        let text = code(file);
        back.extend(names.iter().filter(|n| text.contains(*n)).map(|n| format!("{file} names {n}")));
    }
    assert!(back.is_empty(), "an import runs back:\n{}", back.join("\n"));
    assert!(code("cmd/meter/memo.rs").contains("super::grow::Growth"), "the memo grows through grow.rs");
    assert!(code("cmd/status.rs").contains("crate::rewind::stranded"), "status asks the rewind's library");
}

/// The hosts are private outside the engine (issue 34.4): the porcelain and the binary reach a
/// host only through the seam and the registry, and only the tests' surface (`fixture-host`, a
/// dev-dependency feature) makes a host module public.
#[test]
fn hosts_are_private_but_to_the_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("plumbing/src/lib.rs")).unwrap();
    for host in ["pi", "claude", "omp"] {
        let private = format!("#[cfg(not(feature = \"fixture-host\"))]\npub(crate) mod {host};");
        let tests = format!("#[cfg(feature = \"fixture-host\")]\npub mod {host};");
        assert!(lib.contains(&private) && lib.contains(&tests), "{host} is public to the porcelain");
    }
    // Only a dev-dependency turns the tests' surface on: no shipped build has it.
    for manifest in ["Cargo.toml", "porcelain/Cargo.toml"] {
        let text = std::fs::read_to_string(root.join(manifest)).unwrap();
        let shipped = text.split("[dev-dependencies]").next().unwrap();
        assert!(!shipped.contains("fixture-host"), "{manifest} ships the hosts' insides");
    }
}
