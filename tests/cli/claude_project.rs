//! shake's projection of Claude Code transcripts equals what Claude Code 2.1.328 itself sent the
//! model on `claude -p probe --resume <id>` (the captured `request.json` of each fixture under
//! `tests/fixtures/claude/`, made by `tests/claude-oracle/make-fixtures.mjs`).

use std::path::{Path, PathBuf};

use serde_json::Value;
use shake_plumbing::claude::{self, LoadOptions, Transcript};

/// Every Claude Code fixture folder (one per scenario).
pub fn claude_fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/fixtures/claude")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("request.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// The messages shake projects for a transcript file.
pub fn projected(path: &Path) -> Vec<Value> {
    let t = Transcript::read(path).expect("read transcript");
    let chain = claude::load(&t, LoadOptions::default());
    claude::project(&t, &chain)
}

/// Asserts two message lists are equal as JSON text (key order included), naming the first
/// message that differs.
pub fn assert_same_messages(name: &str, ours: &[Value], oracle: &[Value]) {
    for (i, (a, b)) in ours.iter().zip(oracle).enumerate() {
        let (a, b) = (a.to_string(), b.to_string());
        if a != b {
            let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
            panic!(
                "{name}: message {i} differs at byte {at}:\n shake:  …{}\n claude: …{}",
                around(&a, at),
                around(&b, at)
            );
        }
    }
    assert_eq!(
        ours.len(),
        oracle.len(),
        "{name}: shake projects {} messages, Claude Code sent {}",
        ours.len(),
        oracle.len()
    );
}

/// The text from 120 bytes before `at` to 200 after, cut on character boundaries.
fn around(s: &str, at: usize) -> &str {
    let boundary = |mut i: usize| {
        i = i.min(s.len());
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    &s[boundary(at.saturating_sub(120))..boundary(at + 200)]
}

#[test]
fn projection_equals_claude_codes_request_on_every_fixture() {
    let fixtures = claude_fixtures();
    assert!(fixtures.len() >= 6, "expected the generated fixtures, found {}", fixtures.len());
    for dir in fixtures {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let request: Value = serde_json::from_slice(&std::fs::read(dir.join("request.json")).unwrap()).unwrap();
        let oracle = request["messages"].as_array().expect("messages");
        assert_same_messages(&name, &projected(&dir.join("transcript.jsonl")), oracle);
    }
}

#[test]
fn shakes_placeholder_is_claude_codes_own_persisted_output() {
    // bash-read has one output Claude Code persisted itself: its placeholder in the transcript,
    // its saved file under tool-results/.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude/bash-read");
    let t = Transcript::read(&dir.join("transcript.jsonl")).unwrap();
    let mut checked = 0;
    for row in t.rows.iter().filter(|r| r.kind() == "user" && r.has_tool_result()) {
        for block in t.content(row).unwrap().as_array().unwrap() {
            let Some(text) = block["content"].as_str().filter(|s| s.starts_with("<persisted-output>")) else {
                continue;
            };
            let path = text.lines().nth(1).and_then(|l| l.split("saved to: ").nth(1)).unwrap();
            let saved = dir.join("tool-results").join(Path::new(path).file_name().unwrap());
            let original = std::fs::read_to_string(saved).unwrap();
            assert_eq!(claude::write::placeholder(&original, Path::new(path)), text);
            assert!(shake_plumbing::regions::claude_shake::is_tombstone(text));
            checked += 1;
        }
    }
    assert_eq!(checked, 1);
}

#[test]
fn project_json_is_written_as_it_comes_and_is_the_request() {
    for dir in claude_fixtures() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let path = dir.join("transcript.jsonl");
        let file = shake_plumbing::host::SessionFile::from_bytes(path.clone(), std::fs::read(&path).unwrap());
        let session = shake_plumbing::hosts::load(&file, None).unwrap();
        let view = shake_plumbing::host::View::at(&session, session.default_leaf()).unwrap();
        let mut streamed = Vec::new();
        view.write_json_text(&mut streamed).unwrap();
        assert_eq!(String::from_utf8(streamed.clone()).unwrap(), view.to_json().to_string(), "{name}");
        let written: Value = serde_json::from_slice(&streamed).unwrap();
        let request: Value = serde_json::from_slice(&std::fs::read(dir.join("request.json")).unwrap()).unwrap();
        assert_same_messages(&name, written["messages"].as_array().unwrap(), request["messages"].as_array().unwrap());
    }
}
