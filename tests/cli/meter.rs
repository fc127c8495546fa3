//! `shake meter`: one number with `fold --dry-run` and the fold's own report, on the fixtures and
//! on generated sessions; its JSON, colour rules, `--log` and `--watch`.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};

use crate::env::{fixtures, TestEnv};
use crate::tokens::generate;

fn json_of(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// Asserts meter and `fold --dry-run` agree on `path` with these extra arguments.
fn assert_one_number(env: &TestEnv, path: &str, extra: &[&str]) -> Value {
    let meter = json_of(&env.ok(&[&["meter", path, "--json"], extra].concat()));
    let dry = json_of(&env.ok(&[&["fold", path, "--dry-run", "--json"], extra].concat()));
    assert_eq!(meter["tokens"], dry["tokensFreed"], "{path} {extra:?}");
    assert_eq!(meter["toolResults"], dry["toolResults"], "{path} {extra:?}");
    assert_eq!(meter["blocks"], dry["blocks"], "{path} {extra:?}");
    assert_eq!(meter["tokenizer"], dry["tokenizer"], "{path} {extra:?}");
    assert_eq!(meter["profile"], dry["profile"], "{path} {extra:?}");
    meter
}

/// The fixtures `fold` accepts (v1 files must be migrated by pi first).
fn foldable() -> Vec<String> {
    fixtures().into_iter().filter(|n| !n.contains(".v1.") && !n.contains("v1-legacy")).collect()
}

#[test]
fn meter_equals_fold_dry_run_on_every_fixture() {
    let env = TestEnv::new();
    for name in foldable() {
        let path = env.fixture(&name);
        let path = path.to_str().unwrap();
        for tokenizer in ["pi", "o200k", "cl100k"] {
            for profile in ["default", "aggressive", "conservative"] {
                assert_one_number(&env, path, &["--tokenizer", tokenizer, "--profile", profile]);
            }
        }
    }
}

#[test]
fn meter_equals_the_real_fold_and_drops_after_it() {
    let env = TestEnv::new();
    let path = env.fixture("pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl");
    let path = path.to_str().unwrap();
    let before = assert_one_number(&env, path, &["--tokenizer", "o200k"]);
    assert!(before["tokens"].as_u64().unwrap() > 25_000);
    assert_eq!(before["severity"], "alert");
    let folded = json_of(&env.ok(&["fold", path, "--json", "--tokenizer", "o200k"]));
    assert_eq!(folded["tokensFreed"], before["tokens"]);
    let after = assert_one_number(&env, path, &["--tokenizer", "o200k"]);
    assert_eq!(after["tokens"], 0);
    assert_ne!(after["leafId"], before["leafId"]);
}

#[test]
fn meter_equals_fold_dry_run_on_generated_sessions() {
    let env = TestEnv::new();
    for seed in 1..=16u64 {
        let path = env.write(&format!("gen-{seed}.jsonl"), generate(seed, 30 + 12 * seed as usize));
        let path = path.to_str().unwrap();
        let profile = ["default", "aggressive", "conservative"][seed as usize % 3];
        for tokenizer in ["pi", "o200k"] {
            assert_one_number(&env, path, &["--tokenizer", tokenizer, "--profile", profile]);
        }
    }
}

#[test]
fn meter_equals_fold_dry_run_on_sessions_from_generate_session() {
    let env = TestEnv::new();
    for seed in 1..=8u64 {
        let path = env.dir.path().join(format!("g{seed}.jsonl"));
        let path = path.to_str().unwrap();
        env.ok(&["generate-session", "--seed", &seed.to_string(), "-o", path]);
        let profile = ["default", "aggressive", "conservative"][seed as usize % 3];
        for tokenizer in ["pi", "o200k"] {
            assert_one_number(&env, path, &["--tokenizer", tokenizer, "--profile", profile]);
        }
    }
}

#[test]
fn meter_prints_a_plain_figure_off_a_terminal() {
    let env = TestEnv::new();
    let path = env.fixture("pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl");
    let path = path.to_str().unwrap();
    let reading = json_of(&env.ok(&["meter", path, "--json", "--tokenizer", "pi"]));
    let tokens = reading["tokens"].as_u64().unwrap();
    // The session's last turn is a year old: the cache is cold and the fold free.
    assert_eq!(reading["cache"]["verdict"], "cache cold: free now");
    let label = format!("~{}k shakeable · cache cold: free now\n", (tokens + 500) / 1000);
    assert_eq!(env.ok(&["meter", path, "--tokenizer", "pi"]), label);
    // Not a terminal: no colour even without NO_COLOR.
    let out = env.cmd().env_remove("NO_COLOR").args(["meter", path, "--tokenizer", "pi"]).output().unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), label);
    let small = env.fixture("pi-v3-edge-edits.jsonl");
    assert_eq!(env.ok(&["meter", small.to_str().unwrap()]), "<1k shakeable\n");
}

#[test]
fn meter_json_names_session_leaf_and_tokenizer() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    let p = path.to_str().unwrap();
    let m = json_of(&env.ok(&["meter", p, "--json", "--leaf", "5f607182"]));
    assert_eq!(m["leafId"], "5f607182");
    assert_eq!(m["session"], p);
    // The session's model is Claude Sonnet 4.5.
    assert_eq!(m["tokenizer"], "claude-v3");
    assert_eq!(m["profile"], "default");
    assert_eq!(m["severity"], "low");
}

#[test]
fn meter_log_gets_a_line_when_the_figure_changes() {
    let env = TestEnv::new();
    let path = env.write("s.jsonl", generate(3, 60));
    let p = path.to_str().unwrap();
    let log = env.dir.path().join("meter.jsonl");
    let l = log.to_str().unwrap();
    let first = json_of(&env.ok(&["meter", p, "--json", "--log", l, "--tokenizer", "pi"]));
    env.ok(&["meter", p, "--log", l, "--tokenizer", "pi"]);
    append(&path, &big_tool_result("zz", &first["leafId"]));
    append(&path, &filler("zy", "zz", 8_000));
    let second = json_of(&env.ok(&["meter", p, "--json", "--log", l, "--tokenizer", "pi"]));
    assert!(second["tokens"].as_u64() > first["tokens"].as_u64());
    let lines: Vec<Value> = std::fs::read_to_string(&log).unwrap().lines().map(json_of).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["tokens"], first["tokens"]);
    assert_eq!(lines[1]["tokens"], second["tokens"]);
    assert!(lines[1]["time"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn meter_watch_reprints_when_the_file_changes() {
    let env = TestEnv::new();
    let path = env.write("w.jsonl", generate(5, 40));
    let mut child = env
        .cmd()
        .args(["meter", path.to_str().unwrap(), "--json", "--watch", "--tokenizer", "pi"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let next = || rx.recv_timeout(Duration::from_secs(60)).expect("meter --watch printed a reading");
    let first = json_of(&next());
    append(&path, &big_tool_result("zz", &first["leafId"]));
    let second = json_of(&next());
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(second["leafId"], "zz");
    assert_ne!(first["leafId"], second["leafId"]);
}

#[test]
fn an_unchanged_settled_file_is_answered_from_the_memo() {
    let env = TestEnv::new();
    let path = env.write("m.jsonl", generate(4, 50));
    let p = path.to_str().unwrap();
    let set_mtime = |t: std::time::SystemTime| {
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(t).unwrap();
    };
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    set_mtime(hour_ago);
    let first = env.ok(&["meter", p, "--json", "--tokenizer", "pi"]);
    // Same size, time and inode, other bytes (the header blanked): only the memo still answers.
    let mut bytes = std::fs::read(&path).unwrap();
    let header_end = bytes.iter().position(|&b| b == b'\n').unwrap();
    bytes[..header_end].fill(b' ');
    std::fs::File::options().write(true).open(&path).unwrap().write_all(&bytes).unwrap();
    set_mtime(hour_ago);
    assert_eq!(env.ok(&["meter", p, "--json", "--tokenizer", "pi"]), first);
    // Another tokenizer is another reading: measured, and the damage shows.
    env.fails(&["meter", p, "--json", "--tokenizer", "cl100k"], 1);
    // A new modification time measures again.
    set_mtime(hour_ago + Duration::from_secs(1));
    env.fails(&["meter", p, "--json", "--tokenizer", "pi"], 1);
}

fn append(path: &std::path::Path, line: &Value) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(f, "{line}").unwrap();
}

fn big_tool_result(id: &str, parent: &Value) -> Value {
    let text: String = (0..400).map(|i| format!("line {i}: some build output here\n")).collect();
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T01:00:00.000Z",
           "message": {"role": "toolResult", "toolCallId": "c", "toolName": "bash", "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 1}})
}

/// A user message of about `chars` characters, so older entries leave the protected tail.
fn filler(id: &str, parent: &str, chars: usize) -> Value {
    json!({"type": "message", "id": id, "parentId": parent, "timestamp": "2026-01-01T01:00:01.000Z",
           "message": {"role": "user", "content": "words ".repeat(chars / 6), "timestamp": 2}})
}

/// After every kind of change a session file sees (a plain entry appended, a fold's
/// `context_edit`, a branch from an older entry, a torn last line, the file rewritten), a meter
/// that has read the file before still prints what `fold --dry-run` prints. Each state's file is
/// dated in the past, so the meter may answer from its memo: this is the test any shortcut taken
/// on an appended file must pass.
#[test]
fn meter_equals_fold_dry_run_after_each_kind_of_change() {
    let env = TestEnv::new();
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    for seed in [2u64, 5, 9] {
        let path = env.dir.path().join(format!("c{seed}.jsonl"));
        env.ok(&["generate-session", "--seed", &seed.to_string(), "-o", path.to_str().unwrap()]);
        let p = path.to_str().unwrap();
        let mut stamp = 0;
        let mut check = |label: &str| {
            stamp += 1;
            let t = hour_ago + Duration::from_secs(stamp);
            std::fs::File::options().write(true).open(&path).unwrap().set_modified(t).unwrap();
            for tokenizer in ["pi", "o200k"] {
                for profile in ["default", "aggressive", "conservative"] {
                    let extra = ["--tokenizer", tokenizer, "--profile", profile];
                    let meter = assert_one_number(&env, p, &extra);
                    // Asked again (now surely from the memo): the same.
                    let again = json_of(&env.ok(&[&["meter", p, "--json"], &extra[..]].concat()));
                    assert_eq!(meter, again, "seed {seed} after {label} {extra:?}");
                }
            }
        };
        check("nothing");
        let leaf = json_of(&env.ok(&["meter", p, "--json", "--tokenizer", "pi"]))["leafId"].clone();
        append(&path, &big_tool_result("zz", &leaf));
        check("a plain entry");
        append(&path, &filler("zy", "zz", 8_000));
        check("a filler");
        env.ok(&["fold", p, "--tokenizer", "pi"]);
        check("a fold's context_edit");
        append(&path, &big_tool_result("zx", &leaf));
        check("a branch from an older entry");
        let whole = std::fs::read(&path).unwrap();
        let torn = serde_json::to_string(&filler("zw", "zx", 600)).unwrap();
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(&torn.as_bytes()[..40]).unwrap();
        check("a torn line");
        let mut rewritten = whole.clone();
        rewritten.extend(format!("{}\n", filler("zv", "zz", 3_000)).as_bytes());
        std::fs::write(&path, rewritten).unwrap();
        check("a rewrite");
    }
}

/// After a plain entry is appended to a metered file, the meter reads only the new bytes: with
/// the file's first line blanked (so reading it all fails), it still prints the figure a fresh
/// store measures on the intact file.
#[test]
fn an_appended_plain_entry_is_measured_from_the_new_bytes_alone() {
    let env = TestEnv::new();
    let fresh = TestEnv::new();
    for seed in [3u64, 6] {
        let path = env.dir.path().join(format!("a{seed}.jsonl"));
        let p = path.to_str().unwrap();
        env.ok(&["generate-session", "--seed", &seed.to_string(), "-o", p]);
        let intact = fresh.dir.path().join(format!("a{seed}.jsonl"));
        for tokenizer in ["pi", "o200k"] {
            for profile in ["default", "aggressive", "conservative"] {
                let extra = ["--tokenizer", tokenizer, "--profile", profile];
                let first = json_of(&env.ok(&[&["meter", p, "--json"], &extra[..]].concat()));
                let mut bytes = std::fs::read(&path).unwrap();
                let header_end = bytes.iter().position(|&b| b == b'\n').unwrap();
                let header = bytes[..header_end].to_vec();
                bytes[..header_end].fill(b' ');
                std::fs::File::options().write(true).open(&path).unwrap().write_all(&bytes).unwrap();
                let id = format!("n{tokenizer}{profile}");
                append(&path, &big_tool_result(&id, &first["leafId"]));
                let grown = json_of(&env.ok(&[&["meter", p, "--json"], &extra[..]].concat()));
                assert_eq!(grown["leafId"], id.as_str());
                let mut whole = std::fs::read(&path).unwrap();
                whole[..header_end].copy_from_slice(&header);
                std::fs::write(&path, &whole).unwrap();
                std::fs::write(&intact, &whole).unwrap();
                // A copy made a while ago, not a file pi may have open (the dry run refuses that).
                crate::env::settled(&intact);
                let i = intact.to_str().unwrap();
                let expected = json_of(&fresh.ok(&[&["fold", i, "--dry-run", "--json"], &extra[..]].concat()));
                assert_eq!(grown["tokens"], expected["tokensFreed"], "seed {seed} {extra:?}");
                assert_eq!(grown["toolResults"], expected["toolResults"], "seed {seed} {extra:?}");
                assert_eq!(grown["blocks"], expected["blocks"], "seed {seed} {extra:?}");
            }
        }
    }
}

/// `meter --serve`: one reading per request line, in order, each the `--json` a single run
/// prints; an error is a line too and the server goes on; `FILE:LEAF` naming the new last entry
/// after an append is measured from the new bytes alone (the header is blanked, so a whole
/// parse would fail), and so is the plain `FILE` just after (same bytes, answered by the proof).
#[test]
fn meter_serve_answers_each_line_with_the_shortcuts() {
    let env = TestEnv::new();
    let fresh = TestEnv::new();
    let path = env.write("s.jsonl", generate(3, 60));
    let p = path.to_str().unwrap();
    let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(hour_ago).unwrap();
    let single = json_of(&env.ok(&["meter", p, "--json", "--tokenizer", "o200k"]));
    let mut child = env
        .cmd()
        .args(["meter", "--serve", "--tokenizer", "o200k"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |line: &str| -> Value {
        writeln!(stdin, "{line}").unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        json_of(&answer)
    };
    assert_eq!(ask(p), single);
    let missing = ask("/nonexistent/x.jsonl");
    assert!(missing["error"].as_str().unwrap().contains("/nonexistent/x.jsonl"), "{missing}");
    let mut bytes = std::fs::read(&path).unwrap();
    let header_end = bytes.iter().position(|&b| b == b'\n').unwrap();
    let header = bytes[..header_end].to_vec();
    bytes[..header_end].fill(b' ');
    std::fs::File::options().write(true).open(&path).unwrap().write_all(&bytes).unwrap();
    append(&path, &big_tool_result("served1", &single["leafId"]));
    let grown = ask(&format!("{p}:served1"));
    assert_eq!(grown["leafId"], "served1", "{grown}");
    assert_eq!(ask(p), grown, "touched moments ago, same bytes: the proof answers");
    // An explicit leaf that is not the last entry is measured whole: the blanked header shows.
    assert!(ask(&format!("{p}:{}", single["leafId"].as_str().unwrap()))["error"].is_string());
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let mut whole = std::fs::read(&path).unwrap();
    whole[..header_end].copy_from_slice(&header);
    let intact = fresh.write("s.jsonl", &whole);
    let expected =
        json_of(&fresh.ok(&["fold", intact.to_str().unwrap(), "--dry-run", "--json", "--tokenizer", "o200k"]));
    assert_eq!(
        (&grown["tokens"], &grown["toolResults"], &grown["blocks"]),
        (&expected["tokensFreed"], &expected["toolResults"], &expected["blocks"])
    );
}
