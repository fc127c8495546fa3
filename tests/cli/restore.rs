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
