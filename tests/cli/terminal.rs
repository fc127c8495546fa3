//! Output for people on a terminal: `--color auto|always|never` and the colour variables, and the pager
//! (`SHAKE_PAGER`, `PAGER`, `--no-pager`), which runs on a terminal only, never into a pipe. The
//! terminal is a pseudo-terminal from util-linux `script`.

use std::process::Command;

use crate::env::TestEnv;

const ESC: char = '\u{1b}';

/// A folded session: `shake fold` prints a bold sentence, `shake log` a table.
fn folded(env: &TestEnv) -> String {
    let path = env.write("rich.jsonl", crate::synthetic::rich().text);
    let p = path.to_str().unwrap().to_string();
    env.ok(&["fold", &p]);
    p
}

/// Runs `shake ARGS…` on a pseudo-terminal with extra environment, returns what it showed.
fn on_terminal(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> String {
    let mut line = String::from(env!("CARGO_BIN_EXE_shake"));
    for a in args {
        line.push_str(&format!(" '{a}'"));
    }
    let cmd = env.cmd();
    let shake = cmd.get_envs().map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned()))).collect::<Vec<_>>();
    let mut script = Command::new("script");
    script.args(["-qec", &line, "/dev/null"]).current_dir(env.cwd()).env_clear();
    for (k, v) in shake.into_iter().filter(|(k, _)| k != "NO_COLOR") {
        if let Some(v) = v {
            script.env(k, v);
        }
    }
    script.env("TERM", "xterm-256color").envs(vars.iter().copied());
    let out = script.output().expect("util-linux script");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn colour_follows_the_flag_the_terminal_and_no_color() {
    let env = TestEnv::new();
    let p = folded(&env);
    let piped = |color: &str, no_color: bool| {
        let mut cmd = env.cmd();
        if !no_color {
            cmd.env_remove("NO_COLOR");
        }
        String::from_utf8(cmd.args(["log", &p, "--color", color]).output().unwrap().stdout).unwrap()
    };
    assert!(!piped("auto", false).contains(ESC), "auto into a pipe: no colour");
    assert!(piped("always", false).contains(ESC), "always: colour into a pipe too");
    assert!(!piped("never", false).contains(ESC));
    let pager = [("SHAKE_PAGER", "cat")];
    assert!(on_terminal(&env, &pager, &["log", &p]).contains(ESC), "auto on a terminal: colour");
    assert!(!on_terminal(&env, &pager, &["log", &p, "--color", "never"]).contains(ESC));
    assert!(!on_terminal(&env, &[("SHAKE_PAGER", "cat"), ("NO_COLOR", "1")], &["log", &p]).contains(ESC));
}

/// The conventions beyond NO_COLOR (<https://bixense.com/clicolors/>): `CLICOLOR=0` and a dumb
/// terminal turn auto off, `CLICOLOR_FORCE` turns it on into a pipe, and an explicit `--color
/// always` beats `NO_COLOR` (a per-instance flag is the user's latest word, as no-color.org says).
#[test]
fn colour_follows_clicolor_a_dumb_terminal_and_a_flag_beats_no_color() {
    let env = TestEnv::new();
    let p = folded(&env);
    let pager = |var: (&'static str, &'static str)| [("SHAKE_PAGER", "cat"), var];
    assert!(!on_terminal(&env, &pager(("CLICOLOR", "0")), &["log", &p]).contains(ESC), "CLICOLOR=0");
    assert!(!on_terminal(&env, &pager(("TERM", "dumb")), &["log", &p]).contains(ESC), "TERM=dumb");
    let piped = |vars: &[(&str, &str)], args: &[&str]| {
        let out = env.cmd().env_remove("NO_COLOR").envs(vars.iter().copied()).args(["log", &p]).args(args).output();
        String::from_utf8(out.unwrap().stdout).unwrap()
    };
    assert!(piped(&[("CLICOLOR_FORCE", "1")], &[]).contains(ESC), "CLICOLOR_FORCE colours a pipe");
    assert!(!piped(&[("CLICOLOR_FORCE", "1")], &["--color", "never"]).contains(ESC));
    assert!(piped(&[("NO_COLOR", "1")], &["--color", "always"]).contains(ESC), "--color always beats NO_COLOR");
}

#[test]
fn long_tables_are_paged_on_a_terminal_only() {
    let env = TestEnv::new();
    let p = folded(&env);
    let marked = |text: &str| text.lines().filter(|l| !l.is_empty()).all(|l| l.starts_with("paged:"));
    let pager = [("SHAKE_PAGER", "sed s/^/paged:/")];
    let paged = on_terminal(&env, &pager, &["log", &p]);
    assert!(marked(&paged) && paged.contains("fold elide"), "{paged}");
    // PAGER when SHAKE_PAGER is unset; SHAKE_PAGER wins over PAGER.
    assert!(marked(&on_terminal(&env, &[("PAGER", "sed s/^/paged:/")], &["show", &p])));
    let both = [("PAGER", "false"), ("SHAKE_PAGER", "sed s/^/paged:/")];
    assert!(marked(&on_terminal(&env, &both, &["log", &p])));
    // Not with --no-pager, not for a sentence (fold), not into a pipe.
    assert!(!on_terminal(&env, &pager, &["log", &p, "--no-pager"]).contains("paged:"));
    assert!(!on_terminal(&env, &pager, &["status", &p]).contains("paged:"));
    let piped = env.cmd().args(["log", &p]).env("SHAKE_PAGER", "sed s/^/paged:/").output().unwrap();
    assert!(!String::from_utf8(piped.stdout).unwrap().contains("paged:"));
}
