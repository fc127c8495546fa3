//! `shake generate-session`: hidden, deterministic, sized as asked.

use crate::env::TestEnv;

#[test]
fn generate_session_is_hidden_deterministic_and_sized() {
    let env = TestEnv::new();
    assert!(!env.ok(&["--help"]).contains("generate-session"));
    let out = env.dir.path().join("g.jsonl");
    env.ok(&["generate-session", "--seed", "9", "--size", "300K", "-o", out.to_str().unwrap()]);
    let written = std::fs::read(&out).unwrap();
    assert!(written.len() >= 300 << 10);
    let again = env.cmd().args(["generate-session", "--seed", "9", "--size", "300K"]).output().unwrap().stdout;
    assert_eq!(written, again);
    let n = env.ok(&["generate-session", "--seed", "9", "--entries", "500", "--cwd", "/w"]);
    assert!(n.lines().count() > 500);
    assert!(n.starts_with(r#"{"type":"session","version":3,"#) && n.lines().next().unwrap().contains(r#""cwd":"/w""#));
    let err = env.fails(&["generate-session", "--size", "1M", "--entries", "5"], 2);
    assert!(err.contains("cannot be used with"), "{err}");
    let err = env.fails(&["generate-session", "--size", "5X"], 2);
    assert!(err.contains("unknown size unit"), "{err}");
    let omp = env.ok(&[
        "--host",
        "omp",
        "generate-session",
        "--seed",
        "9",
        "--entries",
        "300",
        "--model",
        "openai/gpt-5.1-codex",
    ]);
    assert!(omp.starts_with(r#"{"type":"title","v":1,"#) && omp.lines().next().unwrap().len() == 255, "{omp:.300}");
    assert!(omp.contains(r#""model":"openai/gpt-5.1-codex""#));
    let err = env.fails(&["generate-session", "--model", "openai/gpt-5.1-codex"], 1);
    assert!(err.contains("--host omp"), "{err}");
}
