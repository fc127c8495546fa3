//! The store end to end: import (idempotent, incremental, rewrites, forks), byte-exact
//! cat-session, refs with compare-and-swap, and fsck on corrupted packs, indexes and refs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::env::{fixtures, TestEnv};

const HEAD: &str = r#"{"type":"session","version":3,"id":"0aa11bb2-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

fn entry(id: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"{text}"}}}}"#
    )
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

fn import(env: &TestEnv, path: &Path) -> Value {
    json(&env.ok(&["import", "--json", path.to_str().unwrap()]))["files"][0].clone()
}

fn objects(env: &TestEnv) -> Value {
    json(&env.ok(&["count-objects", "--json"]))
}

fn cat_session(env: &TestEnv, args: &[&str]) -> Vec<u8> {
    let out = env.cmd().arg("cat-session").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Odd files next to the fixtures: no final newline, invalid UTF-8, CRLF, empty, blank lines.
fn odd_files(env: &TestEnv) -> Vec<PathBuf> {
    vec![
        env.write("no-newline.jsonl", format!("{HEAD}\n{}", entry("a1", None, "x"))),
        env.write(
            "invalid-utf8.jsonl",
            [format!("{HEAD}\n").as_bytes(), b"{\"type\":\"message\",\"id\":\"b\xff\xfe\"}\n\xc3\x28\n"].concat(),
        ),
        env.write("crlf.jsonl", format!("{HEAD}\r\n{}\r\n\r\n", entry("c1", None, "y"))),
        env.write("empty.jsonl", ""),
        env.write("blank.jsonl", "\n\n  \n"),
    ]
}

#[test]
fn import_twice_adds_nothing_and_cat_session_is_byte_exact() {
    let env = TestEnv::new();
    let mut files: Vec<PathBuf> = fixtures().iter().map(|n| env.fixture(n)).collect();
    files.extend(odd_files(&env));
    let args: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
    let first = json(&env.ok(&[&["import", "--json"], args.as_slice()].concat()));
    assert!(first["files"].as_array().unwrap().iter().all(|f| f["unchanged"] == false));
    let counts = objects(&env);
    let second = json(&env.ok(&[&["import", "--json"], args.as_slice()].concat()));
    assert!(second["files"].as_array().unwrap().iter().all(|f| f["unchanged"] == true && f["newObjects"] == 0));
    assert_eq!(objects(&env), counts);
    for path in &files {
        assert_eq!(cat_session(&env, &[path.to_str().unwrap()]), std::fs::read(path).unwrap(), "{}", path.display());
    }
    // By session id (prefix) too, once imported.
    let branch = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    assert_eq!(cat_session(&env, &["019ad5e2-7c1a"]), std::fs::read(branch).unwrap());
    env.ok(&["fsck"]);
}

#[test]
fn malformed_lines_are_stored_and_warned_with_line_numbers() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-malformed-lines.jsonl");
    let report = import(&env, &path);
    let lines: Vec<u64> = report["warnings"].as_array().unwrap().iter().map(|w| w["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, [1, 6, 9]);
    assert_eq!(report["entries"], 3);
    let stderr = String::from_utf8(env.run(&["import", "--json", path.to_str().unwrap()]).stderr).unwrap();
    assert!(stderr.is_empty(), "an unchanged file is not parsed again: {stderr}");
}

#[test]
fn appends_read_only_new_bytes_and_partial_lines_wait() {
    let env = TestEnv::new();
    let v1 = format!("{HEAD}\n{}\n", entry("a1", None, "one"));
    let path = env.write("s.jsonl", &v1);
    let r1 = import(&env, &path);
    // The header and the entry, a node, the version and the node table's chunk.
    assert_eq!((r1["entries"].as_u64(), r1["newObjects"].as_u64()), (Some(1), Some(5)));

    // A half-written line: stored so the file rebuilds, but not read as an entry yet.
    let v2 = format!("{v1}{}", &entry("a2", Some("a1"), "two")[..30]);
    std::fs::write(&path, &v2).unwrap();
    let r2 = import(&env, &path);
    assert_eq!(r2["bytes"].as_u64(), Some(30));
    assert_eq!(r2["entries"], 1);
    assert!(r2["warnings"][0]["message"].as_str().unwrap().contains("partial last line"));
    assert_eq!(cat_session(&env, &[path.to_str().unwrap()]), v2.as_bytes());

    let v3 = format!("{v1}{}\n{}\n", entry("a2", Some("a1"), "two"), entry("a3", Some("a2"), "three"));
    std::fs::write(&path, &v3).unwrap();
    let r3 = import(&env, &path);
    assert_eq!(r3["entries"], 3);
    assert_eq!(r3["bytes"].as_u64(), Some((v3.len() - v1.len()) as u64), "only the bytes after the committed prefix");
    assert_eq!(r3["newObjects"], 2 + 2 + 1 + 1, "two entries, two nodes, one version, one node table chunk");
    assert!(r3["warnings"].as_array().unwrap().is_empty());
    for (n, bytes) in [("1", &v1), ("2", &v2), ("3", &v3)] {
        assert_eq!(cat_session(&env, &[path.to_str().unwrap(), "--version", n]), bytes.as_bytes());
    }
    env.fails(&["cat-session", path.to_str().unwrap(), "--version", "4"], 1);

    // Node ids follow parentId: the same path in a fresh file ends at the same node.
    let last_node = |p: &Path| {
        let version = cat_object(&env, "-p", import(&env, p)["version"].as_str().unwrap());
        let text = String::from_utf8(version).unwrap();
        text.lines().filter_map(|l| l.strip_prefix("path ")).next_back().map(|l| l[..64].to_string())
    };
    let grown = last_node(&path);
    let fresh = env.write("same.jsonl", &v3);
    assert_eq!(last_node(&fresh), grown);
    assert_eq!(cat_object(&env, "-t", &grown.unwrap()), b"node\n");
    env.ok(&["fsck"]);
}

fn cat_object(env: &TestEnv, flag: &str, id: &str) -> Vec<u8> {
    env.cmd().args(["cat-object", flag, id]).output().unwrap().stdout
}

#[test]
fn a_rewritten_file_gets_a_new_version_and_keeps_the_old() {
    let env = TestEnv::new();
    let before = std::fs::read(env.fixture("pi-mono-before-compaction.v1.jsonl")).unwrap();
    let path = env.write("s.jsonl", &before);
    import(&env, &path);
    // What pi's v1→v3 migration does: the same session rewritten in place.
    let after = std::fs::read(env.fixture("pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl")).unwrap();
    std::fs::write(&path, &after).unwrap();
    let r = import(&env, &path);
    assert_eq!(r["rewritten"], true);
    assert_eq!(cat_session(&env, &[path.to_str().unwrap()]), after);
    assert_eq!(cat_session(&env, &[path.to_str().unwrap(), "--version", "1"]), before);
    env.ok(&["fsck"]);
}

#[test]
fn a_fork_shares_its_objects() {
    let env = TestEnv::new();
    let original = env.fixture("pi-mono-before-compaction.v3-migrated-by-pi-1.6.0.jsonl");
    import(&env, &original);
    let before = objects(&env);
    let text = std::fs::read_to_string(&original).unwrap();
    let header = r#"{"type":"session","version":3,"id":"f0f0f0f0-0000-7000-8000-000000000002","timestamp":"2026-01-02T00:00:00.000Z","cwd":"/p","parentSession":"x.jsonl"}"#;
    let copied: Vec<&str> = text.lines().skip(1).take(600).collect();
    let fork = env.write("fork.jsonl", format!("{header}\n{}\n", copied.join("\n")));
    let r = import(&env, &fork);
    assert_eq!(r["newObjects"], 3, "the new header, one version and its node table");
    let after = objects(&env);
    let grown = after["bytes"].as_u64().unwrap() - before["bytes"].as_u64().unwrap();
    // Its node table holds each copied entry's id and node (under 64 bytes an entry); beyond
    // that, less than 1% of the source.
    let table = 64 * copied.len() as u64;
    assert!(grown < before["bytes"].as_u64().unwrap() / 100 + table, "a fork adds {grown} bytes");
    assert_eq!(cat_session(&env, &[fork.to_str().unwrap()]), std::fs::read(&fork).unwrap());
}

/// The pack file of a store that holds one pack.
fn only_pack(env: &TestEnv) -> PathBuf {
    let packs: Vec<PathBuf> = std::fs::read_dir(env.store().join("packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pack"))
        .collect();
    assert_eq!(packs.len(), 1);
    packs[0].clone()
}

#[test]
fn fsck_names_a_flipped_byte_and_a_truncated_pack() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-edge-edits.jsonl");
    import(&env, &path);
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
    let pack = only_pack(&env);
    let mut bytes = std::fs::read(&pack).unwrap();
    let header_line = std::fs::read_to_string(&path).unwrap().lines().next().unwrap().to_string();
    let at = bytes.windows(header_line.len()).position(|w| w == header_line.as_bytes()).unwrap();
    bytes[at + 10] ^= 0x20;
    std::fs::write(&pack, &bytes).unwrap();
    let header_id = env.ok(&["hash-entry", path.to_str().unwrap()]).lines().next().unwrap().to_string();
    let out = env.run(&["fsck"]);
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let pack_name = pack.file_name().unwrap().to_str().unwrap();
    assert!(stdout.lines().any(|l| l.contains(pack_name) && l.contains(&header_id)), "{stdout}");
    let report = json(&String::from_utf8(env.run(&["fsck", "--json"]).stdout).unwrap());
    assert_eq!(report["ok"], false);

    bytes.truncate(bytes.len() - 100);
    std::fs::write(&pack, &bytes).unwrap();
    let stderr = env.fails(&["cat-session", path.to_str().unwrap()], 3);
    assert!(stderr.contains(pack_name) && stderr.contains("truncated"), "{stderr}");
    let out = env.run(&["fsck"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8(out.stdout).unwrap().contains("truncated"));
}

/// Counts read the mapped BPE table without hashing it (its layout is checked on open): a
/// flipped byte in a token is fsck's to find, and it names the table.
#[test]
fn fsck_names_a_damaged_bpe_table() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-edge-edits.jsonl");
    env.ok(&["meter", path.to_str().unwrap(), "--tokenizer", "o200k"]);
    let table = env.store().join("cache/ranks-o200k.bin");
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
    let mut bytes = std::fs::read(&table).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&table, &bytes).unwrap();
    let out = env.run(&["fsck"]);
    assert_eq!(out.status.code(), Some(3));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("ranks-o200k.bin") && stdout.contains("checksum mismatch"), "{stdout}");
    std::fs::remove_file(&table).unwrap();
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
}

#[test]
fn a_garbage_index_and_a_bad_ref_are_named() {
    let env = TestEnv::new();
    import(&env, &env.fixture("pi-v3-edge-edits.jsonl"));
    // A loose ref (a store from before the packed form) that holds no id.
    let refs = env.store().join("refs/sessions");
    std::fs::create_dir_all(&refs).unwrap();
    let bad_ref = refs.join("legacy");
    std::fs::write(&bad_ref, "not an id\n").unwrap();
    let stderr = env.fails(&["show-ref"], 3);
    assert!(stderr.contains(bad_ref.to_str().unwrap()), "{stderr}");
    assert!(String::from_utf8(env.run(&["fsck"]).stdout).unwrap().contains("bad ref file"));

    let idx = only_pack(&env).with_extension("idx");
    std::fs::write(&idx, b"SHAKIDX\0garbage").unwrap();
    let stderr = env.fails(&["count-objects"], 3);
    assert!(stderr.contains(idx.to_str().unwrap()), "{stderr}");
    env.fails(&["fsck", "--json"], 3);
}

#[test]
fn update_ref_compares_and_swaps() {
    let env = TestEnv::new();
    let a = import(&env, &env.write("a.jsonl", format!("{HEAD}\n")))["version"].as_str().unwrap().to_string();
    let b = import(&env, &env.write("b.jsonl", format!("{HEAD}\n\n")))["version"].as_str().unwrap().to_string();
    let zero = "0".repeat(64);
    env.ok(&["update-ref", "refs/overlays/x", &a[..8], &zero]);
    let stderr = env.fails(&["update-ref", "refs/overlays/x", &b, &zero], 1);
    assert!(stderr.contains("refs/overlays/x is") && stderr.contains("not absent"), "{stderr}");
    let stderr = env.fails(&["update-ref", "refs/overlays/x", &b, &b], 1);
    assert!(stderr.contains(&format!("not {b}")), "{stderr}");
    env.ok(&["update-ref", "refs/overlays/x", &b, &a]);
    assert!(env.ok(&["show-ref"]).contains(&format!("{b} refs/overlays/x\n")));
    let refs = json(&env.ok(&["show-ref", "--json"]));
    assert!(refs.as_array().unwrap().iter().any(|r| r["ref"] == "refs/overlays/x" && r["id"] == b.as_str()));
    env.fails(&["update-ref", "refs/overlays/../x", &b], 1);
    env.fails(&["update-ref", "refs/overlays/y", &"e".repeat(64)], 1);
}

#[test]
fn hash_entry_names_lines_as_the_store_does() {
    let env = TestEnv::new();
    let path = env.write("s.jsonl", format!("{HEAD}\n\n{}", entry("a1", None, "x")));
    let ids = env.ok(&["hash-entry", path.to_str().unwrap()]);
    assert_eq!(ids.lines().count(), 3);
    let piped = env.cmd().args(["hash-entry", "--stdin"]).stdin(std::fs::File::open(&path).unwrap()).output().unwrap();
    assert_eq!(String::from_utf8(piped.stdout).unwrap(), ids);
    assert_eq!(objects(&env)["objects"], 0, "hash-entry alone stores nothing");
    env.ok(&["hash-entry", "-w", path.to_str().unwrap()]);
    for id in ids.lines() {
        assert_eq!(cat_object(&env, "-t", id), b"entry\n");
    }
    assert_eq!(cat_object(&env, "-s", ids.lines().next().unwrap()), format!("{}\n", HEAD.len()).as_bytes());
    assert_eq!(cat_object(&env, "-p", &ids.lines().next().unwrap()[..6]), format!("{HEAD}\n").as_bytes());
}

#[test]
fn a_session_id_resolves_through_the_store() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    env.fails(&["project", "019ad5e2-7c1a", "--json"], 1);
    import(&env, &path);
    let by_id = env.ok(&["project", "019ad5e2-7c1a", "--json"]);
    assert_eq!(by_id, env.ok(&["project", path.to_str().unwrap(), "--json"]));
}

#[test]
fn concurrent_imports_leave_a_sound_store() {
    let env = TestEnv::new();
    for name in fixtures() {
        env.fixture(&name);
    }
    let dir = env.dir.path().to_str().unwrap().to_string();
    // Four processes at once: they take turns on the store's lock.
    let children: Vec<_> = (0..4).map(|_| env.cmd().args(["import", &dir]).spawn().unwrap()).collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
    let again = json(&env.ok(&["import", "--json", &dir]));
    assert!(again["files"].as_array().unwrap().iter().all(|f| f["newObjects"] == 0));
}

#[test]
fn leftovers_of_an_interrupted_import_are_harmless() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-edge-edits.jsonl");
    import(&env, &path);
    let packs = env.store().join("packs");
    std::fs::write(packs.join("tmp-pack-x"), b"half a pack").unwrap();
    std::fs::write(packs.join("pack-0000.pack"), b"SHAKPACK").unwrap();
    // A damaged state (a byte flipped in its record) is said, never read as absent: the
    // import refuses (it would start the file's chain again), and so does gc; fsck names it.
    let packed = std::fs::read_dir(env.store().join("packed")).unwrap().next().unwrap().unwrap().path();
    let good = std::fs::read(&packed).unwrap();
    let mut bytes = good.clone();
    let at = bytes.windows(8).position(|w| w == b"SHAKSTAT").unwrap() + 20;
    bytes[at] ^= 0x10;
    std::fs::write(&packed, &bytes).unwrap();
    let report = json(&String::from_utf8(env.run(&["fsck", "--json"]).stdout).unwrap());
    assert!(report["problems"].to_string().contains("is damaged (checksum mismatch)"), "{report}");
    assert_eq!(env.run(&["import", path.to_str().unwrap()]).status.code(), Some(3));
    assert_eq!(env.run(&["gc"]).status.code(), Some(3));
    // Once sound again, gc removes the leftovers, and the orphan pack (no valid checksum) is a
    // note.
    std::fs::write(&packed, &good).unwrap();
    env.ok(&["gc"]);
    let report = json(&env.ok(&["fsck", "--json"]));
    assert_eq!(report["ok"], true);
    assert_eq!(report["notes"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(cat_session(&env, &[path.to_str().unwrap()]), std::fs::read(&path).unwrap());
}

#[test]
fn many_small_imports_are_merged_into_few_packs() {
    let env = TestEnv::new();
    let mut text = format!("{HEAD}\n");
    let path = env.write("s.jsonl", &text);
    import(&env, &path);
    let mut parent = None;
    for i in 0..20 {
        let id = format!("e{i:02}");
        text.push_str(&entry(&id, parent.as_deref(), &format!("line {i}")));
        text.push('\n');
        std::fs::write(&path, &text).unwrap();
        assert_eq!(import(&env, &path)["newObjects"], 4, "entry, node, version, node table chunk");
        parent = Some(id);
    }
    let counts = objects(&env);
    assert!(counts["packs"].as_u64().unwrap() <= 16, "{counts}");
    assert_eq!(counts["objects"], 1 + 1 + 20 * 4);
    assert_eq!(cat_session(&env, &[path.to_str().unwrap()]), text.as_bytes());
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
}

#[test]
fn a_same_size_rewrite_within_one_mtime_tick_is_seen() {
    let env = TestEnv::new();
    // Written just now, not settled an hour back (`TestEnv::write`): the import sees a file
    // modified within the second, whose mtime it does not trust.
    let path = env.dir.path().join("s.jsonl");
    std::fs::write(&path, format!("{HEAD}\n{}\n", entry("a1", None, "aaaa"))).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    import(&env, &path);
    let rewritten = format!("{HEAD}\n{}\n", entry("a1", None, "bbbb"));
    std::fs::write(&path, &rewritten).unwrap();
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    let r = import(&env, &path);
    assert_eq!(r["unchanged"], false);
    assert_eq!(cat_session(&env, &[path.to_str().unwrap()]), rewritten.as_bytes());
}

#[test]
fn no_object_leaves_the_store_unverified() {
    let env = TestEnv::new();
    let text = format!("{HEAD}\n{}\n{}\n", entry("a1", None, "first words"), entry("a2", Some("a1"), "second words"));
    let path = env.write("s.jsonl", &text);
    import(&env, &path);
    let id = env.ok(&["hash-entry", path.to_str().unwrap()]).lines().nth(1).unwrap().to_string();
    let pack = only_pack(&env);
    let mut bytes = std::fs::read(&pack).unwrap();
    let at = bytes.windows(11).position(|w| w == b"first words").unwrap();
    bytes[at] ^= 0x20;
    std::fs::write(&pack, &bytes).unwrap();
    std::fs::remove_file(&path).unwrap();
    let named = |stderr: &str| stderr.contains(&id) && stderr.contains("content hashes to");
    let out = env.dir.path().join("restored.jsonl");
    let stderr = env.fails(&["restore", path.to_str().unwrap(), "-o", out.to_str().unwrap()], 3);
    assert!(named(&stderr) && !out.exists(), "{stderr}");
    let stderr = env.fails(&["restore", "0aa11bb2", "-o", "-"], 3);
    assert!(named(&stderr), "{stderr}");
    let stderr = env.fails(&["cat-session", "0aa11bb2"], 3);
    assert!(named(&stderr), "{stderr}");
    let stderr = env.fails(&["cat-object", &id], 3);
    assert!(named(&stderr), "{stderr}");
}

#[test]
fn a_ref_lock_left_by_a_killed_writer_is_reported_and_recovered() {
    let env = TestEnv::new();
    let path = env.write("s.jsonl", format!("{HEAD}\n{}\n", entry("a1", None, "x")));
    // What a SIGKILL between a loose ref's lock and its rename left behind in a store written
    // by a shake from before the packed form (the store lock is a flock: the kernel released
    // it with the process). Nothing reads it; gc removes it.
    let refs = env.store().join("refs/sessions");
    std::fs::create_dir_all(&refs).unwrap();
    let lock = refs.join("0aa11bb2-0000-7000-8000-000000000001.lock");
    std::fs::write(&lock, "").unwrap();
    let report = json(&env.ok(&["fsck", "--json"]));
    let notes = report["notes"].to_string();
    assert!(notes.contains(lock.to_str().unwrap()) && notes.contains("died"), "{report}");
    let out = env.run(&["import", "--json", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    env.ok(&["gc"]);
    assert!(!lock.exists());
    let r = json(&String::from_utf8(out.stdout).unwrap())["files"][0].clone();
    assert!(r["warnings"].as_array().is_none_or(|w| w.is_empty()), "{r}");
    let sessions = json(&env.ok(&["sessions", "--json"]));
    assert_eq!(sessions[0]["session"], "0aa11bb2-0000-7000-8000-000000000001", "{sessions}");
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["notes"], serde_json::json!([]));
}

#[test]
fn an_odd_session_id_neither_shapes_the_store_nor_stops_the_others() {
    let env = TestEnv::new();
    let file = |name: &str, id: &str| {
        let head = HEAD.replace("0aa11bb2-0000-7000-8000-000000000001", id);
        env.write(name, format!("{head}\n{}\n", entry("a1", None, name)))
    };
    let files = [file("1.jsonl", "x"), file("2.jsonl", "x/y"), file("3.jsonl", "../up"), file("4.jsonl", "plain-1")];
    let args: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
    let report = json(&env.ok(&[&["import", "--json"], args.as_slice()].concat()));
    assert_eq!(report["files"].as_array().unwrap().len(), 4, "{report}");
    let sessions = json(&env.ok(&["sessions", "--json"]));
    let ids: Vec<&str> = sessions.as_array().unwrap().iter().map(|s| s["session"].as_str().unwrap()).collect();
    assert_eq!(ids, ["x", "x/y", "../up", "plain-1"], "{sessions}");
    assert!(!env.store().join("up").exists() && !env.store().join("refs/up").exists());
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
    for id in ["x/y", "../up"] {
        assert_eq!(
            env.ok(&["cat-session", id]).len(),
            std::fs::read(&files[ids.iter().position(|i| *i == id).unwrap()]).unwrap().len()
        );
    }
}

#[test]
fn a_lost_index_is_a_problem_never_deletable_and_the_next_write_rebuilds_it() {
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-edge-edits.jsonl");
    import(&env, &path);
    let idx = only_pack(&env).with_extension("idx");
    let kept = std::fs::read(&idx).unwrap();
    std::fs::remove_file(&idx).unwrap();
    let out = env.run(&["fsck"]);
    assert_eq!(out.status.code(), Some(3));
    let report = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains("do not delete it") && !report.contains("safe to delete"), "{report}");
    // The next write gives the pack its index back, byte for byte.
    import(&env, &env.write("other.jsonl", format!("{HEAD}\n{}\n", entry("z1", None, "z"))));
    assert_eq!(std::fs::read(&idx).unwrap(), kept);
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
    assert_eq!(cat_session(&env, &[path.to_str().unwrap()]), std::fs::read(&path).unwrap());
}

#[test]
fn gc_removes_temp_files_of_dead_writers() {
    let env = TestEnv::new();
    import(&env, &env.fixture("pi-v3-edge-edits.jsonl"));
    for dir in ["packs", "packed"] {
        std::fs::write(env.store().join(dir).join("tmp-left"), b"half").unwrap();
    }
    let r = json(&env.ok(&["gc", "--dry-run", "--json"]));
    assert_eq!(r["tempFiles"], 2, "{r}");
    assert!(env.store().join("packs/tmp-left").exists());
    assert_eq!(json(&env.ok(&["gc", "--json"]))["tempFiles"], 2);
    for dir in ["packs", "packed"] {
        assert!(!env.store().join(dir).join("tmp-left").exists(), "{dir}");
    }
}

#[test]
fn a_store_shake_may_not_read_is_a_permission_error_not_corruption() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let path = env.fixture("pi-v3-edge-edits.jsonl");
    import(&env, &path);
    let pack = only_pack(&env);
    std::fs::set_permissions(&pack, std::fs::Permissions::from_mode(0o000)).unwrap();
    let wrapper = crate::env::without_dac(&["cat", pack.to_str().unwrap()]);
    for args in [&["fsck"][..], &["sessions"], &["restore", path.to_str().unwrap(), "-o", "-"]] {
        let out = env.cmd_through(wrapper).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {stderr}");
        assert!(stderr.contains("Permission denied") && stderr.contains(pack.to_str().unwrap()), "{args:?}: {stderr}");
    }
}

#[test]
fn sessions_never_counts_a_tree_with_a_node_missing() {
    let env = TestEnv::new();
    import(&env, &env.fixture("pi-v3-branch-compaction-edit.jsonl"));
    let (pack, idx_path) = (only_pack(&env), only_pack(&env).with_extension("idx"));
    let (bytes, mut idx) = (std::fs::read(&pack).unwrap(), std::fs::read(&idx_path).unwrap());
    let n = u32::from_le_bytes(idx[12..16].try_into().unwrap()) as usize;
    let ids = 16 + 1024;
    let offset = |i: usize| u64::from_le_bytes(idx[ids + n * 32 + i * 8..][..8].try_into().unwrap()) as usize;
    // The node with the highest id: changing its id's last byte keeps the rows sorted.
    let row = (0..n).rev().find(|&i| bytes[offset(i)] == 2).unwrap();
    idx[ids + row * 32 + 31] ^= 1;
    std::fs::write(&idx_path, &idx).unwrap();
    let stderr = env.fails(&["sessions", "--json"], 3);
    assert!(stderr.contains("is missing"), "{stderr}");
}

/// An I/O error at the command boundary: it names the file and what was being done, and exits
/// 4 (the system's refusal), not 1 (the user's mistake), whether the file is read by the import
/// (`cat-session`) or by a command reading a revision (`project`, `meter`).
#[test]
fn an_unreadable_file_is_an_io_error_naming_it() {
    let env = TestEnv::new();
    // Reading /proc/self/mem from offset 0 fails with EIO, even for root.
    for args in [["cat-session", "/proc/self/mem"], ["project", "/proc/self/mem"], ["meter", "/proc/self/mem"]] {
        let stderr = env.fails(&args, 4);
        assert!(stderr.contains("error: cannot read /proc/self/mem: Input/output error"), "{args:?}: {stderr}");
    }
}

/// Unpacks a store's packed file (one: run `shake gc` first) into the loose files a shake from
/// before the packed form wrote (`refs/…`, `import/<key>`, `times/<key>`), and removes the
/// packed folder.
pub fn make_loose(store: &Path) {
    let dir = store.join("packed");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1);
    let bytes = std::fs::read(&files[0]).unwrap();
    assert_eq!(&bytes[..8], b"SHAKPREF");
    let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    let mut at = 16;
    // Format 2: per record a marker (8 bytes), the name's length (u32) and the value's (u64),
    // the name, the head checksum (16), the value, the record checksum (16).
    for _ in 0..count {
        let n = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let len = u64::from_le_bytes(bytes[at + 12..at + 20].try_into().unwrap()) as usize;
        let name = std::str::from_utf8(&bytes[at + 20..at + 20 + n]).unwrap().to_string();
        let value = at + 20 + n + 16;
        let path = store.join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes[value..value + len]).unwrap();
        at = value + len + 16;
    }
    assert_eq!(at + 32, bytes.len());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_store_of_loose_refs_and_states_still_reads_and_gc_packs_it() {
    let env = TestEnv::new();
    let path = env.write("s.jsonl", format!("{HEAD}\n{}\n", entry("a1", None, "x")));
    import(&env, &path);
    let before = (env.ok(&["sessions", "--json"]), env.ok(&["show-ref"]), env.ok(&["log", path.to_str().unwrap()]));
    env.ok(&["gc"]);
    make_loose(&env.store());
    assert!(env.store().join("refs/sessions/0aa11bb2-0000-7000-8000-000000000001").is_file());
    // Read as before: the sessions, the refs, the versions' times, and an import that finds
    // nothing new.
    assert_eq!(
        (env.ok(&["sessions", "--json"]), env.ok(&["show-ref"]), env.ok(&["log", path.to_str().unwrap()])),
        before
    );
    let r = import(&env, &path);
    assert_eq!((r["newObjects"].as_u64(), r["bytes"].as_u64()), (Some(0), Some(0)), "{r}");
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
    // An append writes a packed file, which shadows the loose files of its names.
    std::fs::write(&path, format!("{HEAD}\n{}\n{}\n", entry("a1", None, "x"), entry("b1", Some("a1"), "y"))).unwrap();
    let grown = import(&env, &path);
    assert_eq!(
        grown["bytes"].as_u64().unwrap() as usize,
        entry("b1", Some("a1"), "y").len() + 1,
        "only the new line read: {grown}"
    );
    let refs = env.ok(&["show-ref"]);
    assert!(refs.contains(grown["version"].as_str().unwrap()), "{refs}");
    // gc packs everything into one file and removes the loose ones.
    env.ok(&["gc"]);
    for sub in ["refs/sessions", "import", "times"] {
        let left: Vec<_> = std::fs::read_dir(env.store().join(sub)).map(|r| r.collect()).unwrap_or_default();
        assert!(left.is_empty(), "{sub}: {left:?}");
    }
    assert_eq!(std::fs::read_dir(env.store().join("packed")).unwrap().count(), 1);
    assert_eq!(env.ok(&["show-ref"]), refs);
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
    assert_eq!(json(&env.ok(&["sessions", "--json"]))[0]["versions"], 2);
}
