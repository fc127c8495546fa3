//! `shake restore` as a user meets it: with no session it restores pi's current session here,
//! and a restored file has the mode pi would give it (the replaced file's, else a new file's).

use std::os::unix::fs::PermissionsExt;

use crate::env::TestEnv;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn restore_defaults_to_the_current_session_and_keeps_pis_mode() {
    let env = TestEnv::new();
    let text = crate::synthetic::rich().text;
    let path = env.pi_session("0199cccc-3333", &text);
    env.ok(&["status"]);
    std::fs::remove_file(&path).unwrap();
    // A file created as pi creates its session files: 0666 less the umask.
    let probe = path.with_file_name("probe");
    std::fs::File::create(&probe).unwrap();
    let new_mode = mode(&probe);
    std::fs::remove_file(&probe).unwrap();
    let err = env.fails(&["restore"], 1);
    assert!(err.contains("no pi session"), "gone, so pi has no current session: {err}");
    env.ok(&["restore", path.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(mode(&path), new_mode, "a new file's mode, not 0600");
    // Now the file is there: restore with no session acts on it, and keeps its mode.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    // Rewritten in place by some tool (here: cut to its first lines).
    let cut: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, cut).unwrap();
    let err = env.fails(&["restore"], 1);
    assert!(err.contains("exists; not overwritten"), "{err}");
    let out = env.ok(&["restore", "--force", "--version", "1"]);
    assert!(out.trim_end().ends_with(path.to_str().unwrap()), "{out}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(mode(&path), 0o640, "the replaced file's mode");
}

/// `restore --force` while pi appends (a pi-style writer, an entry every millisecond): every
/// entry pi appended is in the file afterwards, or in the version a restore that went through
/// imported before it replaced the file. A restore that sees the file move between its first
/// look and its rename refuses, writing nothing (the window is widened by
/// `SHAKE_TEST_APPEND_DELAY_MS`).
#[test]
fn restore_force_never_loses_what_pi_appends_meanwhile() {
    let env = TestEnv::new();
    let path = env.write("race.jsonl", crate::append::small());
    let file = path.to_str().unwrap();
    env.ok(&["status", file]);
    let leaf = crate::append::resumed_branch(&std::fs::read(&path).unwrap())[0].clone();
    let mut refused = 0;
    for round in 0..4 {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (path, leaf, stop) = (path.clone(), leaf.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let prefix = format!("r{round}n{:04}", ids.len());
                    ids.extend(crate::append::append_as_pi(&path, leaf.clone(), &prefix, 1));
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                ids
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(5));
        let out = env
            .cmd()
            .env(shake_plumbing::append::DELAY_ENV, "50")
            .args(["restore", "--force", "--version", "1", file])
            .output()
            .unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let ids = writer.join().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => {}
            Some(1) if err.contains("changed while it was being restored") => refused += 1,
            code => panic!("round {round}: exit {code:?}: {err}"),
        }
        let lost = lost(&env, file, &ids);
        assert!(
            lost.is_empty(),
            "round {round}: {} of {} entries pi appended are lost: {lost:?}\n{err}",
            lost.len(),
            ids.len()
        );
    }
    assert!(refused > 0, "the writer never ran inside a restore");
}

/// Under umask 000, `restore -o NEW` makes a private copy (0600, as `export` does), never a
/// world-writable one; restoring a session's own path gives it the mode pi gives its files.
#[test]
fn restore_to_a_new_file_is_private_whatever_the_umask() {
    let env = TestEnv::new();
    let path = env.write("s.jsonl", crate::append::small());
    let file = path.to_str().unwrap();
    env.ok(&["status", file]);
    let copy = env.dir.path().join("copy.jsonl");
    let mut cmd = env.cmd_through(&["sh", "-c", "umask 000; exec \"$0\" \"$@\""]);
    cmd.args(["restore", file, "-o", copy.to_str().unwrap()]);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mode(&copy), 0o600);
}

/// The `ids` (entries pi appended) that are neither in the session file `path` nor in one of
/// the store's last four versions of it: a restore that went through replaced the entries that
/// were there when it looked, after importing them as a version.
pub fn lost<'i>(env: &TestEnv, path: &str, ids: &'i [String]) -> Vec<&'i String> {
    let err = env.fails(&["restore", path, "--version", "999999", "-o", "-"], 1);
    let count: usize = err.split("(it has ").nth(1).and_then(|r| r.split(')').next()).unwrap().parse().unwrap();
    let mut texts = vec![std::fs::read_to_string(path).unwrap()];
    for n in count.saturating_sub(3).max(1)..=count {
        texts.push(env.ok(&["restore", path, "--version", &n.to_string(), "-o", "-"]));
    }
    ids.iter().filter(|id| !texts.iter().any(|t| t.contains(&format!("\"id\":\"{id}\"")))).collect()
}
