//! Store damage is said, never answered as "nothing there" (issue 28.2, 28.9, 28.10): a flipped
//! bit in a packed file's record makes every reader that needs it exit 3 saying the store is
//! corrupt, leaves every other record readable, and stops `gc`; a damaged meter memo is measured
//! again and named by `fsck`; a pack an interrupted write left without its index is told from
//! one whose index was lost.

use std::path::{Path, PathBuf};

use crate::env::TestEnv;

/// The store's packed files, oldest first.
fn packed_files(env: &TestEnv) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(env.store().join("packed")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// Flips one bit in the value of the record whose name starts with `name` in `file` (the
/// value starts within 16 bytes of the name's end in every format).
fn flip_in_record(file: &Path, name: &str) {
    let mut bytes = std::fs::read(file).unwrap();
    let at = bytes.windows(name.len()).position(|w| w == name.as_bytes()).expect("the record") + name.len() + 40;
    bytes[at] ^= 0x04;
    std::fs::write(file, bytes).unwrap();
}

/// The import record name of a session file.
fn state_name(path: &Path) -> String {
    shake_plumbing::store::state::name(std::fs::canonicalize(path).unwrap().to_str().unwrap())
}

fn assert_corrupt(out: &std::process::Output, names: &Path, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{what}: {stderr}");
    assert!(stderr.contains("corrupt") && stderr.contains(names.to_str().unwrap()), "{what}: {stderr}");
}

/// Two sessions imported together (one packed file); one bit flipped in the first one's import
/// state. Before: `sessions` listed neither (the damaged record hid the one beside it), exit 0,
/// `restore` of the first said "no session file", and `gc` ran and dropped what the damage hid.
#[test]
fn a_flipped_bit_in_a_packed_record_is_said_by_every_reader_and_stops_gc() {
    let env = TestEnv::new();
    let a = env.fixture("pi-v3-edge-edits.jsonl");
    let b = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    env.ok(&["import", a.to_str().unwrap(), b.to_str().unwrap()]);
    let refs = env.ok(&["show-ref"]);
    let [file] = &packed_files(&env)[..] else { panic!("one packed file") };
    flip_in_record(file, &state_name(&a));
    assert_corrupt(&env.run(&["sessions"]), file, "sessions");
    assert_corrupt(&env.run(&["sessions", "--json"]), file, "sessions --json");
    assert_corrupt(&env.run(&["restore", a.to_str().unwrap(), "-o", "-"]), file, "restore");
    // The damage stays where it is: the other session and every ref still read.
    assert_eq!(env.ok(&["show-ref"]), refs);
    let out = env.run(&["restore", b.to_str().unwrap(), "-o", "-"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, std::fs::read(&b).unwrap());
    // Nothing is collected, merged or re-imported over it.
    let before = std::fs::read(file).unwrap();
    assert_corrupt(&env.run(&["gc"]), file, "gc");
    assert_corrupt(&env.run(&["gc", "--dry-run"]), file, "gc --dry-run");
    assert_corrupt(&env.run(&["import", a.to_str().unwrap()]), file, "import");
    assert_eq!(packed_files(&env), std::slice::from_ref(file));
    assert_eq!(std::fs::read(file).unwrap(), before);
    let out = env.run(&["fsck"]);
    assert_eq!(out.status.code(), Some(3));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains(&state_name(&a)) && report.contains("damaged"), "{report}");
}

/// A pack whose writer died before its index (and so before the refs that would name its
/// objects) is what `docs/format.md` says: ignored, safe to delete. Before, `fsck` called it
/// corrupt ("do not delete it"), exit 3, as it does a pack whose index was lost.
#[test]
fn a_pack_an_interrupted_write_left_is_a_note_safe_to_delete() {
    let env = TestEnv::new();
    env.ok(&["import", env.fixture("pi-v3-edge-edits.jsonl").to_str().unwrap()]);
    // The pack another import writes, as a writer killed between the two renames leaves it.
    let other = TestEnv::new();
    other.ok(&["import", other.fixture("pi-v3-branch-compaction-edit.jsonl").to_str().unwrap()]);
    let pack = crate::env::first_pack(&other.store().join("packs"));
    let left = env.store().join("packs").join(pack.file_name().unwrap());
    std::fs::copy(&pack, &left).unwrap();
    let out = env.run(&["fsck"]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}");
    assert!(report.contains(left.to_str().unwrap()) && report.contains("safe to delete"), "{report}");
    assert!(!report.contains("do not delete"), "{report}");
}

/// Every one-byte flip of a meter memo: the meter answers what it answered before (the memo
/// fails its checksum and the session is measured again), and `fsck` names the memo. Before, a
/// flip inside the figures was printed as they decoded.
#[test]
fn a_flipped_byte_in_a_meter_memo_is_measured_again_and_named_by_fsck() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    let p = path.to_str().unwrap();
    let before = env.ok(&["meter", p, "--json"]);
    let memos: Vec<PathBuf> =
        std::fs::read_dir(env.store().join("cache/meter")).unwrap().map(|e| e.unwrap().path()).collect();
    let [memo] = &memos[..] else { panic!("one memo: {memos:?}") };
    let good = std::fs::read(memo).unwrap();
    // Past the first bytes (a flip in the magic reads as an older memo: ignored, re-measured).
    for at in (8..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        std::fs::write(memo, &bad).unwrap();
        if at == 8 {
            let out = env.run(&["fsck"]);
            let report = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(3), "{report}");
            assert!(report.contains(memo.to_str().unwrap()) && report.contains("damaged meter memo"), "{report}");
        }
        assert_eq!(env.ok(&["meter", p, "--json"]), before, "flip at {at}");
    }
}

/// A Claude Code fork's folds are recorded in the store (`refs/forks/<id>`): with that record
/// damaged, `status` and `log` of the fork exit 3 saying so. Before, they read no record and
/// said the fork had no fold (`regions` 0, exit 0) while `fsck` exited 3.
#[test]
fn a_forks_damaged_records_are_said_by_status_and_log() {
    let env = TestEnv::new();
    let path = crate::claude_host::install(&env, &crate::env::fixture_path("claude/bash-read"));
    let fold: serde_json::Value =
        serde_json::from_str(&env.ok(&["fold", "--json", "--profile", "default", path.to_str().unwrap()])).unwrap();
    let fork = PathBuf::from(fold["fork"]["path"].as_str().unwrap());
    let f = fork.to_str().unwrap();
    let status: serde_json::Value = serde_json::from_str(&env.ok(&["status", "--json", f])).unwrap();
    assert!(status["regions"].as_u64().unwrap() > 0, "{status}");
    let name = format!("refs/forks/{}", fold["fork"]["sessionId"].as_str().unwrap());
    let holding: Vec<PathBuf> = packed_files(&env)
        .into_iter()
        .filter(|p| std::fs::read(p).unwrap().windows(name.len()).any(|w| w == name.as_bytes()))
        .collect();
    assert!(!holding.is_empty());
    holding.iter().for_each(|p| flip_in_record(p, &name));
    let newest = holding.last().unwrap();
    assert_corrupt(&env.run(&["status", "--json", f]), newest, "status");
    assert_corrupt(&env.run(&["log", f]), newest, "log");
}

/// `shake log` of a host that rewrites its files (oh-my-pi) reads the session's versions from
/// the store: a damaged import state is said (exit 3, naming the packed file), never taken for a
/// session not imported yet (whose versions the log would then look up by name).
#[test]
fn a_rewriting_hosts_log_says_a_damaged_store() {
    let env = TestEnv::new();
    let session =
        env.write("omp.jsonl", std::fs::read(crate::env::fixture_path("omp/omp-large-session.jsonl")).unwrap());
    let s = session.to_str().unwrap();
    env.ok(&["import", s]);
    assert!(env.ok(&["log", s]).contains("1 version imported"), "{}", env.ok(&["log", s]));
    let [file] = &packed_files(&env)[..] else { panic!("one packed file") };
    flip_in_record(file, &state_name(&session));
    assert_corrupt(&env.run(&["log", s]), file, "log");
    assert_corrupt(&env.run(&["log", "--json", s]), file, "log --json");
}
