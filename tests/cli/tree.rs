//! The tree plumbing and the revision syntax: `rev-parse`, `ls-entries`, `ls-leaves` output
//! formats (a contract), and how a rev finds its session and leaf (`docs/revisions.md`).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use shake_plumbing::id::{Kind, ObjectId};
use shake_plumbing::pi::paths::encode_cwd;

use crate::env::TestEnv;

const FIXTURE: &str = "pi-v3-branch-compaction-edit.jsonl";

fn json(s: &str) -> Value {
    serde_json::from_str(s).expect("JSON output")
}

/// The node id computed by hand from the file: the chain over the lines of `ids`, root first.
fn chain(file: &Path, ids: &[&str]) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let mut node: Option<ObjectId> = None;
    for id in ids {
        let needle = format!("\"id\":\"{id}\"");
        let line = text.lines().find(|l| l.contains(&needle) && !l.contains("\"type\":\"session\"")).unwrap();
        node = Some(ObjectId::node(node.as_ref(), &ObjectId::hash(Kind::Entry, line.as_bytes())));
    }
    node.unwrap().to_hex()
}

#[test]
fn rev_parse_prints_node_and_entry_id() {
    let env = TestEnv::new();
    let path = env.fixture(FIXTURE);
    let p = path.to_str().unwrap();
    let out = env.ok(&["rev-parse", p]);
    let (node, id) = out.trim_end().split_once(' ').unwrap();
    assert_eq!(id, "2d3e4f50");
    assert_eq!(node.len(), 64);
    // Branch B's tip, by `:prefix`, by `--leaf`, and by JSON.
    let b =
        ["1a2b3c4d", "2b3c4d5e", "3c4d5e6f", "4d5e6f70", "5e6f7081", "6f708192", "708192a3", "8192a3b4", "92a3b4c5"];
    let b: Vec<&str> = b
        .iter()
        .copied()
        .chain([
            "a3b4c5d6", "b4c5d6e7", "c5d6e7f8", "0a1b2c3d", "1b2c3d4e", "2c3d4e5f", "3d4e5f60", "4e5f6071", "5f607182",
        ])
        .collect();
    let expected = format!("{} 5f607182\n", chain(&path, &b));
    assert_eq!(env.ok(&["rev-parse", &format!("{p}:5f6071")]), expected);
    assert_eq!(env.ok(&["rev-parse", p, "--leaf", "5f607182"]), expected);
    let j = json(&env.ok(&["rev-parse", &format!("{p}:5f607182"), "--json"]));
    assert_eq!(j["leafId"], "5f607182");
    assert_eq!(j["line"], 21);
    assert_eq!(format!("{} 5f607182\n", j["node"].as_str().unwrap()), expected);
    assert_eq!(
        j["object"],
        ObjectId::hash(Kind::Entry, std::fs::read_to_string(&path).unwrap().lines().nth(20).unwrap().as_bytes())
            .to_hex()
    );
}

#[test]
fn equal_paths_have_equal_node_ids() {
    let env = TestEnv::new();
    let path = env.fixture(FIXTURE);
    let text = std::fs::read_to_string(&path).unwrap();
    // A fork that copies the first 9 lines (header + 8 entries) byte for byte.
    let fork: String = text.lines().take(9).map(|l| format!("{l}\n")).collect();
    let fork_path = env.write("fork.jsonl", fork.replace("019ad5e2-7c1a", "019ad5e2-ffff"));
    let here = env.ok(&["rev-parse", &format!("{}:8192a3b4", path.display())]);
    assert_eq!(env.ok(&["rev-parse", fork_path.to_str().unwrap()]), here);
    // One different byte on the path changes the id.
    let edited = env.write("edited.jsonl", fork.replace("Read src/main.rs", "Read src/lib.rs"));
    assert_ne!(env.ok(&["rev-parse", edited.to_str().unwrap()]), here);
}

#[test]
fn ls_entries_lists_the_path_or_the_context() {
    let env = TestEnv::new();
    let path = env.fixture(FIXTURE);
    let rev = format!("{}:708192a3", path.display());
    let out = env.ok(&["ls-entries", &rev]);
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines.len(), 7);
    assert_eq!(lines[0][..2], ["1a2b3c4d", "model_change"]);
    assert_eq!(lines[6][..2], ["708192a3", "message"]);
    let first = std::fs::read_to_string(&path).unwrap().lines().nth(1).unwrap().to_string();
    assert_eq!(lines[0][2], ObjectId::hash(Kind::Entry, first.as_bytes()).to_hex());

    // Past the compaction, --context starts at the compaction, then the kept entries.
    let out = env.ok(&["ls-entries", path.to_str().unwrap(), "--context"]);
    let ids: Vec<&str> = out.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(ids[..3], ["a3b4c5d6", "8192a3b4", "92a3b4c5"]);
    let full = env.ok(&["ls-entries", path.to_str().unwrap()]);
    assert_eq!(full.lines().count(), 27);

    let j = json(&env.ok(&["ls-entries", path.to_str().unwrap(), "--context", "--json"]));
    assert_eq!(j["leafId"], "2d3e4f50");
    assert_eq!(j["context"], true);
    let e0 = &j["entries"][0];
    assert_eq!(
        (e0["id"].as_str(), e0["type"].as_str(), e0["line"].as_u64()),
        (Some("a3b4c5d6"), Some("compaction"), Some(11))
    );
    // The node of the compaction is the chain up to it, not a chain over the context list.
    assert_eq!(e0["node"], json(&env.ok(&["rev-parse", &format!("{}:a3b4c5d6", path.display()), "--json"]))["node"]);
}

/// A hand-edited file whose ids hold a tab, a newline and a quote.
fn odd_ids(env: &TestEnv) -> PathBuf {
    let head = r#"{"type":"session","version":3,"id":"odd","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;
    let a = r#"{"type":"message","id":"a\tb","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;
    let b = r#"{"type":"label","id":"new\nline \"q\"","parentId":"a\tb","timestamp":"2026-01-01T00:00:02.000Z","targetId":"a\tb","label":"x"}"#;
    env.write("odd.jsonl", format!("{head}\n{a}\n{b}\n"))
}

#[test]
fn odd_ids_are_quoted_or_nul_terminated() {
    let env = TestEnv::new();
    let path = odd_ids(&env);
    let p = path.to_str().unwrap();
    let out = env.ok(&["ls-entries", p]);
    let ids: Vec<&str> = out.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(ids, ["\"a\\tb\"", "\"new\\nline \\\"q\\\"\""]);
    let raw = env.cmd().args(["ls-entries", p, "-z"]).output().unwrap().stdout;
    let fields: Vec<&[u8]> = raw.split(|&b| b == 0).collect();
    assert_eq!(fields.len(), 7, "three NUL-terminated fields per entry");
    assert_eq!((fields[0], fields[1]), (&b"a\tb"[..], &b"message"[..]));
    assert_eq!((fields[3], fields[4]), (&b"new\nline \"q\""[..], &b"label"[..]));
    assert_eq!(json(&env.ok(&["ls-entries", p, "--json"]))["entries"][1]["id"], "new\nline \"q\"");
    // A prefix with a tab names the entry too.
    assert!(env.ok(&["rev-parse", p, "--leaf", "a\t"]).ends_with(" \"a\\tb\"\n"));
    let raw = env.cmd().args(["ls-leaves", p, "-z"]).output().unwrap().stdout;
    assert!(raw.starts_with(b"*\0new\nline \"q\"\0label\0"));
}

#[test]
fn ls_leaves_lists_every_tip_and_marks_pis_leaf() {
    let env = TestEnv::new();
    let path = env.fixture(FIXTURE);
    let p = path.to_str().unwrap();
    let out = env.ok(&["ls-leaves", p]);
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][..5], ["-", "5f607182", "context_edit", "21", "18"]);
    assert_eq!(rows[1][..5], ["*", "2d3e4f50", "message", "34", "27"]);
    assert_eq!(format!("{} 2d3e4f50\n", rows[1][5]), env.ok(&["rev-parse", p]));
    let j = json(&env.ok(&["ls-leaves", p, "--json"]));
    assert_eq!(j["defaultLeaf"], "2d3e4f50");
    assert_eq!(j["leaves"][0]["pathLength"], 18);
    assert_eq!(j["leaves"][1]["default"], true);
    // Below an entry: only the tips whose path goes through it.
    let below = env.ok(&["ls-leaves", &format!("{p}:0a1b2c3d")]);
    assert_eq!(below.lines().count(), 1);
    assert!(below.starts_with("-\t5f607182\t"));
    assert_eq!(env.ok(&["ls-leaves", &format!("{p}:c5d6e7f8")]).lines().count(), 2);
}

#[test]
fn pis_leaf_is_listed_even_when_it_has_a_child() {
    let env = TestEnv::new();
    let head = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;
    // The child is written before its parent (hand-edited); pi still picks the last line.
    let child =
        r#"{"type":"label","id":"c","parentId":"p","timestamp":"2026-01-01T00:00:01.000Z","targetId":"p","label":"x"}"#;
    let parent =
        r#"{"type":"custom","customType":"t","id":"p","parentId":null,"timestamp":"2026-01-01T00:00:02.000Z"}"#;
    let path = env.write("s.jsonl", format!("{head}\n{child}\n{parent}\n"));
    let out = env.ok(&["ls-leaves", path.to_str().unwrap()]);
    let marks: Vec<(&str, &str)> = out
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0], f[1])
        })
        .collect();
    assert_eq!(marks, [("-", "c"), ("*", "p")]);
}

/// A session in pi's folder for `cwd` under `agent`, with a given mtime and session id.
fn place(env: &TestEnv, agent: &Path, cwd: &Path, session_id: &str, age_secs: u64) -> PathBuf {
    let dir = agent.join("sessions").join(encode_cwd(cwd));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("2026-01-01T00-00-00-000Z_{session_id}.jsonl"));
    let text = std::fs::read_to_string(env.fixture(FIXTURE))
        .unwrap()
        .replace("\"/home/dev/proj\"", &format!("{:?}", cwd.to_str().unwrap()));
    std::fs::write(&path, text).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(age_secs)).unwrap();
    path
}

#[test]
fn default_session_is_pis_continue_choice() {
    let env = TestEnv::new();
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    env.fails(&["rev-parse"], 1);
    place(&env, &env.agent_dir(), &cwd, "019a0000-old", 600);
    let newest = place(&env, &env.agent_dir(), &cwd, "019a0000-new", 10);
    place(&env, &env.agent_dir(), Path::new("/elsewhere"), "019a0000-other", 0);
    let by_path = env.ok(&["rev-parse", newest.to_str().unwrap(), "--json"]);
    assert_eq!(json(&env.ok(&["rev-parse", "--json"]))["file"], json(&by_path)["file"]);
    // `:entry` with no session part, and `--leaf`, apply to the default session.
    assert!(env.ok(&["rev-parse", ":5f60"]).ends_with(" 5f607182\n"));
    assert!(env.ok(&["rev-parse", "--leaf", "5f60"]).ends_with(" 5f607182\n"));
}

#[test]
fn pi_coding_agent_dir_moves_the_sessions() {
    let env = TestEnv::new();
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    let agent = env.dir.path().join("elsewhere-agent");
    let file = place(&env, &agent, &cwd, "019b0000-aaaa", 5);
    let out = env.cmd().env("PI_CODING_AGENT_DIR", &agent).args(["rev-parse", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&String::from_utf8(out.stdout).unwrap())["file"], file.to_str().unwrap());
}

#[test]
fn custom_session_dir_is_flat_and_filtered_by_cwd() {
    let env = TestEnv::new();
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    let flat = env.dir.path().join("flat");
    let mine = place(&env, &env.agent_dir(), &cwd, "019c0000-mine", 100);
    let other = place(&env, &env.agent_dir(), Path::new("/other"), "019c0000-other", 1);
    std::fs::create_dir_all(&flat).unwrap();
    for f in [&mine, &other] {
        let to = flat.join(f.file_name().unwrap());
        std::fs::copy(f, &to).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&to)
            .unwrap()
            .set_modified(std::fs::metadata(f).unwrap().modified().unwrap())
            .unwrap();
    }
    let out = env.cmd().env("PI_CODING_AGENT_SESSION_DIR", &flat).args(["rev-parse", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        json(&String::from_utf8(out.stdout).unwrap())["file"],
        flat.join(mine.file_name().unwrap()).to_str().unwrap()
    );
}

#[test]
fn session_ids_and_prefixes_name_sessions() {
    let env = TestEnv::new();
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    let a = place(&env, &env.agent_dir(), &cwd, "019d1111-aaaa", 5);
    place(&env, &env.agent_dir(), &cwd, "019d2222-bbbb", 5);
    let j = json(&env.ok(&["rev-parse", "019d1111-aaaa:5f6071", "--json"]));
    assert_eq!((j["file"].as_str(), j["leafId"].as_str()), (a.to_str(), Some("5f607182")));
    assert_eq!(json(&env.ok(&["rev-parse", "019d1", "--json"]))["file"], a.to_str().unwrap());
    let err = env.fails(&["rev-parse", "019d"], 1);
    assert!(err.contains("matches 2 sessions"), "{err}");
    let err = env.fails(&["rev-parse", "nope"], 1);
    assert!(err.contains("no session file or session id \"nope\""), "{err}");
}

#[test]
fn unknown_or_ambiguous_entries_are_errors() {
    let env = TestEnv::new();
    let path = env.fixture(FIXTURE);
    let p = path.to_str().unwrap();
    let err = env.fails(&["rev-parse", &format!("{p}:ffff")], 1);
    assert!(err.contains("no entry \"ffff\""), "{err}");
    // 1a2b3c4d and 1b2c3d4e and 1c2d3e4f share "1".
    let err = env.fails(&["ls-entries", p, "--leaf", "1"], 1);
    assert!(err.contains("ambiguous"), "{err}");
}
