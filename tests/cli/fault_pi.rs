//! The fault study of pi's write path (issue 28; `docs/reliability.md`): batches cut at a random
//! byte (a failing write, or a kill in the middle of it) with a pi-style writer appending after
//! them, `restore --force` racing a pi-style writer, a fold with pi appending before and right
//! after its first batch, and one flipped bit in a session, read by shake and by pi. Ignored by
//! default; run it with `cargo test --test cli fault_pi -- --ignored --nocapture` (trial counts
//! from `SHAKE_STUDY_PI_CUTS`, `_PI_RESTORES`, `_PI_RACES`, `_PI_FLIPS`, seed from
//! `SHAKE_STUDY_SEED`). Each part prints its figures (trials, nothing lost, wrong with exit 0,
//! panics, hangs) and the run fails when a part that must lose nothing lost something.

use std::os::unix::process::ExitStatusExt;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::append::{append_as_pi, cut_fold, pi_resumes, resumed_branch, small};
use serde_json::Value;

use crate::env::{fixture_path, Oracle, TestEnv};
use crate::fault_study::{flip_one_bit, trials, Figures, Rng};

/// `shake ARGS…` under `timeout`: a hang ends as exit 124.
fn run(env: &TestEnv, args: &[&str], delay: &str) -> Output {
    env.cmd_through(&["timeout", "120"]).env(shake_plumbing::append::DELAY_ENV, delay).args(args).output().unwrap()
}

/// Part 1: a fold's batch cut at a random byte by a file-size limit: the write fails (even
/// trials) or the process is killed in it (odd). Then, for a kill, the next shake command (the
/// meter, as pi's extension runs it) comes before pi's next entry in `with_command` trials, or
/// pi writes first. pi appends two entries, as it does, chained from its leaf in memory.
/// Nothing lost: pi resumes at its second entry with every message it had plus two.
fn cuts(rng: &mut Rng, n: usize, with_command: bool) -> Figures {
    let env = TestEnv::new();
    let reference = env.write("reference.jsonl", small());
    env.ok(&["fold", reference.to_str().unwrap(), "--profile", "aggressive"]);
    let batch = std::fs::metadata(&reference).unwrap().len() as usize - small().len();
    let mut figures = Figures::default();
    for t in 0..n {
        let failing = t % 2 == 0;
        let cut = 1 + rng.below(batch - 1);
        let (path, before, messages, out) = cut_fold(&env, &format!("cut-{t}.jsonl"), cut, failing);
        let p = path.to_str().unwrap();
        let killed = out.status.signal() == Some(libc::SIGXFSZ);
        let mut shown = out;
        if killed && with_command {
            shown = run(&env, &["meter", "--json", p], "");
        }
        let ids = append_as_pi(&path, resumed_branch(&before)[0].clone(), &format!("c{t}x"), 2);
        let kept = pi_resumes(p) == (messages + 2, ids[1].clone());
        if !kept {
            eprintln!(
                "cut trial {t} (byte {cut}, killed {killed}, command first {with_command}): pi lost an entry: {p}"
            );
        }
        figures.count(kept, &shown);
    }
    figures
}

/// Part 2: `restore --force --version 1` while a pi-style writer appends an entry every 0–3 ms,
/// the restore's window widened by 0, 20 or 50 ms. Nothing lost: every entry the writer appended
/// is in the file afterwards or in the version the restore imported before replacing the file
/// (a refused restore wrote nothing).
fn restores(rng: &mut Rng, n: usize) -> Figures {
    let env = TestEnv::new();
    let path = env.write("restore.jsonl", small());
    let p = path.to_str().unwrap();
    env.ok(&["status", p]);
    let leaf = resumed_branch(small().as_bytes())[0].clone();
    let mut figures = Figures::default();
    for t in 0..n {
        let stop = Arc::new(AtomicBool::new(false));
        let pace = Duration::from_micros(rng.below(3000) as u64);
        let writer = {
            let (path, leaf, stop) = (path.clone(), leaf.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    ids.extend(append_as_pi(&path, leaf.clone(), &format!("s{t}n{}x", ids.len()), 1));
                    std::thread::sleep(pace);
                }
                ids
            })
        };
        std::thread::sleep(Duration::from_millis(rng.below(5) as u64));
        let delay = ["0", "20", "50"][rng.below(3)];
        let out = run(&env, &["restore", "--force", "--version", "1", p], delay);
        stop.store(true, Ordering::Relaxed);
        let ids = writer.join().unwrap();
        let lost = crate::restore::lost(&env, p, &ids).len();
        if lost > 0 {
            eprintln!("restore trial {t}: {lost} of {} entries lost, exit {:?}", ids.len(), out.status.code());
        }
        figures.count(lost == 0, &out);
    }
    figures
}

/// Part 3: a fold while pi appends one entry at a random moment of the first 300 ms and one
/// more as soon as the file grew again (shake's batch, or nothing else), the writes delayed 0,
/// 100 or 200 ms. Nothing lost: both entries are on the branch pi resumes.
fn races(rng: &mut Rng, n: usize) -> Figures {
    let env = TestEnv::new();
    let path = env.write("race.jsonl", small());
    let p = path.to_str().unwrap();
    let mut figures = Figures::default();
    for t in 0..n {
        let leaf = resumed_branch(&std::fs::read(&path).unwrap())[0].clone();
        let start = Duration::from_millis(rng.below(300) as u64);
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(start);
                let first = append_as_pi(&path, leaf, &format!("q{t}a"), 1);
                let grown = std::fs::metadata(&path).unwrap().len();
                let deadline = std::time::Instant::now() + Duration::from_millis(1500);
                while std::fs::metadata(&path).unwrap().len() == grown && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_micros(200));
                }
                let second = append_as_pi(&path, first[0].clone(), &format!("q{t}b"), 1);
                [first, second].concat()
            })
        };
        let op: &[&str] = if t % 2 == 0 { &["fold", p, "--profile=aggressive"] } else { &["undo", p] };
        let out = run(&env, op, ["0", "100", "200"][rng.below(3)]);
        let ids = writer.join().unwrap();
        let branch = resumed_branch(&std::fs::read(&path).unwrap());
        let kept = ids.iter().all(|id| branch.contains(id));
        if !kept {
            eprintln!("race trial {t}: {ids:?} not all on {branch:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        figures.count(kept, &out);
    }
    figures
}

/// Part 4: one flipped bit in a session (the rich synthetic one, and a v3 fixture with branches,
/// a compaction and edits): shake reads it as pi does. Same as pi: pi accepts the file exactly
/// when `shake project` succeeds, and then both resume at the same leaf with as many messages.
fn flips(rng: &mut Rng, n: usize) -> Figures {
    let env = TestEnv::new();
    let sources = [
        crate::synthetic::rich().text.into_bytes(),
        std::fs::read(fixture_path("pi-v3-branch-compaction-edit.jsonl")).unwrap(),
    ];
    let mut flipped = Vec::new();
    let paths: Vec<String> = (0..n)
        .map(|t| {
            let mut bytes = sources[t % 2].clone();
            flipped.push(flip_one_bit(rng, &mut bytes).1);
            env.write(&format!("flip-{t}.jsonl"), bytes).to_str().unwrap().to_string()
        })
        .collect();
    let pi = Oracle::run("load-many.mjs", &paths.iter().map(String::as_str).collect::<Vec<_>>());
    let mut figures = Figures::default();
    for (t, (path, pi)) in paths.iter().zip(pi.as_array().unwrap()).enumerate() {
        let out = run(&env, &["project", path, "--json"], "");
        let ours: Option<Value> = out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap());
        let same = match (&ours, pi["accepted"] == true) {
            (Some(ours), true) => {
                ours["leafId"] == pi["leafId"]
                    && ours["messages"].as_array().map(Vec::len) == pi["messages"].as_u64().map(|m| m as usize)
            }
            (None, false) => true,
            _ => false,
        };
        if !same {
            let line = &flipped[t];
            eprintln!(
                "flip trial {t}: shake and pi differ on {path}: pi {pi}, shake exit {:?}: {line}",
                out.status.code()
            );
        }
        figures.count(same, &out);
    }
    figures
}

#[test]
#[ignore = "the fault study of pi's write path: minutes of work; run with --ignored --nocapture"]
fn fault_pi() {
    let seed = std::env::var("SHAKE_STUDY_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_u64);
    let mut rng = Rng(seed | 1);
    let cut = trials("PI_CUTS", 40);
    let parts = [
        ("batch cut (failing write or kill), next shake command, then pi appends", cuts(&mut rng, cut, true)),
        ("batch cut (failing write or kill), pi appends at once", cuts(&mut rng, cut, false)),
        ("`restore --force` + pi-style writer", restores(&mut rng, trials("PI_RESTORES", 40))),
        ("fold/undo + pi appending before and right after the batch", races(&mut rng, trials("PI_RACES", 40))),
        ("one flipped bit in a session, read as pi reads it", flips(&mut rng, trials("PI_FLIPS", 400))),
    ];
    println!("fault study of pi's write path, seed {seed}");
    println!("| part | trials | nothing lost | lost | wrong with exit 0 | panics | hangs |");
    println!("|---|---|---|---|---|---|---|");
    for (part, figures) in &parts {
        println!("{}", figures.row(part));
    }
    // pi appending at once after a kill is the window no command can close (docs/reliability.md).
    for (part, f) in parts.iter().enumerate().filter(|(i, _)| *i != 1) {
        assert_eq!((f.1.kept, f.1.wrong, f.1.panics, f.1.hangs), (f.1.trials, 0, 0, 0), "part {part}: see above");
    }
}
