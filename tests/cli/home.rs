//! Where the store lives when nothing names it (`docs/format.md`, "Location"): beside pi's
//! sessions for a pi user, else in the platform's data folder, so a user of Claude Code alone gets
//! no `~/.pi`; and the home folder comes from the account database when `HOME` is unset.

use std::path::Path;

use crate::env::TestEnv;

/// Runs `shake meter FILE` in the sandbox with the store unnamed and `vars` set (`HOME` among
/// them unless `home` is false), asserting success.
fn meter(env: &TestEnv, file: &Path, vars: &[(&str, &Path)], home: bool) {
    let mut cmd = env.cmd();
    cmd.env_remove("SHAKE_DIR").envs(vars.iter().copied());
    if !home {
        cmd.env_remove("HOME");
    }
    let out = cmd.args(["meter", file.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_claude_code_user_gets_a_store_in_the_data_folder_not_in_pi_s() {
    let env = TestEnv::new();
    let transcript =
        env.write("cc.jsonl", std::fs::read(crate::env::fixture_path("claude/bash-read/transcript.jsonl")).unwrap());
    // A home with no pi: only Claude Code's folder.
    let home = env.dir.path().join("cc-home");
    std::fs::create_dir_all(home.join(".claude/projects")).unwrap();
    let xdg = env.dir.path().join("xdg");
    meter(&env, &transcript, &[("HOME", &home), ("XDG_DATA_HOME", &xdg)], true);
    assert!(!home.join(".pi").exists(), "a Claude Code user got ~/.pi");
    assert!(xdg.join("shake/packs").is_dir(), "the store is in $XDG_DATA_HOME/shake");
    meter(&env, &transcript, &[("HOME", &home)], true);
    assert!(home.join(".local/share/shake/packs").is_dir(), "without XDG_DATA_HOME: ~/.local/share/shake");

    // Once pi is installed, the store in use stays where it is.
    std::fs::create_dir_all(home.join(".pi/agent")).unwrap();
    let before = std::fs::read_dir(home.join(".local/share/shake/packs")).unwrap().count();
    meter(&env, &env.fixture("pi-v3-branch-compaction-edit.jsonl"), &[("HOME", &home)], true);
    assert!(!home.join(".pi/agent/shake").exists(), "the store moved when pi appeared");
    assert!(std::fs::read_dir(home.join(".local/share/shake/packs")).unwrap().count() > before);

    // A pi user's store is beside pi's sessions, as before.
    let pi_home = env.dir.path().join("home");
    let fresh = env.dir.path().join("xdg-unused");
    meter(&env, &transcript, &[("HOME", &pi_home), ("XDG_DATA_HOME", &fresh)], true);
    assert!(pi_home.join(".pi/agent/shake/packs").is_dir() && !fresh.exists());
}

/// With `HOME` unset, home is the account database's (as Node's `os.homedir()`, which the hosts
/// use), not `/`: pi's sessions are looked for under it (the error names where), and nothing is
/// written there (the store is named).
#[test]
fn without_home_the_account_database_names_it() {
    let env = TestEnv::new();
    let uid = std::process::Command::new("id").arg("-u").output().unwrap().stdout;
    let entry = std::process::Command::new("getent").args(["passwd", String::from_utf8_lossy(&uid).trim()]).output();
    let entry = String::from_utf8(entry.unwrap().stdout).unwrap();
    let db_home = entry.trim_end().split(':').nth(5).expect("getent passwd names a home").to_string();
    assert!(!db_home.is_empty() && db_home != "/", "this test needs a user whose home is not /: {entry}");
    let out = env.cmd().env_remove("HOME").args(["meter"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let looked = format!("looked in {}/.pi/agent/sessions/", db_home.trim_end_matches('/'));
    assert!(out.status.code() == Some(1) && stderr.contains(&looked), "{looked}: {stderr}");
}
