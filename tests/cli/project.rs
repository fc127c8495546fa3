//! `shake project` against pi's own `buildSessionProjection`, on every fixture.

use serde_json::Value;

use crate::env::{fixtures, Oracle, TestEnv};

/// v1 files get random ids from pi's migration, so only entry types and messages compare.
fn comparable(p: &Value, with_ids: bool) -> Value {
    if with_ids {
        return p.clone();
    }
    let entries = p["entries"].as_array().unwrap();
    Value::Array(entries.iter().map(|e| serde_json::json!([e["type"], e["messages"]])).collect())
}

#[test]
fn project_equals_pi_on_every_fixture() {
    let env = TestEnv::new();
    for name in fixtures() {
        let path = env.fixture(&name);
        let path = path.to_str().unwrap();
        let ours: Value = serde_json::from_str(&env.ok(&["project", path, "--json"])).unwrap();
        let pi = Oracle::run("project.mjs", &[path, "--compact"]);
        let v3 = !name.contains(".v1.") && !name.contains("v1-legacy");
        assert_eq!(comparable(&ours, v3), comparable(&pi, v3), "{name}");
    }
}
