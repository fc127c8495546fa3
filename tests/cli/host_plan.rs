//! `shake fold --plan` and `shake undo --plan`: the batch a host (the pi extension) appends with
//! its own writer is exactly what `fold` / `undo` append, and planning writes nothing.

use serde_json::Value;

use crate::env::TestEnv;
use crate::synthetic;

fn json(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_str(&env.ok(args)).unwrap()
}

/// Runs a writing command and returns what it appended: the log entry's data with its edit ids
/// blanked, and the edits as `{targetId, replacement}`.
fn appended(env: &TestEnv, path: &std::path::Path, args: &[&str]) -> (Value, Vec<Value>) {
    let before = std::fs::read_to_string(path).unwrap().lines().count();
    env.ok(args);
    let text = std::fs::read_to_string(path).unwrap();
    let new: Vec<Value> = text.lines().skip(before).map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut log = new[0]["data"].clone();
    for t in log["targets"].as_array_mut().unwrap() {
        t["edit"] = Value::String(String::new());
    }
    let edits = new[1..]
        .iter()
        .map(|e| serde_json::json!({"targetId": e["targetId"], "replacement": e["replacement"]}))
        .collect();
    (log, edits)
}

/// Asserts that a plan is what the real run then appends, and that planning wrote nothing.
fn assert_plan_is_the_batch(env: &TestEnv, path: &std::path::Path, verb: &str) -> Value {
    let p = path.to_str().unwrap();
    let bytes = std::fs::read(path).unwrap();
    let plan = json(env, &[verb, p, "--plan"]);
    assert_eq!(std::fs::read(path).unwrap(), bytes, "{verb} --plan writes nothing");
    let dry = env.ok(&[verb, p, "--dry-run"]);
    assert_eq!(dry, format!("[dry-run] · {}\n", plan["message"].as_str().unwrap()));
    let (log, edits) = appended(env, path, &[verb, p]);
    assert_eq!(plan["log"], log, "{verb}");
    assert_eq!(plan["edits"].as_array().unwrap(), &edits, "{verb}");
    plan
}

#[test]
fn plans_are_the_batches_fold_and_undo_write() {
    let env = TestEnv::new();
    let path = env.write("rich.jsonl", synthetic::rich().text);
    let p = path.to_str().unwrap();
    let fold = assert_plan_is_the_batch(&env, &path, "fold");
    assert_eq!(fold["tokensFreed"], fold["log"]["tokens"]);
    assert!(fold["edits"].as_array().unwrap().len() > 1);
    let undo = assert_plan_is_the_batch(&env, &path, "undo");
    assert_eq!(undo["tokensRestored"], undo["log"]["tokens"]);
    assert_eq!(undo["edits"].as_array().unwrap().len(), fold["edits"].as_array().unwrap().len());

    // Nothing to do: no edits, no log entry, and the sentence says why.
    let again = json(&env, &["undo", p, "--plan"]);
    assert_eq!(again["edits"], serde_json::json!([]));
    assert_eq!(again["log"], Value::Null);
    assert!(again["message"].as_str().unwrap().starts_with("Nothing to undo"), "{again}");
    env.fails(&["fold", p, "--plan", "--dry-run"], 2);
}

#[test]
fn plans_follow_the_leaf_named_in_the_revision() {
    let env = TestEnv::new();
    let path = env.write("rich.jsonl", synthetic::rich().text);
    let p = path.to_str().unwrap();
    let whole = json(&env, &["fold", p, "--plan"]);
    // At the first user message nothing is old enough to fold.
    let first_user = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["message"]["role"] == "user")
        .unwrap();
    let early = json(&env, &["fold", &format!("{p}:{}", first_user["id"].as_str().unwrap()), "--plan"]);
    assert_eq!(early["edits"], serde_json::json!([]));
    assert_ne!(whole["edits"], early["edits"]);
}
