//! The README's quick start, run as a new user runs it: `fold --example` folds a fresh private
//! copy of the bundled session, quietly, says where it is, and the commands the README names next
//! work on that copy as shown.

use crate::env::TestEnv;

const README: &str = include_str!("../../README.md");

#[test]
fn the_quick_start_runs_as_the_readme_shows() {
    let quick = &README[README.find("## Quick start").unwrap()..README.find("## Inside pi").unwrap()];
    assert!(quick.contains("```sh\ncargo run --release -- fold --example\n```"), "{quick}");
    let env = TestEnv::new();
    // A new user: no SHAKE_DIR, so the store is the default one under the (sandbox's) home.
    let run = |args: &[&str]| env.cmd().env_remove("SHAKE_DIR").args(args).output().unwrap();
    let out = run(&["fold", "--example"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "the quick start is quiet");
    let stdout = String::from_utf8(out.stdout).unwrap();
    // The output the README shows, the path in the sandbox's home.
    let shown = quick.split("```console\n").nth(1).unwrap().split("```").next().unwrap();
    assert_eq!(stdout, shown, "README's quick start output");
    assert!(env.dir.path().join("home/.pi/agent/shake/example/example.jsonl").is_file());
    for (cmd, expect) in [
        ("status", "158 entries folded at "),
        ("log", "fold elide/default: 157 tool results (44 superseded reads) + 1 block"),
        ("undo", "Restored 158 entries"),
    ] {
        assert!(quick.contains(&format!("`shake {cmd} ffae836b`")), "README names `shake {cmd} ffae836b`");
        let out = run(&[cmd, "ffae836b"]);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success() && text.contains(expect), "shake {cmd} ffae836b: {text}");
        assert!(text.starts_with("Session ~/.pi/agent/shake/example/example.jsonl\n"), "names the copy: {text}");
    }
    // Again: a fresh copy, the same fold.
    assert_eq!(String::from_utf8(run(&["fold", "--example"]).stdout).unwrap(), stdout);
    // A dry run prints what the real run prints, marked, and changes nothing: the folded copy
    // stays as the fold left it (it replaced it with a fresh copy, issue 32.2).
    let copy = env.dir.path().join("home/.pi/agent/shake/example/example.jsonl");
    let folded = std::fs::read(&copy).unwrap();
    let dry = String::from_utf8(run(&["fold", "--example", "--dry-run"]).stdout).unwrap();
    let (example, shook) = stdout.split_once('\n').unwrap();
    assert_eq!(dry, format!("{example}\n[dry-run] · {shook}"));
    assert_eq!(std::fs::read(&copy).unwrap(), folded, "the dry run left the folded copy as it was");
}
