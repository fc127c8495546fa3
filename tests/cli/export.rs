//! `shake export` against pi's own `createBranchedSession`: same entries, same projection.

use serde_json::Value;

use crate::env::{fixtures, Oracle, TestEnv};

/// Branch tips of a v3 file: ids no entry names as its parent.
fn leaves(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let entries: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let parents: Vec<&str> = entries.iter().filter_map(|e| e["parentId"].as_str()).collect();
    entries
        .iter()
        .filter(|e| e["type"] != "session")
        .filter_map(|e| e["id"].as_str())
        .filter(|id| !parents.contains(id))
        .map(str::to_string)
        .collect()
}

/// Lines without what pi draws at random: the header's id/time/path and fresh label ids.
fn comparable(lines: &[Value]) -> Vec<Value> {
    let label_ids: Vec<String> =
        lines.iter().filter(|l| l["type"] == "label").filter_map(|l| l["id"].as_str().map(str::to_string)).collect();
    lines
        .iter()
        .skip(1)
        .map(|l| {
            let mut l = l.clone();
            for key in ["id", "parentId"] {
                if let Some(n) = l[key].as_str().and_then(|id| label_ids.iter().position(|x| x == id)) {
                    l[key] = format!("label-{n}").into();
                }
            }
            l
        })
        .collect()
}

fn parse_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn export_writes_what_pi_fork_writes_and_projects_the_same() {
    let env = TestEnv::new();
    let mut checked = 0;
    for name in fixtures().into_iter().filter(|n| n.starts_with("pi-v3") || n.contains(".v3-")) {
        let src = env.fixture(&name);
        for leaf in leaves(&src) {
            let out = env.dir.path().join(format!("{name}.{leaf}.export.jsonl"));
            let rev = format!("{}:{leaf}", src.display());
            env.ok(&["export", &rev, "-o", out.to_str().unwrap()]);
            let ours = parse_lines(&out);
            let forks = env.dir.path().join("pi-forks");
            let pi = Oracle::run("fork.mjs", &["branched", src.to_str().unwrap(), &leaf, forks.to_str().unwrap()]);
            let pi_lines: Vec<Value> = pi["lines"].as_array().unwrap().clone();
            assert_eq!(comparable(&ours), comparable(&pi_lines), "{name} at {leaf}");
            assert_eq!(ours[0]["parentSession"], Value::from(std::fs::canonicalize(&src).unwrap().to_str().unwrap()));
            let exported = Oracle::run("project.mjs", &[out.to_str().unwrap(), "--compact"]);
            let source = Oracle::run("project.mjs", &[src.to_str().unwrap(), &leaf, "--compact"]);
            assert_eq!(exported["messages"], source["messages"], "{name} at {leaf}");
            checked += 1;
        }
    }
    assert!(checked >= 3, "only {checked} leaves exported");
}

#[test]
fn export_keeps_unchanged_lines_byte_for_byte_and_never_overwrites() {
    let env = TestEnv::new();
    let src = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    let out = env.dir.path().join("fork.jsonl");
    env.ok(&["export", src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let source = std::fs::read_to_string(&src).unwrap();
    let exported = std::fs::read_to_string(&out).unwrap();
    // Every exported entry line that pi did not re-chain is a line of the source, unchanged.
    let unchanged = exported.lines().skip(1).filter(|l| source.lines().any(|s| s == *l)).count();
    assert!(unchanged >= exported.lines().count() - 3, "{unchanged} of {}", exported.lines().count());
    let err = env.fails(&["export", src.to_str().unwrap(), "-o", out.to_str().unwrap()], 1);
    assert!(err.contains("fork.jsonl exists; not overwritten"), "{err}");
}

#[test]
fn export_refuses_v1_sessions() {
    let env = TestEnv::new();
    let src = env.fixture("pi-v1-legacy.jsonl");
    let err = env.fails(&["export", src.to_str().unwrap(), "-o", "x.jsonl"], 1);
    assert!(err.contains("open it in pi once"), "{err}");
}
