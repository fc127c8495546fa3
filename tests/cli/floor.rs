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
