//! Safe writing: a batch cut at every byte leaves a file pi loads, `shake status` reports the
//! half-written batch, and the next fold repairs it to exactly the wall a whole fold gives.
//! Also the refusals: v1 files, foreign partial last lines.

use serde_json::Value;

use shake_plumbing::append::{ending, Ending};
use shake_plumbing::Context;

use crate::env::{Oracle, TestEnv};
use crate::synthetic::{filler, text, Builder};

/// A small session whose fold writes a short batch (two tool results).
pub fn small() -> String {
    let mut b = Builder::new();
    b.user(serde_json::json!("go"));
    b.tool("bash", serde_json::json!({"command": "make"}), serde_json::json!([text(&filler("make", 300))]));
    b.tool("grep", serde_json::json!({"pattern": "x"}), serde_json::json!([text(&filler("grep", 300))]));
    b.user(serde_json::json!(filler("tail", 9000)));
    b.text()
}

fn status(env: &TestEnv, path: &str) -> Value {
    serde_json::from_str(&env.ok(&["status", path, "--json"])).unwrap()
}

fn wall_ids(s: &Value) -> Vec<(String, String)> {
    s["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap().to_string(), t["kind"].as_str().unwrap().to_string()))
        .collect()
}

/// The porcelain commands, run in-process (the every-byte loops would start a process per
/// command per byte otherwise).
#[derive(clap::Parser)]
#[command(no_binary_name = true)]
enum InProcess {
    Fold(shake_porcelain::fold::FoldArgs),
    Undo(shake_porcelain::undo::UndoArgs),
    Status(shake_porcelain::status::StatusArgs),
}

/// Runs `shake ARGS…` through the library with `ctx`; asserts success and returns stdout.
///
/// A write that finds the session's lock taken is tried again: the tests beside this one start
/// processes, and a child holds a copy of every descriptor of this process, the locked session
/// file's among them, from its fork to its exec. That child is, for that moment, another process
/// holding the lock, and shake rightly refuses (as it tells a user to, the test waits and runs
/// the command again).
fn run_in_process(ctx: &Context, args: &[&str]) -> String {
    for _ in 0..100 {
        let mut out = Vec::new();
        let code = match <InProcess as clap::Parser>::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}")) {
            InProcess::Fold(a) => shake_porcelain::fold::run(ctx, &a, &mut out),
            InProcess::Undo(a) => shake_porcelain::undo::run(ctx, &a, &mut out),
            InProcess::Status(a) => shake_porcelain::status::run(ctx, &a, &mut out),
        };
        match code {
            Err(e) if e.message.ends_with("another shake process is writing this session") => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            code => {
                assert_eq!(code.unwrap_or_else(|e| panic!("shake {args:?}: {}", e.message)), 0, "{args:?}");
                return String::from_utf8(out).unwrap();
            }
        }
    }
    panic!("shake {args:?}: the session stayed locked for a second")
}

/// Where a cut's commands run: through the binary, or in-process.
#[derive(Clone, Copy)]
enum Via<'a> {
    Binary(&'a TestEnv),
    Library(&'a Context),
}

impl Via<'_> {
    fn ok(self, args: &[&str]) -> String {
        match self {
            Via::Binary(env) => env.ok(args),
            Via::Library(ctx) => run_in_process(ctx, args),
        }
    }

    fn status(self, path: &str) -> Value {
        serde_json::from_str(&self.ok(&["status", path, "--json"])).unwrap()
    }
}

/// The cuts of a batch that also go through the binary: the first and last 40 bytes, every
/// line end ±2, and one byte in 97 (short batches) or 997 (long ones).
fn sample(batch: &[u8]) -> Vec<usize> {
    let step = if batch.len() <= 4000 { 97 } else { 997 };
    let ends = batch.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i);
    let mut cuts: Vec<usize> = (0..=40.min(batch.len()))
        .chain(batch.len().saturating_sub(40)..=batch.len())
        .chain((0..batch.len()).step_by(step))
        .chain(ends.flat_map(|i| i.saturating_sub(2)..=(i + 3).min(batch.len())))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The cuts run in-process: every byte, except in a line longer than 8 KiB, where every byte
/// is cut only around what can change the outcome (the line's first and last 128 bytes, where
/// the shake prefix and the closing brace are, and 128 bytes either side of 4 KiB in, the tail
/// the writer once judged a torn line by: a cut beyond it was refused, not repaired), and one
/// byte in 127 elsewhere. Every cut there leaves the same kind of file (a torn shake line
/// longer than the tail) and costs a full status, repair and status.
fn in_process_cuts(batch: &[u8]) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut start = 0;
    let ends = batch.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1);
    for end in ends.chain([batch.len() + 1]) {
        let line = start..end;
        if line.len() > 8192 {
            let s = line.start;
            let dense =
                |k: &usize| *k < s + 128 || (s + 4096 - 128..s + 4096 + 128).contains(k) || *k + 128 >= line.end;
            cuts.extend(line.clone().filter(|k| dense(k) || (k - s) % 127 == 0));
        } else {
            cuts.extend(line);
        }
        start = end;
    }
    cuts.retain(|&k| k <= batch.len());
    cuts
}

/// The cuts pi loads (one process for all): every cut of a short batch, the sample of a long one.
fn for_pi(batch: &[u8], sampled: &[usize]) -> Vec<usize> {
    match batch.len() <= 4000 {
        true => (0..=batch.len()).collect(),
        false => sampled.to_vec(),
    }
}

/// Runs `op` on a copy of `before`, then cuts its batch at every byte: pi loads each cut,
/// `shake status` reports the half-written batch, and running `op` again repairs it to the wall
/// the whole batch gave (pi then projects the same context). Returns that wall.
///
/// Every cut runs `status`, `op` and `status` again in-process, with no store (its writes fail,
/// quietly) so the loop costs no I/O beyond the file; the [`sample`] cuts run them through the
/// binary too, with the store, and pi loads those cuts and their repairs.
fn cut_everywhere(env: &TestEnv, name: &str, before: &[u8], op: &[&str]) -> Vec<(String, String)> {
    let full = env.write(&format!("{name}.jsonl"), before);
    let full_s = full.to_str().unwrap();
    env.ok(&[op, &[full_s]].concat());
    let after = std::fs::read(&full).unwrap();
    let batch = &after[before.len()..];
    let intended = wall_ids(&status(env, full_s));
    let first_line = batch.iter().position(|b| *b == b'\n').unwrap() + 1;
    let check = |via: Via<'_>, path: &str, k: usize| {
        let cut = [before, &batch[..k]].concat();
        std::fs::write(path, &cut).unwrap();
        // A cut inside a line leaves it torn: the first command that reads the file ends it (so
        // pi's next entry starts a line of its own), here `status`. Run again while another
        // process holds the file's lock (a child of this test process between fork and exec).
        let torn_line = ending(&cut) == Ending::TornShakeLine;
        let mut s = via.status(path);
        for _ in 0..100 {
            if !torn_line || std::fs::read(path).unwrap() == [&cut[..], b"\n"].concat() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            s = via.status(path);
        }
        let ended = [&cut[..], b"\n"].concat();
        assert_eq!(&std::fs::read(path).unwrap(), if torn_line { &ended } else { &cut }, "{name}: cut at byte {k}");
        let half = !s["halfWritten"].as_array().unwrap().is_empty();
        assert_eq!(s["tornLastLine"], false, "{name}: cut at byte {k}: ended: {s}");
        let whole = k == 0 || k == batch.len();
        assert_eq!(half || torn_line, !whole, "{name}: cut at byte {k}: {s}");
        if k >= first_line && k < batch.len() - 1 {
            assert_eq!(
                s["halfWritten"].as_array().unwrap().len(),
                1,
                "{name}: cut at byte {k} after the log entry: {s}"
            );
        }
        if whole {
            return;
        }
        let out = via.ok(&[op, &[path]].concat());
        // A batch cut inside its log entry leaves only a line pi skips: nothing to complete.
        assert_eq!(out.contains("Repaired a half-written shake batch"), half, "{name}: cut at byte {k}: {out}");
        let repaired = via.status(path);
        assert_eq!(wall_ids(&repaired), intended, "{name}: cut at byte {k}");
        assert_eq!(repaired["tornLastLine"], false);
        assert!(repaired["halfWritten"].as_array().unwrap().is_empty(), "{name}: cut at byte {k}: {repaired}");
    };
    // In-process, every byte. The store is a path under a file: nothing can be stored there.
    let no_store = env.write("not-a-folder", "");
    let ctx = Context {
        cwd: env.cwd(),
        home: env.dir.path().to_path_buf(),
        agent_dir: env.agent_dir(),
        custom_session_dir: None,
        store_dir: no_store.join("store"),
        host: None,
        model: None,
        color: false,
    };
    quiet();
    let scratch = env.dir.path().join(format!("cut-{name}.jsonl"));
    let started = std::time::Instant::now();
    let every = in_process_cuts(batch);
    for &k in &every {
        check(Via::Library(&ctx), scratch.to_str().unwrap(), k);
    }
    eprintln!("{name}: {} cuts in-process in {:?}", every.len(), started.elapsed());
    // Through the binary, the sample, whose repairs pi loads; pi loads the cuts themselves
    // (every one of a short batch).
    let cuts = env.dir.path().join(format!("cuts-{name}"));
    std::fs::create_dir_all(&cuts).unwrap();
    let sampled = sample(batch);
    let mut repaired = Vec::new();
    for &k in &sampled {
        let path = cuts.join(format!("cut-{k:06}.jsonl"));
        let path_s = path.to_str().unwrap().to_string();
        check(Via::Binary(env), &path_s, k);
        if k != 0 && k != batch.len() {
            repaired.push(path_s);
        }
    }
    let mut torn = Vec::new();
    for k in for_pi(batch, &sampled) {
        torn.push(cuts.join(format!("torn-{k:06}.jsonl")));
        std::fs::write(torn.last().unwrap(), [before, &batch[..k]].concat()).unwrap();
    }
    let torn: Vec<&str> = torn.iter().map(|p| p.to_str().unwrap()).collect();
    for r in Oracle::run("load-many.mjs", &torn).as_array().unwrap() {
        assert_eq!(r["accepted"], true, "{r}");
    }
    // pi loads every repaired file too, with the same context as after the whole batch.
    let whole = &Oracle::run("load-many.mjs", &[full_s])[0];
    let repaired: Vec<&str> = repaired.iter().map(String::as_str).collect();
    for r in Oracle::run("load-many.mjs", &repaired).as_array().unwrap() {
        assert_eq!(r["accepted"], true, "{r}");
        assert_eq!(r["messages"], whole["messages"], "{r}");
    }
    intended
}

/// Silences warnings of in-process commands for the rest of this test process: the every-byte
/// loops would print thousands. (The binary's runs clear their environment.)
fn quiet() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var("SHAKE_QUIET", "1"));
}

/// A session whose undo writes a line of more than 100 KB (the restored tool result).
fn long() -> String {
    let mut b = Builder::new();
    b.user(serde_json::json!("go"));
    b.tool("bash", serde_json::json!({"command": "cat big.log"}), serde_json::json!([text(&filler("log", 110_000))]));
    b.tool("grep", serde_json::json!({"pattern": "x"}), serde_json::json!([text(&filler("grep", 300))]));
    b.user(serde_json::json!(filler("tail", 9000)));
    b.text()
}

#[test]
fn a_fold_batch_cut_at_every_byte_loads_in_pi_and_is_repaired() {
    let env = TestEnv::new();
    let wall = cut_everywhere(&env, "fold", small().as_bytes(), &["fold", "--profile", "aggressive"]);
    assert_eq!(wall.len(), 2);
}

#[test]
fn an_undo_batch_cut_at_every_byte_loads_in_pi_and_is_repaired() {
    let env = TestEnv::new();
    let path = env.write("folded.jsonl", small());
    env.ok(&["fold", path.to_str().unwrap(), "--profile", "aggressive"]);
    let folded = std::fs::read(&path).unwrap();
    assert!(cut_everywhere(&env, "undo", &folded, &["undo"]).is_empty());
}

#[test]
fn an_undo_batch_with_a_100_kb_line_cut_anywhere_is_repaired() {
    let env = TestEnv::new();
    let path = env.write("folded.jsonl", long());
    env.ok(&["fold", path.to_str().unwrap(), "--profile", "aggressive"]);
    let folded = std::fs::read(&path).unwrap();
    let before = folded.len();
    assert!(cut_everywhere(&env, "long-undo", &folded, &["undo", "--tokenizer", "pi"]).is_empty());
    let batch = std::fs::read(env.dir.path().join("long-undo.jsonl")).unwrap().len() - before;
    assert!(batch > 100_000, "the undo batch is only {batch} bytes");
}

#[test]
fn refuses_v1_files_and_foreign_partial_lines() {
    let env = TestEnv::new();
    let v1 = env.fixture("pi-v1-legacy.jsonl");
    let err = env.fails(&["fold", v1.to_str().unwrap()], 1);
    assert!(err.contains("version 1 session") && err.contains("open the session in pi once"), "{err}");
    let mut text = small();
    text.push_str(r#"{"type":"message","id":"half"#);
    let path = env.write("partial.jsonl", &text);
    let err = env.fails(&["undo", path.to_str().unwrap()], 1);
    assert!(err.contains("last line is incomplete"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

/// The entry ids on the branch pi resumes: from the file's last entry back along `parentId`.
pub fn resumed_branch(bytes: &[u8]) -> Vec<String> {
    let entries: Vec<Value> = bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(|v| v["type"] != "session")
        .collect();
    let parent: std::collections::HashMap<&str, Option<&str>> =
        entries.iter().map(|e| (e["id"].as_str().unwrap(), e["parentId"].as_str())).collect();
    let mut branch = Vec::new();
    let mut at = entries.last().and_then(|e| e["id"].as_str());
    while let Some(id) = at {
        branch.push(id.to_string());
        at = parent[id];
    }
    branch
}

/// Appends entries the way pi's session manager does (one `appendFileSync` per entry, no lock,
/// each chained from the previous) as soon as shake holds the file's lock, i.e. between shake's
/// "file unchanged" check and its write (widened by the fault-injection delay).
fn pi_writer(
    path: std::path::PathBuf,
    leaf: String,
    prefix: &'static str,
    n: usize,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let f = std::fs::File::open(&path).unwrap();
            if matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)) {
                break;
            }
            drop(f);
            assert!(std::time::Instant::now() < deadline, "shake never took the lock");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        append_as_pi(&path, leaf, prefix, n)
    })
}

/// Appends `n` entries as pi does (one append per entry, no lock, chained from `leaf`, pi's
/// leaf in memory); returns their ids.
pub fn append_as_pi(path: &std::path::Path, leaf: String, prefix: &str, n: usize) -> Vec<String> {
    use std::io::Write;
    let mut parent = leaf;
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("{prefix}{i:06}");
        let line = serde_json::json!({"type": "message", "id": id, "parentId": parent,
            "timestamp": "2026-11-21T10:00:00.000Z",
            "message": {"role": "user", "content": format!("typed while shake wrote {i}"), "timestamp": 1795255200000u64}});
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        f.write_all(format!("{line}\n").as_bytes()).unwrap();
        parent = id.clone();
        ids.push(id);
    }
    ids
}

#[test]
fn a_pi_append_racing_the_write_stays_on_the_branch() {
    let env = TestEnv::new();
    let path = env.write("race.jsonl", small());
    let file = path.to_str().unwrap();
    for (op, folded, prefix) in
        [(&["fold", file, "--profile=aggressive"][..], 2, "pia"), (&["undo", file][..], 0, "pib")]
    {
        let before = std::fs::read(&path).unwrap();
        let before_branch = resumed_branch(&before);
        let writer = pi_writer(path.clone(), before_branch[0].clone(), prefix, 3);
        let out = env.cmd().env(shake_plumbing::append::DELAY_ENV, "300").args(op).output().unwrap();
        let pi_ids = writer.join().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{op:?}: {err}");
        let after = std::fs::read(&path).unwrap();
        let branch = resumed_branch(&after);
        for id in &pi_ids {
            assert!(branch.contains(id), "{op:?}: pi's {id} is not on the resumed branch {branch:?}");
        }
        // The branch: shake's batch, then pi's entries, then what was there; pi agrees.
        let k = branch.iter().position(|id| *id == pi_ids[2]).unwrap();
        let mut pi_then_before: Vec<String> = pi_ids.iter().rev().cloned().collect();
        pi_then_before.extend(before_branch);
        assert!(k > 0 && branch[k..] == pi_then_before[..], "{op:?}: {branch:?}");
        assert!(err.contains("pi appended entries while shake was writing"), "{op:?}: {err}");
        let s = status(&env, file);
        assert_eq!(wall_ids(&s).len(), folded, "{op:?}: {s}");
        let pi = &Oracle::run("load-many.mjs", &[file])[0];
        assert_eq!(pi["leafId"].as_str(), Some(branch[0].as_str()), "{pi}");
    }
}

/// Runs `shake ARGS…` with a file-size limit of `limit` bytes, as a full disk looks to a write:
/// a write past it is cut there. With `failing`, SIGXFSZ is ignored and the write fails (EFBIG),
/// which shake sees; without, the signal kills shake in the middle of the write, which no
/// handler sees (as SIGKILL).
fn run_limited(env: &TestEnv, args: &[&str], limit: u64, failing: bool) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = env.cmd();
    cmd.args(args);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: limit, rlim_max: limit };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if failing {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// How many messages pi projects at its leaf on load, and that leaf.
pub fn pi_resumes(path: &str) -> (u64, String) {
    let pi = &Oracle::run("load-many.mjs", &[path])[0];
    assert_eq!(pi["accepted"], true, "{pi}");
    (pi["messages"].as_u64().unwrap(), pi["leafId"].as_str().unwrap().to_string())
}

/// Writes [`small`] as `name`, then folds it with a file-size limit `cut` bytes past its end
/// ([`run_limited`]; `failing` as there). Returns the file, its bytes before, the messages pi
/// resumed with then, and the fold's output.
pub fn cut_fold(
    env: &TestEnv,
    name: &str,
    cut: usize,
    failing: bool,
) -> (std::path::PathBuf, Vec<u8>, u64, std::process::Output) {
    let path = env.write(name, small());
    let file = path.to_str().unwrap();
    // Imported, the tokenizer's table saved: under the limit, the batch is the first write to fail.
    env.ok(&["fold", file, "--profile", "aggressive", "--dry-run"]);
    let before = std::fs::read(&path).unwrap();
    let (messages, _) = pi_resumes(file);
    let out = run_limited(env, &["fold", file, "--profile", "aggressive"], (before.len() + cut) as u64, failing);
    (path, before, messages, out)
}

/// A batch whose write fails part way (a full disk, a file-size limit) is taken back: the file
/// is what it was, so the entry pi appends next starts a line of its own and stays on its branch.
#[test]
fn a_batch_cut_by_a_failing_write_is_taken_back_and_pi_appends_after_it() {
    let env = TestEnv::new();
    let (path, before, messages, out) = cut_fold(&env, "full.jsonl", 100, true);
    let file = path.to_str().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains(&format!("cannot append to {file}: File too large")), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before, "the cut batch is taken back: {err}");
    let ids = append_as_pi(&path, resumed_branch(&before)[0].clone(), "pif", 2);
    assert_eq!(pi_resumes(file), (messages + 2, ids[1].clone()));
}

/// A batch cut by a kill in the middle of its write (the file-size signal, which no handler
/// sees) leaves a torn line; the next shake command, here the meter pi's extension runs when the
/// agent settles, ends that line before pi appends its next entry, so the entry is not glued
/// onto it (and lost, with pi resuming at the entry after it as a root); the next fold then
/// writes its batch whole.
#[test]
fn a_batch_cut_by_a_kill_is_ended_by_the_next_shake_command_before_pi_appends() {
    use std::os::unix::process::ExitStatusExt;
    let env = TestEnv::new();
    let (path, before, messages, out) = cut_fold(&env, "killed.jsonl", 100, false);
    let file = path.to_str().unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGXFSZ), "{}", String::from_utf8_lossy(&out.stderr));
    let cut = std::fs::read(&path).unwrap();
    assert!(cut.len() == before.len() + 100 && cut.starts_with(&before), "a torn batch is left");
    let out = env.run(&["meter", "--json", file]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("a shake batch cut short"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), [&cut[..], b"\n"].concat(), "the torn line is ended");
    let ids = append_as_pi(&path, resumed_branch(&before)[0].clone(), "pik", 2);
    assert_eq!(pi_resumes(file), (messages + 2, ids[1].clone()));
    // pi wrote just now: the fold is refused unless forced (`messages.rs`), not the point here.
    env.ok(&["fold", file, "--profile", "aggressive", "--force"]);
    assert_eq!(wall_ids(&status(&env, file)).len(), 2);
    assert_eq!(pi_resumes(file).0, messages + 2);
}

/// pi appends once inside the window before shake's write (the batch lands after that entry and
/// is written again), and once more right after shake's first batch, before shake reads the file
/// again (`SHAKE_TEST_APPEND_DELAY_MS` widens both windows): the second entry, chained from the
/// first as pi's leaf in memory, is on the branch pi resumes too, and so is the fold.
#[test]
fn a_pi_append_after_the_first_batch_stays_on_the_branch() {
    let env = TestEnv::new();
    let path = env.write("race2.jsonl", small());
    let file = path.to_str().unwrap();
    let before = std::fs::read(&path).unwrap();
    let leaf = resumed_branch(&before)[0].clone();
    let first = pi_writer(path.clone(), leaf, "pic", 1);
    let second = {
        let path = path.clone();
        std::thread::spawn(move || {
            let first: Vec<String> = first.join().unwrap();
            let after_first = std::fs::metadata(&path).unwrap().len();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            // shake's first batch lands after pi's first entry: then pi appends again at once.
            while std::fs::metadata(&path).unwrap().len() == after_first {
                assert!(std::time::Instant::now() < deadline, "shake never wrote");
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            let second = append_as_pi(&path, first[0].clone(), "pid", 1);
            [first, second].concat()
        })
    };
    let out = env
        .cmd()
        .env(shake_plumbing::append::DELAY_ENV, "300")
        .args(["fold", file, "--profile=aggressive"])
        .output()
        .unwrap();
    let pi_ids = second.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let branch = resumed_branch(&std::fs::read(&path).unwrap());
    for id in &pi_ids {
        assert!(branch.contains(id), "pi's {id} is not on the resumed branch {branch:?}\n{err}");
    }
    assert_eq!(wall_ids(&status(&env, file)).len(), 2, "the fold is on that branch too");
    let pi = &Oracle::run("load-many.mjs", &[file])[0];
    assert_eq!(pi["leafId"].as_str(), Some(branch[0].as_str()), "{pi}");
}
