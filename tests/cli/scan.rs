//! `shake scan`: the secret scan push runs before anything leaves, run on stored sessions. A
//! planted AWS key, GitHub token and private key in tool output are caught, named by session,
//! entry and kind, never printed whole; what the user allows (`--allow`, `.shake.toml`) goes
//! through; the real fixtures give no finding.

use crate::env::{fixture_path, TestEnv};

const AWS: &str = "AKIAQYLPMN5HHHFPZAM2";
const GITHUB: &str = "ghp_4kd93nfLq0x8ZrT2mWv7YpB1cHs6Je5Ua3Rt";
const PEM_BODY: &str = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0";

/// A pi session whose tool output holds the three planted secrets (as JSON escapes them).
pub fn session() -> String {
    let pem = format!("-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\n");
    let output = format!("$ cat .env ~/.ssh/id_rsa\nAWS_ACCESS_KEY_ID={AWS}\nGITHUB_TOKEN={GITHUB}\n{pem}");
    let result = serde_json::json!({
        "type": "message", "id": "r1", "parentId": "c1", "timestamp": "2026-11-01T10:00:02.000Z",
        "message": {"role": "toolResult", "toolCallId": "t1", "toolName": "bash",
                    "content": [{"type": "text", "text": output}], "isError": false, "timestamp": 2}
    });
    [
        r#"{"type":"session","version":3,"id":"5ec7-planted","timestamp":"2026-11-01T10:00:00.000Z","cwd":"/w"}"#.to_string(),
        r#"{"type":"message","id":"c1","parentId":null,"timestamp":"2026-11-01T10:00:01.000Z","message":{"role":"user","content":"show me the config","timestamp":1}}"#.to_string(),
        result.to_string(),
        String::new(),
    ]
    .join("\n")
}

fn findings(out: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    v["findings"].as_array().unwrap().clone()
}

#[test]
fn scan_catches_planted_keys_in_tool_output_and_allows_what_the_user_names() {
    let env = TestEnv::new();
    let path = env.write("planted.jsonl", session());
    env.ok(&["import", path.to_str().unwrap()]);

    let out = env.run(&["scan", "--json"]);
    assert_eq!(out.status.code(), Some(1), "a finding is exit 1: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let found = findings(&stdout);
    let kinds: Vec<&str> = found.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["aws-access-token", "github-pat", "private-key"], "{stdout}");
    for f in &found {
        assert_eq!((f["session"].as_str(), f["entry"].as_str()), (Some("5ec7-planted"), Some("r1")), "{f}");
    }
    // Never a secret whole: its first characters and its length only.
    for secret in [AWS, GITHUB, PEM_BODY] {
        assert!(!stdout.contains(secret) && !stdout.contains(&secret[8..]), "{secret} printed: {stdout}");
    }
    assert!(found[0]["excerpt"].as_str().unwrap().contains("AWS_ACCESS_KEY_ID=AKIA…[16 chars redacted]"));
    assert!(found[2]["excerpt"].as_str().unwrap().starts_with("-----BEGIN RSA PRIVATE KEY-----…"));

    // For people: the session as shake names it, the entry, the kind, the fingerprint.
    let people = String::from_utf8(env.run(&["scan"]).stdout).unwrap();
    assert!(people.contains("planted.jsonl:r1: aws-access-token fp:"), "{people}");
    assert!(people.contains("3 secrets in 1 session."), "{people}");

    // Allowed by kind, by one secret's fingerprint, or in the config file.
    let fp = found[1]["fingerprint"].as_str().unwrap().to_string();
    let left = |args: &[&str], code: i32| -> Vec<String> {
        let mut all = vec!["scan", "--json"];
        all.extend_from_slice(args);
        let out = env.run(&all);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        findings(&String::from_utf8(out.stdout).unwrap())
            .iter()
            .map(|f| f["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(left(&["--allow", "aws-access-token"], 1), ["github-pat", "private-key"]);
    assert_eq!(left(&["--allow", &fp, "--allow", "private-key"], 1), ["aws-access-token"]);
    std::fs::write(env.cwd().join(".shake.toml"), "[scan]\nallow = [\"aws-access-token\", \"private-key\"]\n").unwrap();
    assert_eq!(left(&["--allow", "github-pat"], 0), Vec::<String>::new());
    assert_eq!(left(&[], 1), ["github-pat"]);
    // A name that allows nothing is an error (exit 2), not silence.
    let e = env.fails(&["scan", "--allow", "aws-key"], 2);
    assert!(e.contains("no secret rule has that id"), "{e}");
    // The session named: the same findings; another session: none.
    let clean = env.write(
        "clean.jsonl",
        session().replace(AWS, "nothing").replace(GITHUB, "x").replace("PRIVATE KEY", "PUBLIC KEY"),
    );
    env.ok(&["import", clean.to_str().unwrap()]);
    env.ok(&["scan", clean.to_str().unwrap()]);
    env.fails(&["scan", path.to_str().unwrap()], 1);
}

/// Every real session in `tests/fixtures/` (pi's, Claude Code's, oh-my-pi's: tool output, diffs,
/// READMEs with `sk-ant-...` placeholders) scans clean: `docs/search.md` lists what rules were
/// set aside and why.
#[test]
fn scan_finds_nothing_in_the_real_fixtures() {
    let env = TestEnv::new();
    let root = fixture_path("");
    let files: Vec<String> = walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|e| e.path().to_string_lossy().into_owned())
        .collect();
    assert!(files.len() > 30, "{files:?}");
    for f in &files {
        // Some fixtures are damaged on purpose: what imports is scanned.
        let _ = env.run(&["import", f]);
    }
    let out = env.run(&["scan", "--json"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["sessions"].as_u64().unwrap() > 30, "{v}");
}
