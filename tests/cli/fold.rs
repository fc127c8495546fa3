//! `shake fold` and `shake regions`: the sentence, the JSON, profiles and where they come from,
//! scopes, `--branch`, and the skip-set that makes a repeat fold a no-op.

use serde_json::Value;

use crate::env::TestEnv;
use crate::synthetic;

fn setup() -> (TestEnv, String) {
    let env = TestEnv::new();
    let path = env.write("rich.jsonl", synthetic::rich().text);
    let p = path.to_str().unwrap().to_string();
    (env, p)
}

fn json(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.ok(args)).unwrap()
}

#[test]
fn the_sentence_names_counts_tokens_tail_profile_and_tokenizer() {
    // The session's model is Claude Sonnet 4.5: Claude's count is the default.
    let (env, p) = setup();
    let dry = env.ok(&["fold", &p, "--dry-run"]);
    let plan = json(&env, &["fold", &p, "--dry-run", "--json"]);
    let freed = crate::render_thousands(plan["tokensFreed"].as_u64().unwrap());
    assert_eq!(
        dry,
        format!(
            "[dry-run] · Shook 3 tool results + 4 blocks (~{freed} tokens). Protects the last 4,000 tokens. Profile: default (built-in). Tokenizer: claude-v3.\n\
             Cache: cold (the last turn was more than 5 minutes ago), so this fold is free now. Prices: built-in prices for claude-sonnet (2025-11-24).\n"
        )
    );
    assert_eq!(plan["cache"]["verdict"], "cache cold: free now");
    let real = env.ok(&["fold", &p]);
    assert_eq!(real, dry.trim_start_matches("[dry-run] · "));
    assert_eq!(
        env.ok(&["fold", &p]),
        "Nothing to fold. Protects the last 4,000 tokens. Profile: default (built-in). Tokenizer: claude-v3.\n"
    );
    let thinking = env.ok(&["fold", &p, "--scope", "thinking", "--tokenizer", "o200k"]);
    assert!(
        thinking.starts_with("Shook 1 thinking block (~")
            && thinking.lines().next().unwrap().ends_with("Tokenizer: o200k."),
        "{thinking}"
    );
    assert!(env.ok(&["fold", &p, "--scope", "images"]).starts_with("Shook 2 images (~2,3"));
}

#[test]
fn json_has_the_documented_keys() {
    let (env, p) = setup();
    let v = json(&env, &["fold", &p, "--json"]);
    for key in [
        "op",
        "scope",
        "profile",
        "profileSource",
        "tokenizer",
        "toolResults",
        "blocks",
        "thinking",
        "images",
        "tokensFreed",
        "targets",
        "appended",
        "leafBefore",
        "leafAfter",
        "resumePointMoved",
        "dryRun",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(
        v["appended"].as_array().unwrap().len(),
        1 + 7 - 1,
        "log entry + one edit per target (the user text holds 2 blocks)"
    );
    assert_eq!(v["leafAfter"], v["appended"][6]);
    assert_eq!(v["resumePointMoved"], false);
    let t = &v["targets"][0];
    assert!(t["id"].is_string() && t["kind"].is_string() && t["tokens"].is_u64());
}

#[test]
fn profile_comes_from_flag_then_project_then_agent_settings() {
    let (env, p) = setup();
    std::fs::write(env.agent_dir().join("settings.json"), r#"{"shake":{"profile":"conservative"}}"#).unwrap();
    let out = env.ok(&["fold", &p, "--dry-run"]);
    assert!(
        out.contains("Protects the last 8,000 tokens. Profile: conservative (settings.json (agent directory))."),
        "{out}"
    );
    std::fs::create_dir_all(env.cwd().join(".pi")).unwrap();
    std::fs::write(env.cwd().join(".pi/settings.json"), r#"{"shake":{"profile":"aggressive"}}"#).unwrap();
    let v = json(&env, &["fold", &p, "--dry-run", "--json"]);
    assert_eq!((v["profile"].as_str(), v["profileSource"].as_str()), (Some("aggressive"), Some("project")));
    let v = json(&env, &["fold", &p, "--dry-run", "--json", "--profile", "default"]);
    assert_eq!(v["profileSource"], "flag");
}

#[test]
fn branch_folds_another_leaf_and_says_pi_will_resume_it() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let path = env.write("rich.jsonl", &rich.text);
    let p = path.to_str().unwrap();
    // Moving pi's resume point is refused, in a dry run as in the real run (issue 32.3), and
    // says how to come back.
    let before = std::fs::read(&path).unwrap();
    let resume = env.ok(&["rev-parse", p]).trim_end().split_once(' ').unwrap().1.to_string();
    for dry in [&["--dry-run"][..], &[]] {
        let err = env.fails(&[&["fold", p, "--branch", &rich.side_leaf, "--profile", "aggressive"], dry].concat(), 1);
        assert!(err.contains("moves pi's resume point") && err.contains("pass --force"), "{err}");
        assert!(err.contains(&format!("to go back to {resume} afterwards, move pi back to it (pi: /tree)")), "{err}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
    let out = env.ok(&["fold", p, "--branch", &rich.side_leaf, "--profile", "aggressive", "--force"]);
    assert!(out.contains(&format!("pi will now resume this branch (after {})", rich.side_leaf)), "{out}");
    // The appended entries are the file's last: pi's leaf on load is now on the side branch.
    let status: Value = serde_json::from_str(&env.ok(&["status", p, "--json"])).unwrap();
    assert!(status["entries"].as_u64().unwrap() > 0);
    let v = json(&env, &["undo", p, "--json"]);
    assert_eq!(v["resumePointMoved"], false);
}

#[test]
fn a_branch_folded_once_is_not_folded_again() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let path = env.write("rich.jsonl", &rich.text);
    let p = path.to_str().unwrap();
    let first = json(&env, &["fold", p, "--branch", &rich.side_leaf, "--json", "--force"]);
    assert!(!first["appended"].as_array().unwrap().is_empty());
    let leaves = env.ok(&["ls-leaves", p]);
    let bytes = std::fs::read(&path).unwrap();
    // Again by --branch, and as a bare `:ENTRY`: the branch now ends after the first fold.
    for rev in [vec![p, "--branch", &rich.side_leaf], vec![&format!("{p}:{}", rich.side_leaf)]] {
        let dry = env.ok(&[&["fold"], rev.as_slice(), &["--dry-run"]].concat());
        assert!(dry.starts_with("[dry-run] · Nothing to fold.") && !dry.contains("resume"), "{dry}");
        let again = json(&env, &[&["fold"], rev.as_slice(), &["--json"]].concat());
        assert_eq!(again["appended"], Value::Array(vec![]));
        assert_eq!(again["resumePointMoved"], false);
        assert_eq!(again["leafBefore"], first["leafAfter"]);
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing appended");
    assert_eq!(env.ok(&["ls-leaves", p]), leaves, "no new leaf");
}

#[test]
fn a_dry_run_says_what_the_real_run_does() {
    let env = TestEnv::new();
    let rich = synthetic::rich();
    let path = env.write("rich.jsonl", &rich.text);
    let p = path.to_str().unwrap();
    // The first entry (nothing to fold there) and a side branch: neither is pi's leaf; a write
    // moves pi's resume point, and no write leaves it.
    let root = env.ok(&["ls-entries", p]).lines().next().unwrap().split('\t').next().unwrap().to_string();
    for (leaf, scope) in [(&root, "elide"), (&rich.side_leaf, "images"), (&rich.side_leaf, "elide")] {
        let args = ["fold", p, "--branch", leaf, "--scope", scope, "--force"];
        let dry = json(&env, &[&args[..], &["--dry-run", "--json"]].concat());
        let dry_text = env.ok(&[&args[..], &["--dry-run"]].concat());
        let real = json(&env, &[&args[..], &["--json"]].concat());
        assert_eq!(dry["resumePointMoved"], real["resumePointMoved"], "{leaf} {scope}");
        assert_eq!(dry["tokensFreed"], real["tokensFreed"], "{leaf} {scope}");
        if real["resumePointMoved"] == true {
            assert!(!real["appended"].as_array().unwrap().is_empty(), "moved without a write");
        }
        assert_eq!(dry_text.contains("would resume"), real["resumePointMoved"] == true, "{leaf} {scope}: {dry_text}");
    }
}

#[test]
fn regions_lists_candidates_without_writing() {
    let (env, p) = setup();
    let before = std::fs::read(&p).unwrap();
    let v = json(&env, &["regions", &p, "--json"]);
    let plan = json(&env, &["fold", &p, "--dry-run", "--json"]);
    let ours: Vec<(&Value, &Value, &Value)> =
        v["regions"].as_array().unwrap().iter().map(|r| (&r["id"], &r["kind"], &r["tokens"])).collect();
    let theirs: Vec<(&Value, &Value, &Value)> =
        plan["targets"].as_array().unwrap().iter().map(|r| (&r["id"], &r["kind"], &r["tokens"])).collect();
    assert_eq!(ours, theirs);
    let text = env.ok(&["regions", &p, "--scope", "images"]);
    assert_eq!(text.lines().count(), 2);
    assert!(text.contains("\timage\timage/png\t1200\t[image/png omitted (~1,200 tokens)]"), "{text}");
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn regions_agrees_with_the_dry_run_after_a_fold() {
    let (env, p) = setup();
    let triple = |v: &Value, key: &str| -> Vec<(Value, Value, Value)> {
        v[key].as_array().unwrap().iter().map(|r| (r["id"].clone(), r["kind"].clone(), r["tokens"].clone())).collect()
    };
    env.ok(&["fold", &p]);
    assert_eq!(env.ok(&["regions", &p]), "", "what is folded is not listed again");
    for profile in ["default", "aggressive"] {
        for scope in ["elide", "thinking", "images"] {
            let args = ["--scope", scope, "--profile", profile, "--json"];
            let regions = json(&env, &[&["regions", &p][..], &args].concat());
            let plan = json(&env, &[&["fold", &p, "--dry-run"][..], &args].concat());
            assert_eq!(triple(&regions, "regions"), triple(&plan, "targets"), "{scope} {profile}");
        }
    }
    env.ok(&["fold", &p, "--profile", "aggressive"]);
    assert_eq!(json(&env, &["regions", &p, "--profile", "aggressive", "--json"])["regions"], Value::Array(vec![]));
}

#[test]
fn folds_compose_across_scopes_and_undo_restores_all() {
    let (env, p) = setup();
    env.ok(&["fold", &p]);
    env.ok(&["fold", &p, "--scope", "thinking"]);
    let status: Value = serde_json::from_str(&env.ok(&["status", &p, "--json"])).unwrap();
    assert_eq!(status["byKind"]["thinking"], 1);
    assert_eq!(status["byKind"]["block"], 4);
    // The assistant message with a folded rust block and its thinking dropped: one edit holds both.
    let project: Value = serde_json::from_str(&env.ok(&["project", &p, "--json"])).unwrap();
    let assistant = project["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap();
    let content = assistant["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert!(content[0]["text"].as_str().unwrap().contains("[rust block omitted (~"));
    assert_eq!(content[0]["textSignature"], "t1");
    let undo = env.ok(&["undo", &p]);
    assert!(undo.starts_with("Restored 6 entries (~"), "{undo}");
}

#[test]
fn undo_last_restores_only_the_most_recent_fold() {
    let env = TestEnv::new();
    let text = synthetic::rich().text;
    let (a, b) = (env.write("a.jsonl", &text), env.write("b.jsonl", &text));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let messages = |p: &str| json(&env, &["project", p, "--json"])["messages"].clone();
    let original = messages(a);
    env.ok(&["fold", a]);
    env.ok(&["fold", b]);
    let thinking = json(&env, &["fold", a, "--scope", "thinking", "--json"]);
    let undo = json(&env, &["undo", a, "--last", "--json"]);
    assert_eq!(undo["undoes"], thinking["appended"][0], "the thinking fold is undone");
    let log = env.ok(&["log", a]);
    assert!(
        log.contains(&format!("restored 1 entry folded by {}", thinking["appended"][0].as_str().unwrap())),
        "{log}"
    );
    // What the model sees equals a session folded by the elide fold alone.
    assert_eq!(messages(a), messages(b));
    let (sa, sb) = (json(&env, &["status", a, "--json"]), json(&env, &["status", b, "--json"]));
    assert_eq!((&sa["byKind"], &sa["tokensFreed"]), (&sb["byKind"], &sb["tokensFreed"]));
    assert_eq!(sa["byKind"]["thinking"], 0);
    // Again: the elide fold goes too, and then there is nothing left to undo.
    let text = env.ok(&["undo", a, "--last"]);
    assert!(text.starts_with("Restored ") && text.contains(", the fold of log entry "), "{text}");
    assert_eq!(messages(a), original);
    assert!(env.ok(&["undo", a, "--last"]).starts_with("Nothing to undo"));
    assert_eq!(json(&env, &["undo", b, "--json"])["undoes"], Value::Null, "plain undo restores all");
    assert_eq!(messages(b), original);
}
