//! `shake diff`: the shared prefix and the entries only on each side follow the paths; the
//! entries it lists as seen differently are exactly those pi's own projections of the two leaves
//! differ on; folds show as raw against folded; a pi fork is the same leaf; errors exit 2.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::env::{Oracle, TestEnv};
use crate::family::{folded, json_exit, pi_fork, pi_tips, tips_of};

const FIXTURE: &str = "pi-v3-branch-compaction-edit.jsonl";

fn ids(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect()
}

/// The ids whose messages differ between two pi projections (absent = no messages).
fn pi_differs(a: &HashMap<String, Value>, b: &HashMap<String, Value>) -> BTreeSet<String> {
    let none = Value::Array(Vec::new());
    a.keys().chain(b.keys()).filter(|id| a.get(*id).unwrap_or(&none) != b.get(*id).unwrap_or(&none)).cloned().collect()
}

#[test]
fn a_leaf_against_itself_is_the_same() {
    let env = TestEnv::new();
    let path = env.fixture(FIXTURE);
    let p = path.to_str().unwrap();
    let node = env.ok(&["rev-parse", p]).split(' ').next().unwrap().to_string();
    assert_eq!(env.ok(&["diff", p, p, "--porcelain"]), format!("=\t27\t2d3e4f50\t{node}\n"));
    let (j, code) = json_exit(&env, &["diff", p, p, "--json"]);
    assert_eq!(code, 0);
    assert_eq!(j["same"], true);
    assert_eq!(j["shared"]["length"], 27);
    assert_eq!(j["a"], j["b"]);
    assert!(j["onlyA"].as_array().unwrap().is_empty() && j["targets"].as_array().unwrap().is_empty());
    // -z: every field ends with NUL.
    let out = env.run(&["diff", p, p, "-z"]);
    assert_eq!(out.stdout, format!("=\x0027\x002d3e4f50\x00{node}\x00").into_bytes());
}

#[test]
fn two_branches_differ_as_their_paths_and_pi_say() {
    let env = TestEnv::new();
    let path = env.fixture(FIXTURE);
    let p = path.to_str().unwrap();
    let (a, b) = (format!("{p}:5f607182"), p.to_string());
    let (j, code) = json_exit(&env, &["diff", &a, &b, "--json"]);
    assert_eq!(code, 1);
    let path_a = ids(&json_exit(&env, &["ls-entries", &a, "--json"]).0["entries"]);
    let path_b = ids(&json_exit(&env, &["ls-entries", &b, "--json"]).0["entries"]);
    let shared = path_a.iter().zip(&path_b).take_while(|(x, y)| x == y).count();
    assert_eq!(j["shared"]["length"], shared);
    assert_eq!(j["shared"]["id"], path_a[shared - 1].as_str());
    assert_eq!(ids(&j["onlyA"]), path_a[shared..]);
    assert_eq!(ids(&j["onlyB"]), path_b[shared..]);
    let tips = pi_tips(&path);
    let listed: BTreeSet<String> = ids(&j["targets"]).into_iter().collect();
    assert_eq!(listed, pi_differs(&tips["5f607182"], &tips["2d3e4f50"]));
    // Text: `=` line, then `<`, `>` and `~` records.
    let text = env.run(&["diff", &a, &b, "--porcelain"]);
    let text = String::from_utf8(text.stdout).unwrap();
    let marks: Vec<&str> = text.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(marks.iter().filter(|m| **m == "<").count(), path_a.len() - shared);
    assert_eq!(marks.iter().filter(|m| **m == ">").count(), path_b.len() - shared);
    assert_eq!(marks.iter().filter(|m| **m == "~").count(), listed.len());
}

#[test]
fn generated_sessions_differ_exactly_where_pi_projections_do() {
    let env = TestEnv::new();
    let mut pairs = 0;
    for seed in 0..16u64 {
        let path = env.dir.path().join(format!("g{seed}.jsonl"));
        let p = path.to_str().unwrap();
        env.ok(&["generate-session", "--seed", &seed.to_string(), "-o", p]);
        let all = Oracle::run("project-all.mjs", &["--no-flat", p]);
        let tips = tips_of(&all);
        let leaves = all["leaves"].as_array().unwrap();
        let last = &leaves[leaves.len() - 1];
        for other in &leaves[..leaves.len() - 1] {
            let (a, b) = (other["leafId"].as_str().unwrap(), last["leafId"].as_str().unwrap());
            let (j, code) = json_exit(&env, &["diff", &format!("{p}:{a}"), &format!("{p}:{b}"), "--json"]);
            let listed: BTreeSet<String> = ids(&j["targets"]).into_iter().collect();
            assert_eq!(listed, pi_differs(&tips[a], &tips[b]), "seed {seed}: {a} vs {b}");
            let strs = |v: &Value| -> Vec<String> {
                v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
            };
            let (pa, pb) = (strs(&other["pathIds"]), strs(&last["pathIds"]));
            let shared = pa.iter().zip(&pb).take_while(|(x, y)| x == y).count();
            assert_eq!(j["shared"]["length"], shared, "seed {seed}");
            assert_eq!(ids(&j["onlyA"]), pa[shared..]);
            assert_eq!(ids(&j["onlyB"]), pb[shared..]);
            assert_eq!(code, i32::from(a != b), "seed {seed}");
            pairs += 1;
        }
    }
    assert!(pairs >= 8, "the generated sessions should branch: {pairs} pairs");
}

#[test]
fn a_fold_is_raw_or_edited_against_folded() {
    let env = TestEnv::new();
    let f = (0..).find_map(|seed| folded(&env, seed, &format!("f{seed}.jsonl"))).unwrap();
    let (j, code) = json_exit(&env, &["diff", &format!("{}:{}", f.p(), f.before), f.p(), "--json"]);
    assert_eq!(code, 1);
    assert_eq!(j["shared"]["id"], f.before.as_str());
    assert!(j["onlyA"].as_array().unwrap().is_empty());
    assert_eq!(j["onlyB"][0]["id"], f.log.as_str());
    let targets = j["targets"].as_array().unwrap();
    assert_eq!(ids(&j["targets"]), f.targets());
    for t in targets {
        assert!(t["a"]["seen"] == "raw" || t["a"]["seen"] == "edited", "{t}");
        assert_eq!(t["b"]["seen"], "folded");
        let planned: Vec<&Value> =
            f.fold["targets"].as_array().unwrap().iter().filter(|x| x["id"] == t["id"]).collect();
        let placeholders: Vec<&Value> =
            t["b"]["regions"].as_array().unwrap().iter().map(|r| &r["placeholder"]).collect();
        assert_eq!(placeholders, planned.iter().map(|x| &x["placeholder"]).collect::<Vec<_>>());
    }
    // After undo the model sees the pre-fold content again: "restored", and the same messages.
    env.ok(&["undo", f.p()]);
    let (j, code) = json_exit(&env, &["diff", &format!("{}:{}", f.p(), f.before), f.p(), "--json"]);
    assert_eq!(code, 1, "the paths still differ");
    assert!(j["targets"].as_array().unwrap().is_empty(), "undo restores exactly what the model saw: {j}");
}

#[test]
fn a_pi_fork_is_the_same_leaf_across_sessions() {
    let env = TestEnv::new();
    let f = (0..).find_map(|seed| folded(&env, seed, &format!("f{seed}.jsonl"))).unwrap();
    let fork = pi_fork(&env, "from", &f.path, &f.leaf, "forks");
    let (j, code) = json_exit(&env, &["diff", f.p(), fork.to_str().unwrap(), "--json"]);
    assert_eq!((code, &j["same"]), (0, &Value::Bool(true)), "{j}");
    assert_eq!(j["shared"]["length"], j["a"]["pathLength"]);
    assert_ne!(j["a"]["file"], j["b"]["file"]);
    // A branched fork re-chains entries around labels, so paths may part, but the model sees the same.
    let branched = pi_fork(&env, "branched", &f.path, &f.leaf, "branched");
    let (j, _) = json_exit(&env, &["diff", f.p(), branched.to_str().unwrap(), "--json"]);
    assert!(j["targets"].as_array().unwrap().is_empty(), "{j}");
}

#[test]
fn errors_exit_2() {
    let env = TestEnv::new();
    let path = env.fixture(FIXTURE);
    let p = path.to_str().unwrap();
    assert!(env.fails(&["diff", p, "./missing.jsonl"], 2).contains("no such session file"));
    assert!(env.fails(&["diff", p, &format!("{p}:zzzz")], 2).contains("no entry"));
    env.fails(&["diff", p], 2);
}
