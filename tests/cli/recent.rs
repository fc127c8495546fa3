//! "The most recent session here" on equal modification times: for each host, shake's default
//! session (`shake rev-parse --json`) is the file the host's own `--continue` opens, asked of the
//! host's own code: pi 1.6.0's `SessionManager.continueRecent` (`tests/oracle/recent.mjs`), OMP
//! 18.2.11's `findMostRecentNonEmptySession` (`tests/omp-oracle/recent.ts`) and Claude Code
//! 2.1.328's `claude -p --continue` itself (`tests/claude-oracle/probe.mjs --continue`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::env::{fixture_path, json_stdout, Oracle, TestEnv};
use crate::omp::OmpOracle;

/// One instant in the past every file of a test is set to (plus `nanos`).
fn set_mtime(path: &Path, nanos: u64) {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    std::fs::File::options().write(true).open(path).unwrap().set_modified(base + Duration::from_nanos(nanos)).unwrap();
}

/// The file shake takes with no session named (`--host` when given).
fn shakes_pick(env: &TestEnv, host: &[&str]) -> PathBuf {
    let args: Vec<&str> = host.iter().copied().chain(["rev-parse", "--json"]).collect();
    let parsed: Value = serde_json::from_str(&env.ok(&args)).unwrap();
    PathBuf::from(parsed["file"].as_str().unwrap())
}

/// Birth times tick coarsely: files created this far apart have distinct ones.
fn apart() {
    std::thread::sleep(Duration::from_millis(25));
}

#[test]
fn pi_default_session_is_pis_continue_on_equal_mtimes() {
    let env = TestEnv::new();
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    let pis = || {
        let v = Oracle::run("recent.mjs", &[env.agent_dir().to_str().unwrap(), cwd.to_str().unwrap()]);
        PathBuf::from(v["session"].as_str().unwrap_or_else(|| panic!("pi found no session: {v}")))
    };
    let session = crate::synthetic::rich().text;
    // Created in an order that is neither the names' nor its reverse (a folder lists in neither).
    let files: Vec<PathBuf> = ["0199aaaa-0001", "0199aaaa-0003", "0199aaaa-0002"]
        .iter()
        .map(|id| {
            apart();
            env.pi_session(id, &session)
        })
        .collect();
    for f in &files {
        set_mtime(f, 0);
    }
    assert_eq!(pis(), files[0], "pi: the smallest name of the newest");
    assert_eq!(shakes_pick(&env, &[]), pis());
    // Half a millisecond later is newer for pi (Node's mtimeMs keeps the fraction).
    set_mtime(&files[1], 500_000);
    assert_eq!(pis(), files[1]);
    assert_eq!(shakes_pick(&env, &[]), pis());
    // A newer `.jsonl` that is not a session (its first line that parses is no header) is
    // passed over, as is one whose header is not a session's.
    let dir = files[0].parent().unwrap();
    let junk = dir.join("2026-01-01T00-00-00-000Z_0199aaaa-0000.jsonl");
    std::fs::write(&junk, "not json\n0\n{\"type\":\"message\",\"id\":\"x\"}\n").unwrap();
    let no_id = dir.join("2026-01-01T00-00-00-000Z_0199aaaa-0004.jsonl");
    std::fs::write(&no_id, format!("{{\"type\":\"session\",\"id\":7}}\n{session}")).unwrap();
    set_mtime(&junk, 900_000);
    set_mtime(&no_id, 900_000);
    assert_eq!(pis(), files[1]);
    assert_eq!(shakes_pick(&env, &[]), pis());
    // Behind the junk, a blank and an unparseable line before a header are skipped.
    let late = dir.join("2026-01-01T00-00-00-000Z_0199aaaa-0005.jsonl");
    std::fs::write(&late, format!("\nnot json\n{session}")).unwrap();
    set_mtime(&late, 900_000);
    assert_eq!(pis(), late);
    assert_eq!(shakes_pick(&env, &[]), pis());
}

#[test]
fn omp_default_session_is_omps_continue_on_equal_mtimes() {
    let env = TestEnv::new();
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap();
    let home = env.dir.path().join("home");
    let name = shake_plumbing::omp::paths::session_dir_name(
        &canonical(&env.cwd()),
        &canonical(&home),
        &canonical(Path::new("/tmp")),
    );
    let dir = home.join(".omp/agent/sessions").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let fixture = std::fs::read_to_string(fixture_path("omp/omp-large-session.jsonl")).unwrap();
    let header = r#""timestamp":"2025-11-20T23:33:50.805Z""#;
    assert!(fixture.lines().nth(1).unwrap().contains(header));
    // (file name, the header's timestamp): the newest header is neither the greatest nor the
    // smallest name.
    let write = |id: &str, stamp: &str| {
        let path = dir.join(format!("2025-11-20T23-33-50-805Z_{id}.jsonl"));
        std::fs::write(&path, fixture.replacen(header, &format!(r#""timestamp":"{stamp}""#), 1)).unwrap();
        set_mtime(&path, 0);
        path
    };
    let a = write("0194f5a0-0000-7000-8000-00000000000a", "2025-11-20T10:00:00.000Z");
    let b = write("0194f5a0-0000-7000-8000-00000000000b", "2025-11-22T10:00:00.000Z");
    let c = write("0194f5a0-0000-7000-8000-00000000000c", "2025-11-21T10:00:00.000Z");
    let omps = || {
        let v = OmpOracle::run("recent.ts", &[dir.to_str().unwrap()], &[]);
        PathBuf::from(v["session"].as_str().unwrap_or_else(|| panic!("OMP found no session: {v}")))
    };
    assert_eq!(omps(), b, "OMP: the newest header");
    assert_eq!(shakes_pick(&env, &["--host", "omp"]), omps());
    // Equal headers: the greatest name.
    std::fs::write(&b, fixture.replacen(header, r#""timestamp":"2025-11-20T10:00:00.000Z""#, 1)).unwrap();
    std::fs::write(&c, fixture.replacen(header, r#""timestamp":"2025-11-20T10:00:00.000Z""#, 1)).unwrap();
    for f in [&a, &b, &c] {
        set_mtime(f, 0);
    }
    assert_eq!(omps(), c);
    assert_eq!(shakes_pick(&env, &["--host", "omp"]), omps());
    // Within one millisecond is a tie for OMP (a `Date`); a millisecond later is not.
    set_mtime(&a, 900_000);
    assert_eq!(omps(), c);
    assert_eq!(shakes_pick(&env, &["--host", "omp"]), omps());
    set_mtime(&a, 1_000_000);
    assert_eq!(omps(), a);
    assert_eq!(shakes_pick(&env, &["--host", "omp"]), omps());
}

/// Writes Claude Code's `bash-read` transcript as session `id` of the sandbox's directory.
fn claude_transcript(env: &TestEnv, id: &str) -> PathBuf {
    let fixture = fixture_path("claude/bash-read");
    let meta: Value = serde_json::from_slice(&std::fs::read(fixture.join("meta.json")).unwrap()).unwrap();
    let text = std::fs::read_to_string(fixture.join("transcript.jsonl")).unwrap();
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    let text = text
        .replace(meta["sessionId"].as_str().unwrap(), id)
        .replace(meta["cwd"].as_str().unwrap(), cwd.to_str().unwrap());
    crate::claude_host::install_bytes(env, id, text.as_bytes())
}

/// The session `claude -p --continue` resumes in the sandbox, as a file beside `sibling`. Its
/// bytes are put back afterwards, but its mtime is then new (to the millisecond at best).
fn claudes(env: &TestEnv, sibling: &Path) -> PathBuf {
    let dir = crate::claude_live::claude_oracle();
    let mut cmd = Command::new("node");
    cmd.arg(dir.join("probe.mjs"))
        .arg("--continue")
        .arg("--home")
        .arg(env.dir.path().join("home"))
        .arg("--cwd")
        .arg(std::fs::canonicalize(env.cwd()).unwrap());
    let v = json_stdout(cmd, "claude-oracle probe.mjs --continue");
    let id = v["session"].as_str().unwrap();
    sibling.with_file_name(format!("{id}.jsonl"))
}

#[test]
fn claude_default_session_is_claude_codes_continue_on_equal_mtimes() {
    // Created in the order 1, 3, 2: Claude Code takes the newest birth, not a name.
    let env = TestEnv::new();
    let ids = [
        "11111111-1111-4111-8111-111111111111",
        "33333333-3333-4333-8333-333333333333",
        "22222222-2222-4222-8222-222222222222",
    ];
    let files: Vec<PathBuf> = ids
        .iter()
        .map(|id| {
            apart();
            claude_transcript(&env, id)
        })
        .collect();
    let born = |p: &Path| p.metadata().unwrap().created().ok();
    if born(&files[0]).is_none() || born(&files[0]) == born(&files[1]) || born(&files[1]) == born(&files[2]) {
        eprintln!("no distinct birth times on this filesystem: Claude Code's order is its listing's here");
        return;
    }
    for f in &files {
        set_mtime(f, 0);
    }
    // shake first: putting the continued transcript back gives it a new mtime.
    let shake = shakes_pick(&env, &["--host", "claude"]);
    assert_eq!(claudes(&env, &files[0]), files[2], "Claude Code: the newest birth");
    assert_eq!(shake, files[2]);
    // Within one millisecond is still a tie; the newest birth still wins.
    let env = TestEnv::new();
    let files: Vec<PathBuf> = ids[..2]
        .iter()
        .map(|id| {
            apart();
            claude_transcript(&env, id)
        })
        .collect();
    set_mtime(&files[0], 900_000);
    set_mtime(&files[1], 0);
    let shake = shakes_pick(&env, &["--host", "claude"]);
    assert_eq!(claudes(&env, &files[0]), files[1]);
    assert_eq!(shake, files[1]);
}
