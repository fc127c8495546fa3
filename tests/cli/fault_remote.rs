//! The fault study's remote part (`docs/remotes.md`, "Interrupted"): on a real Garage node, each
//! trial adds a session on machine A, SIGKILLs A's `push` 0 to 250 ms after its start (its
//! pauses, before the index, before the manifest and after each fetched pack, each widened by 0
//! to 100 ms), then checks that no manifest names a pack that is not there whole (`fsck
//! --remote`), SIGKILLs B's `fetch` the same way and checks B's store (`fsck`), then runs both
//! again to the end: every session A has must read in B as `alpha/<session>`.
//!
//! Ignored by default; run it with
//! `SHAKE_STUDY_REMOTE=20 cargo test --test cli fault_remote -- --ignored --nocapture`
//! (100 trials by default) and copy the figures it prints.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::fault_study::{trials, Figures, Rng};
use crate::remote::Machine;
use crate::remote_garage::Garage;

/// Spawns `shake ARGS` on `m` with the remote pauses `pause` ms each, kills it after `after`
/// ms (if it is still running), and returns its output.
fn killed(m: &Machine, args: &[&str], pause: u64, after: u64) -> std::process::Output {
    let mut cmd = m.cmd_through(&[]);
    for var in [
        shake_plumbing::remote::PAUSE_INDEX_ENV,
        shake_plumbing::remote::PAUSE_MANIFEST_ENV,
        shake_plumbing::remote::PAUSE_FETCH_ENV,
    ] {
        cmd.env(var, pause.to_string());
    }
    let mut child = cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_millis(after);
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

/// Runs `shake ARGS` to its end under `timeout 120` (exit 124: a hang).
fn finished(m: &Machine, args: &[&str]) -> std::process::Output {
    m.cmd_through(&["timeout", "120"]).args(args).output().unwrap()
}

#[test]
#[ignore = "the fault study's remote part: minutes of work; run with --ignored --nocapture"]
fn fault_remote() {
    let seed = std::env::var("SHAKE_STUDY_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_u64);
    let n = trials("REMOTE", 100);
    let mut rng = Rng(seed);
    let garage = Garage::start();
    println!("fault study (remote), seed {seed}; garage single node ready in {:?}", garage.started_in);
    let (a, b) = garage.machines();
    let (mut pushes, mut fetches) = (Figures::default(), Figures::default());
    let (mut sessions, mut cut_pushes, mut cut_fetches) = (0, 0, 0);
    for t in 0..n {
        // Something new on A: a generated session of its own (a new pack to send).
        let id = format!("0199f00d-{t:04}");
        let text = a.ok(&["generate-session", "--seed", &t.to_string(), "--entries", "60"]);
        let path = a.env.pi_session(&id, crate::remote::fork_of(&text, &id));
        a.ok(&["import", path.to_str().unwrap()]);
        sessions += 1;
        let pause = rng.below(100) as u64;
        let push = killed(&a, &["push"], pause, rng.below(250) as u64);
        cut_pushes += usize::from(push.status.code().is_none());
        let check = finished(&b, &["fsck", "--remote", "origin", "--json"]);
        let sound = check.status.success();
        if !sound {
            eprintln!("push trial {t}: fsck --remote: {}", String::from_utf8_lossy(&check.stdout));
        }
        let again = finished(&a, &["push"]);
        pushes.count(sound && again.status.success(), &push);

        let fetch = killed(&b, &["fetch"], pause, rng.below(250) as u64);
        cut_fetches += usize::from(fetch.status.code().is_none());
        let local = finished(&b, &["fsck"]);
        let done = finished(&b, &["fetch"]);
        let listed = finished(&b, &["sessions", "--json"]);
        let fetched: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap_or_default();
        let all = fetched.iter().filter(|s| s["machine"] == "alpha").count() == sessions;
        let shown = finished(&b, &["show", &format!("alpha/{id}")]);
        let kept = local.status.success() && done.status.success() && all && shown.status.success();
        if !kept {
            eprintln!(
                "fetch trial {t}: fsck {:?}, fetch {:?}, {} of {sessions} sessions, show {:?}: {}",
                local.status.code(),
                done.status.code(),
                fetched.len(),
                shown.status.code(),
                String::from_utf8_lossy(&done.stderr)
            );
        }
        fetches.count(kept, &fetch);
    }
    println!("| part | trials | nothing lost | lost | wrong with exit 0 | panics | hangs |");
    println!("|---|---|---|---|---|---|---|");
    println!("{}", pushes.row("SIGKILL of push at a random moment, then fsck --remote, then push again"));
    println!("{}", fetches.row("SIGKILL of fetch at a random moment, then fsck, then fetch again"));
    println!(
        "killed before their end: {cut_pushes} of {n} pushes, {cut_fetches} of {n} fetches (the rest ended first)"
    );
    assert_eq!((pushes.kept, fetches.kept), (n, n), "a killed push or fetch lost something");
}
