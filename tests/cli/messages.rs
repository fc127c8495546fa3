//! Messages for people that must not mislead: the "pi may have this open" warning only after
//! another program's write, no blame on pi for the user's own `--branch`, the session named,
//! and revisions that say what went wrong.

use std::io::Write;

use crate::env::TestEnv;
use crate::synthetic;

const LIVE: &str = "if pi has this session open";

/// Runs `shake ARGS…`, asserts success, and returns stderr.
fn stderr_of(env: &TestEnv, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(out.status.success(), "shake {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stderr).unwrap()
}

/// A write into a file another program wrote in the last 30 s is refused before anything is
/// written, in a dry run as in the real run (issue 32.4), unless `--force`; shake's own last
/// write does not count.
#[test]
fn a_write_just_after_another_programs_write_is_refused_unless_forced() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let path = env.write("rich.jsonl", &rich.text);
    let p = path.to_str().unwrap();
    let just_written = || {
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(std::time::SystemTime::now()).unwrap()
    };
    // Written just now by someone else (here: the test; in life: pi).
    just_written();
    let before = std::fs::read(&path).unwrap();
    for args in [&["fold", p][..], &["fold", p, "--dry-run"], &["fold", p, "--json"]] {
        let err = env.fails(args, 1);
        assert!(err.contains("by another program: if pi has this session open") && err.contains("--force"), "{err}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
    assert!(!stderr_of(&env, &["fold", p, "--force"]).contains(LIVE));
    // shake's own writes since: no refusal.
    env.ok(&["undo", p]);
    env.ok(&["fold", p, "--scope", "thinking"]);
    // pi appends an entry: refused again.
    let last_id = env.ok(&["rev-parse", p]).trim_end().split_once(' ').unwrap().1.to_string();
    let line = format!(
        "{{\"type\":\"message\",\"id\":\"p1000001\",\"parentId\":\"{last_id}\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"next\",\"timestamp\":1}}}}\n"
    );
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(line.as_bytes()).unwrap();
    assert!(env.fails(&["undo", p], 1).contains("by another program"));
    // Nothing to write: nothing refused.
    crate::env::settled(&path);
    env.ok(&["fold", p]);
    just_written();
    assert!(env.ok(&["fold", p]).contains("Nothing to fold"));
}

#[test]
fn a_fold_left_behind_by_branch_is_not_blamed_on_pi() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let path = env.write("rich.jsonl", &rich.text);
    let p = path.to_str().unwrap();
    env.ok(&["fold", p]);
    env.ok(&["fold", p, "--branch", &rich.side_leaf, "--force"]);
    let out = env.ok(&["status", p]);
    assert!(!out.contains("pi continued"), "{out}");
    assert!(out.contains("On another branch: log entry") && out.contains("--branch"), "{out}");
    let status: serde_json::Value = serde_json::from_str(&env.ok(&["status", p, "--json"])).unwrap();
    assert_eq!(status["stranded"][0]["byShake"], true);
}

#[test]
fn output_for_people_names_the_session_it_was_not_given() {
    let env = TestEnv::new();
    let path = env.pi_session("0199aaaa-1111", synthetic::rich().text);
    let p = path.to_str().unwrap();
    let short = format!(
        "{}/{}",
        path.parent().unwrap().file_name().unwrap().to_str().unwrap(),
        "2026-01-01T00-00-00-000Z_0199aaaa-1111.jsonl"
    );
    let implicit = format!("Session {short} (pi's current session here)\n");
    for args in [&["fold"][..], &["status"], &["log"], &["show"], &["undo", "--dry-run"], &["undo"]] {
        let out = env.ok(args);
        assert!(out.starts_with(&implicit), "{args:?}: {out}");
        assert_eq!(out.matches("Session ").count(), 1, "once: {out}");
        let by_id = env.ok(&[args, &["0199aaaa"]].concat());
        assert!(by_id.starts_with(&format!("Session {short}\n")), "{args:?}: {by_id}");
        let named = env.ok(&[args, &[p]].concat());
        assert!(!named.contains("Session "), "a file named on the command line is not named again: {named}");
        assert!(!env.ok(&[args, &["--json"]].concat()).contains("Session "), "JSON is unchanged");
    }
}

#[test]
fn revisions_that_name_nothing_say_what_to_type() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    env.pi_session("0199aaaa-1111", &rich.text);
    env.pi_session("0199aaab-2222", &rich.text);
    // An entry id where a session was expected: the hint names it as `:ENTRY`.
    let err = env.fails(&["show", &rich.side_leaf], 1);
    assert!(
        err.contains(&format!(
            "hint: {} is an entry of the current session here: name it `:{}`",
            rich.side_leaf, rich.side_leaf
        )),
        "{err}"
    );
    assert!(env.fails(&["show", "zzzz"], 1).contains("shake sessions"), "no such id: no entry hint");
    // An ambiguous session prefix lists its candidates.
    let err = env.fails(&["status", "0199aa"], 1);
    assert!(
        err.contains("matches 2 sessions: ")
            && err.contains("_0199aaaa-1111.jsonl")
            && err.contains("_0199aaab-2222.jsonl"),
        "{err}"
    );
    // An ambiguous entry prefix lists its candidates.
    let err = env.fails(&["show", "0199aaaa:e00000"], 1);
    assert!(err.contains("is ambiguous: e0000001, e0000002, e0000003, e0000004, e0000005 and "), "{err}");
    // A directory.
    let dir = env.cwd();
    let err = env.fails(&["status", dir.to_str().unwrap()], 1);
    assert!(err.contains("is a directory, not a session file"), "{err}");
}

#[test]
fn diff_and_sessions_speak_to_people_and_keep_records_for_scripts() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    let p = path.to_str().unwrap();
    let (a, b) = (format!("{p}:5f607182"), format!("{p}:2d3e4f50"));
    let human = env.run(&["diff", &a, &b]);
    assert_eq!(human.status.code(), Some(1));
    let text = String::from_utf8(human.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("A  ") && lines[0].contains(":5f607182") && lines[0].ends_with("tokens in context"),
        "{text}"
    );
    assert!(lines[1].starts_with("B  ") && lines[1].contains(":2d3e4f50"), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("ID ") && l.contains("  TYPE  ") && l.ends_with("  B")), "{text}");
    let last = lines.last().unwrap();
    assert!(
        last.starts_with("The model sees ") && last.contains(" tokens at A, ~") && last.ends_with("Tokenizer: o200k."),
        "{text}"
    );
    let same = env.ok(&["diff", &a, &a]);
    assert!(same.ends_with("Same leaf: the model sees the same context.\n"), "{same}");
    // Scripts: --porcelain and -z keep the records.
    let records = env.run(&["diff", &a, &b, "--porcelain"]).stdout;
    assert!(String::from_utf8(records.clone()).unwrap().starts_with("=\t"));
    assert_eq!(
        env.run(&["diff", &a, &b, "-z"]).stdout,
        String::from_utf8(records).unwrap().replace(['\t', '\n'], "\0").into_bytes()
    );

    let sessions = env.ok(&["sessions"]);
    let lines: Vec<&str> = sessions.lines().collect();
    assert!(lines[0].starts_with("SESSION") && lines[0].ends_with("FILE"), "{sessions}");
    assert_eq!(lines.len(), 3, "{sessions}");
    assert!(lines[2].starts_with("1 session in 1 family"), "{sessions}");
    assert!(env.ok(&["sessions", "--porcelain"]).starts_with("session\t"));
}

/// Every key of `v` that shake names (not inside pi's own content) is camelCase.
fn snake_keys(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let camel = k.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && k.chars().all(|c| c.is_ascii_alphanumeric());
                if !camel {
                    out.push(format!("{at}.{k}"));
                }
                // pi's content and messages carry pi's (and tools') own keys.
                if !["content", "replacement", "messages", "arguments", "details"].contains(&k.as_str()) {
                    snake_keys(v, &format!("{at}.{k}"), out);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| snake_keys(v, at, out)),
        _ => {}
    }
}

#[test]
fn json_keys_are_camel_case_in_every_command() {
    let env = TestEnv::new();
    let path = env.write("rich.jsonl", synthetic::rich().text);
    let p = path.to_str().unwrap();
    let fork = env.write("fork.jsonl", synthetic::rich().text);
    let f = fork.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["import", p],
        vec!["fold", p, "--dry-run"],
        vec!["fold", p, "--plan"],
        vec!["fold", p],
        vec!["undo", p, "--dry-run"],
        vec!["undo", p, "--plan"],
        vec!["status", p],
        vec!["log", p],
        vec!["show", p],
        vec!["regions", p],
        vec!["meter", p],
        vec!["diff", p, f],
        vec!["audit", "fork", p, f],
        vec!["audit", "rewind", p],
        vec!["rev-parse", p],
        vec!["ls-leaves", p],
        vec!["sessions"],
        vec!["count-objects"],
        vec!["count-tokens", p],
        vec!["tokens", p],
        vec!["fsck"],
        vec!["gc", "--dry-run"],
        vec!["project", p],
    ];
    let mut bad = Vec::new();
    for args in &commands {
        let out = env.run(&[args.as_slice(), &["--json"]].concat());
        let text = String::from_utf8(out.stdout).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: {e}: {text}"));
        snake_keys(&value, &args.join(" "), &mut bad);
    }
    assert!(bad.is_empty(), "keys that are not camelCase: {bad:?}");
}

#[test]
fn man_dir_writes_every_page_shake_1_refers_to() {
    let env = TestEnv::new();
    let dir = env.dir.path().join("man");
    let listed = env.ok(&["man", "--dir", dir.to_str().unwrap()]);
    let main = std::fs::read_to_string(dir.join("shake.1")).unwrap();
    assert_eq!(main, env.ok(&["man"]), "shake.1 is the page `shake man` prints");
    let refs: Vec<String> = main
        .split("shake\\-")
        .skip(1)
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name.replace("\\-", "-")))
        .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        .collect();
    assert!(refs.iter().any(|r| r == "fold") && refs.iter().any(|r| r == "audit"), "{refs:?}");
    for name in &refs {
        let page = dir.join(format!("shake-{name}.1"));
        assert!(page.is_file(), "shake.1 refers to shake-{name}(1)");
        assert!(listed.contains(page.to_str().unwrap()), "listed: {listed}");
    }
    assert!(dir.join("shake-audit-fork.1").is_file(), "a group's subcommands get pages too");
    assert!(!dir.join("shake-generate-session.1").exists(), "hidden commands get none");
}

/// The man pages carry what clap does not write: each command for people's EXAMPLES (the same
/// as its `--help`), and on `shake.1` the ENVIRONMENT (every variable shake reads), EXIT STATUS
/// and FILES.
#[test]
fn man_pages_have_examples_environment_exit_status_and_files() {
    let env = TestEnv::new();
    let dir = env.dir.path().join("man");
    env.ok(&["man", "--dir", dir.to_str().unwrap()]);
    let main = std::fs::read_to_string(dir.join("shake.1")).unwrap();
    for section in
        [".SH EXAMPLES", ".SH ENVIRONMENT", ".SH \"EXIT STATUS\"", ".SH FILES", "SHAKE_DIR", "CLAUDE_CONFIG_DIR"]
    {
        assert!(main.contains(section), "shake.1 lacks {section}");
    }
    let fold = std::fs::read_to_string(dir.join("shake-fold.1")).unwrap();
    assert!(fold.contains(".SH EXAMPLES") && fold.contains("shake fold \\-\\-dry\\-run"), "{fold}");
    assert!(!fold.contains(".SH ENVIRONMENT"), "the shared sections are on shake.1 alone");
    let help = env.ok(&["fold", "--help"]);
    assert!(help.contains("Examples:\n  shake fold --example\n") && help.contains("Global Options:"), "{help}");
}

/// `shake` alone prints a short usage and the commands for people (meter first) on stderr,
/// exit 2, not the whole help; `--version` names the commit it was built from.
#[test]
fn shake_alone_is_short_and_the_version_names_the_commit() {
    let env = TestEnv::new();
    let out = env.run(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("Usage: shake") && stderr.contains("Commands for people:\n  meter"), "{stderr}");
    assert!(!stderr.contains("cat-object") && stderr.lines().count() < 20, "{stderr}");
    let version = env.ok(&["--version"]);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let expected = match head {
        Some(commit) => format!("shake {} ({commit})\n", env!("CARGO_PKG_VERSION")),
        None => format!("shake {}\n", env!("CARGO_PKG_VERSION")),
    };
    assert_eq!(version, expected);
}

/// Errors that say the way out (issue 32.9): a full session id in two folders names both files
/// and how to pick one; an id that names nothing says how to list what there is; an entry that
/// is not there says how to list the entries; an output file that exists says so in words.
#[test]
fn errors_say_the_way_out() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let here = env.pi_session("0199aaaa-1111", &rich.text);
    // The same session copied into another project's folder: the full id is in both.
    let other = env.agent_dir().join("sessions/--elsewhere--");
    std::fs::create_dir_all(&other).unwrap();
    let there = other.join(here.file_name().unwrap());
    std::fs::copy(&here, &there).unwrap();
    let err = env.fails(&["status", "0199aaaa-1111"], 1);
    assert!(err.contains("matches 2 sessions: ") && err.contains("--elsewhere--"), "{err}");
    assert!(err.contains("hint: both have that id: name one by its path"), "{err}");
    assert!(!err.contains("type more of the id"), "the whole id was typed: {err}");
    // An id that names nothing: `shake sessions` lists only what was imported.
    let err = env.fails(&["show", "zzzz"], 1);
    assert!(err.contains("`shake import` then `shake sessions`"), "{err}");
    // No such entry: how to list the entries.
    let p = here.to_str().unwrap();
    let err = env.fails(&["show", &format!("{p}:zzzz")], 1);
    assert!(err.contains("no entry \"zzzz\"") && err.contains("hint: `shake ls-entries"), "{err}");
    // An output file that exists.
    let taken = env.write("taken.jsonl", "");
    let err = env.fails(&["export", p, "-o", taken.to_str().unwrap()], 1);
    assert!(err.contains("taken.jsonl exists; not overwritten"), "{err}");
    assert!(!err.contains("os error"), "{err}");
}
