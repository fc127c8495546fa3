//! The real Claude Code 2.1.328, end to end: makes fresh transcripts with it (offline, against
//! the local API stand-in) and checks that shake projects each exactly as Claude Code sends it
//! on resume. Installs its own pinned copy (`tests/claude-oracle/package-lock.json`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::claude_project::{assert_same_messages, projected};
use crate::env::npm_ci;

/// Claude Code's test folder, with its npm tree installed.
pub fn claude_oracle() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/claude-oracle");
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| npm_ci(&dir, &[Path::new("node_modules/@anthropic-ai/claude-code/bin/claude.exe")]));
    dir
}

/// Runs `make-fixtures.mjs` for `scenarios` into `out` (real Claude Code runs).
fn make_fixtures(out: &Path, scenarios: &[&str]) {
    let dir = claude_oracle();
    let result =
        Command::new("node").arg(dir.join("make-fixtures.mjs")).arg(out).args(scenarios).output().expect("node");
    assert!(result.status.success(), "make-fixtures.mjs failed:\n{}", String::from_utf8_lossy(&result.stderr));
}

#[test]
fn fresh_transcripts_project_as_claude_code_sends_them() {
    let out = tempfile::tempdir().unwrap();
    make_fixtures(out.path(), &["bash-read", "parallel"]);
    let mut checked = 0;
    for entry in std::fs::read_dir(out.path()).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let request: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("request.json")).unwrap()).unwrap();
        assert_same_messages(&name, &projected(&dir.join("transcript.jsonl")), request["messages"].as_array().unwrap());
        checked += 1;
    }
    // The two scenarios and the variants made from them.
    assert_eq!(checked, 5);
}
