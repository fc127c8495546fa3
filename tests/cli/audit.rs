//! `shake audit fork` and `shake audit rewind` on families made with pi's own code: generated
//! sessions folded at their leaf, forked (`createBranchedSession`, `forkFrom`) and rewound
//! (`branch` + a new message); every verdict is checked against pi's projection. Then the cases
//! that must be found: a dropped fold, an original lost in the fork, a target folded in place;
//! and the real fixtures, folded in every scope.

use serde_json::Value;

use crate::env::{fixtures, TestEnv};
use crate::family::{
    folded, folded_content, json_exit, line_of, pi_at, pi_fork, pi_rewind, pi_tips, raw_content, rewrite_content,
    text_of, Folded,
};

const SEEDS: std::ops::Range<u64> = 0..4;

fn family(env: &TestEnv) -> Vec<Folded> {
    let all: Vec<Folded> = SEEDS.filter_map(|seed| folded(env, seed, &format!("s{seed}.jsonl"))).collect();
    assert!(all.len() >= 3, "most generated sessions have something to fold");
    all
}

fn folds(v: &Value) -> &Vec<Value> {
    v["folds"].as_array().unwrap()
}

#[test]
fn pi_forks_carry_every_fold_and_every_original() {
    let env = TestEnv::new();
    for (n, f) in family(&env).iter().enumerate() {
        for mode in ["branched", "from"] {
            let fork = pi_fork(&env, mode, &f.path, &f.leaf, &format!("{mode}{n}"));
            let fp = fork.to_str().unwrap();
            let (j, code) = json_exit(&env, &["audit", "fork", f.p(), fp, "--json"]);
            assert_eq!((code, &j["consistent"]), (0, &Value::Bool(true)), "{mode} {}: {j}", f.p());
            assert_eq!(folds(&j).len(), 1);
            let fold = &folds(&j)[0];
            assert_eq!((fold["log"].as_str(), fold["status"].as_str()), (Some(f.log.as_str()), Some("carried")));
            let targets: Vec<&str> =
                fold["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
            assert_eq!(targets, f.targets());
            assert!(fold["targets"].as_array().unwrap().iter().all(|t| t["recoverable"] == true));
            // pi agrees: the fork's model sees each target exactly as the source's does, folded,
            // and the fork's file holds each original byte for byte.
            let (ours, theirs) = (pi_at(&f.path, &f.leaf), pi_at(&fork, &f.leaf));
            for id in f.targets() {
                assert_eq!(ours[&id], theirs[&id], "{mode}: target {id}");
                assert!(text_of(&theirs[&id]).contains("omitted (~"), "{mode}: {id} is folded in the fork");
                assert_eq!(raw_content(&fork, &id), raw_content(&f.path, &id));
            }
            assert_eq!(
                env.ok(&["audit", "fork", f.p(), fp]),
                format!("{}carried\t{}\t{}\t0\n", shared_line(&env, f.p(), fp), f.log, targets.len())
            );
        }
    }
}

/// The `=` record both `diff` and `audit fork` start with.
fn shared_line(env: &TestEnv, a: &str, b: &str) -> String {
    env.run(&["diff", a, b, "--porcelain"])
        .stdout
        .split(|&c| c == b'\n')
        .next()
        .map(|l| String::from_utf8_lossy(l).into_owned() + "\n")
        .unwrap()
}

#[test]
fn folds_after_the_fork_are_later_and_folds_in_the_fork_are_new() {
    let env = TestEnv::new();
    let f = &family(&env)[0];
    // Forked before the fold: the source's fold is "later", not a difference.
    let early = pi_fork(&env, "branched", &f.path, &f.before, "early");
    let (j, code) = json_exit(&env, &["audit", "fork", f.p(), early.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["forkPoint"], f.before.as_str());
    assert_eq!(folds(&j)[0]["status"], "later");
    assert!(folds(&j)[0]["targets"].as_array().unwrap().is_empty());
    // Folding the early fork itself (pi wrote it a while ago): "new", with its originals in the
    // fork's file.
    let e = crate::env::settled(&early);
    let e = e.to_str().unwrap();
    let made: Value = serde_json::from_str(&env.ok(&["fold", e, "--json"])).unwrap();
    let (j, code) = json_exit(&env, &["audit", "fork", f.p(), e, "--json"]);
    assert_eq!(code, 0, "{j}");
    let new: Vec<&Value> = folds(&j).iter().filter(|x| x["status"] == "new").collect();
    assert_eq!(new.len(), 1);
    assert_eq!(new[0]["log"], made["appended"][0]);
    assert!(new[0]["targets"].as_array().unwrap().iter().all(|t| t["recoverable"] == true && t["sameLine"] == true));
}

#[test]
fn a_dropped_fold_and_a_lost_original_are_differences() {
    let env = TestEnv::new();
    let f = &family(&env)[0];
    // The source goes on after the fold; a "fork" that copies it without shake's entries (a tool
    // that copies messages only) re-parents the next message onto the entry before the fold.
    let next = pi_rewind(&f.path, &f.leaf);
    let text = std::fs::read_to_string(&f.path).unwrap();
    let log = line_of(&f.path, &f.log);
    let batch: Vec<&str> = log["data"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["edit"].as_str().unwrap())
        .chain([f.log.as_str()])
        .collect();
    let copied: String = text
        .lines()
        .filter(|l| !batch.iter().any(|id| l.contains(&format!("\"id\":\"{id}\""))))
        .map(|l| l.replace(&format!("\"parentId\":\"{}\"", f.leaf), &format!("\"parentId\":\"{}\"", f.before)) + "\n")
        .collect();
    let copy = env.write("copy.jsonl", copied);
    let (j, code) = json_exit(&env, &["audit", "fork", f.p(), copy.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1, "{j}");
    assert_eq!(j["forkPoint"], next.as_str());
    assert_eq!(folds(&j)[0]["status"], "dropped");
    // pi agrees the copy's model sees the targets unfolded.
    let copied_view = pi_at(&copy, &next);
    for id in f.targets() {
        assert!(!text_of(&copied_view[&id]).contains("omitted (~"));
    }
    // A fork whose file lost an original (rewritten in place with the folded content).
    let fork = pi_fork(&env, "from", &f.path, &f.leaf, "lost");
    let target = &f.targets()[0];
    rewrite_content(&fork, target, &folded_content(&f.path, &log["data"], target));
    let fp = fork.to_str().unwrap();
    let (j, code) = json_exit(&env, &["audit", "fork", f.p(), fp, "--json"]);
    assert_eq!(code, 1);
    let lost: Vec<&Value> =
        folds(&j)[0]["targets"].as_array().unwrap().iter().filter(|t| t["recoverable"] == false).collect();
    assert_eq!(lost.len(), 1);
    assert_eq!((&lost[0]["id"], &lost[0]["problem"]), (&Value::from(target.as_str()), &Value::from("content differs")));
    assert!(env
        .run(&["audit", "fork", f.p(), fp])
        .stdout
        .ends_with(format!("!\t{}\t{target}\tcontent differs\n", f.log).as_bytes()));
    // Lost in the source too: nothing to compare with, but the placeholder gives it away.
    rewrite_content(&f.path, target, &folded_content(&f.path, &log["data"], target));
    let (j, _) = json_exit(&env, &["audit", "fork", f.p(), fp, "--json"]);
    let lost: Vec<&Value> =
        folds(&j)[0]["targets"].as_array().unwrap().iter().filter(|t| t["recoverable"] == false).collect();
    assert_eq!(lost[0]["problem"], "folded in place");
}

#[test]
fn rewinds_strand_folds_and_show_raw_content_again() {
    let env = TestEnv::new();
    for f in &family(&env) {
        let new_leaf = pi_rewind(&f.path, &f.before);
        let (j, code) = json_exit(&env, &["audit", "rewind", f.p(), "--json"]);
        assert_eq!((code, &j["consistent"]), (0, &Value::Bool(true)), "{j}");
        assert_eq!(j["defaultLeaf"], new_leaf.as_str());
        let stranded = j["stranded"].as_array().unwrap();
        assert_eq!(stranded.len(), 1);
        assert_eq!(
            (stranded[0]["log"].as_str(), &stranded[0]["leaves"]),
            (Some(f.log.as_str()), &serde_json::json!([f.leaf]))
        );
        let check = &folds(&j)[0];
        assert_eq!(
            (check["log"].as_str(), check["before"].as_str(), &check["ok"]),
            (Some(f.log.as_str()), Some(f.before.as_str()), &Value::Bool(true))
        );
        // Every leaf's wall against pi: each folded target shows its placeholder there, and on
        // the rewound leaf every fold target shows what it showed before the fold.
        let tips = pi_tips(&f.path);
        for leaf in j["leaves"].as_array().unwrap() {
            let id = leaf["id"].as_str().unwrap();
            let status: Value =
                serde_json::from_str(&env.ok(&["status", &format!("{}:{id}", f.p()), "--json"])).unwrap();
            assert_eq!(leaf["wall"].as_array().unwrap().len(), status["targets"].as_array().unwrap().len());
            for item in leaf["wall"].as_array().unwrap() {
                let text = text_of(&tips[id][item["target"].as_str().unwrap()]);
                assert!(text.contains(item["placeholder"].as_str().unwrap()), "{id}: {item}");
            }
        }
        assert!(j["leaves"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["id"] == f.leaf.as_str() && !l["wall"].as_array().unwrap().is_empty()));
        let before = pi_at(&f.path, &f.before);
        for t in check["targets"].as_array().unwrap() {
            let id = t["id"].as_str().unwrap();
            assert_eq!(before[id], tips[&new_leaf][id], "target {id}: the rewound leaf sees it as before the fold");
            if t["seen"] == "raw" {
                assert_eq!(before[id][0]["content"], raw_content(&f.path, id), "target {id} is raw before the fold");
            }
        }
    }
}

#[test]
fn a_target_folded_in_place_fails_the_rewind_check() {
    let env = TestEnv::new();
    let f = &family(&env)[0];
    let log = line_of(&f.path, &f.log);
    let target = &f.targets()[0];
    rewrite_content(&f.path, target, &folded_content(&f.path, &log["data"], target));
    let (j, code) = json_exit(&env, &["audit", "rewind", f.p(), "--json"]);
    assert_eq!(code, 1, "{j}");
    let check = &folds(&j)[0];
    assert_eq!(check["ok"], false);
    let failed: Vec<&Value> = check["targets"].as_array().unwrap().iter().filter(|t| t["ok"] == false).collect();
    assert_eq!((failed.len(), &failed[0]["problem"]), (1, &Value::from("shows the fold")));
    let text = env.run(&["audit", "rewind", f.p()]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains(&format!("fold\t{}\t{}\tfail\n!\t{}\t{target}\tshows the fold\n", f.log, f.before, f.log)),
        "{text}"
    );
    let z = env.run(&["audit", "rewind", f.p(), "-z"]).stdout;
    assert_eq!(String::from_utf8(z).unwrap(), text.replace(['\t', '\n'], "\0"), "-z: the same fields, NUL-ended");
}

#[test]
fn audit_errors_exit_2() {
    let env = TestEnv::new();
    let f = &family(&env)[0];
    assert!(env.fails(&["audit", "fork", f.p(), "./missing.jsonl"], 2).contains("no such session file"));
    assert!(env.fails(&["audit", "fork", f.p(), &format!("{}:zzzz", f.p())], 2).contains("no entry"));
    assert!(env.fails(&["audit", "rewind", &format!("{}:{}", f.p(), f.leaf)], 2).contains("takes a session"));
    env.fails(&["audit", "rewind", "./missing.jsonl"], 2);
    env.fails(&["audit"], 2);
    let unrelated = env.fixture("pi-v3-branch-compaction-edit.jsonl");
    assert!(env.fails(&["audit", "fork", f.p(), unrelated.to_str().unwrap()], 2).contains("is not a fork of"));
    // pi's own loader refuses a non-session file; so does the audit, with exit 2.
    let bad = env.write("bad.jsonl", "[1,2]\n");
    env.fails(&["audit", "rewind", bad.to_str().unwrap()], 2);
}

#[test]
fn audits_hold_on_the_real_fixtures() {
    let env = TestEnv::new();
    let mut folded_any = 0;
    for name in fixtures().iter().filter(|n| !n.contains("v1")) {
        let path = env.fixture(name);
        let p = path.to_str().unwrap();
        if !std::fs::read(&path).unwrap().ends_with(b"\n") {
            continue; // shake refuses to append after a partial line
        }
        let mut made: Vec<Value> = Vec::new();
        for scope in ["elide", "thinking", "images"] {
            let fold: Value = serde_json::from_str(&env.ok(&["fold", p, "--scope", scope, "--json"])).unwrap();
            if !fold["appended"].as_array().unwrap().is_empty() {
                made.push(fold);
            }
        }
        let (rewind, code) = json_exit(&env, &["audit", "rewind", p, "--json"]);
        assert_eq!(code, 0, "{name}: {rewind}");
        let logs: Vec<&Value> = made.iter().map(|f| &f["appended"][0]).collect();
        assert_eq!(folds(&rewind).iter().map(|f| &f["log"]).collect::<Vec<_>>(), logs, "{name}");
        let Some(fold) = made.last() else { continue };
        folded_any += 1;
        let leaf = fold["appended"].as_array().unwrap().last().unwrap().as_str().unwrap();
        let fork = pi_fork(&env, "from", &path, leaf, &format!("fork-{name}"));
        let (j, code) = json_exit(&env, &["audit", "fork", p, fork.to_str().unwrap(), "--json"]);
        assert_eq!(code, 0, "{name}: {j}");
        assert!(folds(&j).iter().all(|f| f["status"] == "carried"), "{name}: {j}");
        // pi sees each folded target the same in the fork as in the source.
        let (ours, theirs) = (pi_at(&path, leaf), pi_at(&fork, leaf));
        for t in made.iter().flat_map(|f| f["targets"].as_array().unwrap()) {
            let id = t["id"].as_str().unwrap();
            assert_eq!(ours[id], theirs[id], "{name}: {id}");
        }
    }
    assert!(folded_any >= 2, "two real fixtures have something to fold");
}
