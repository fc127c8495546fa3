//! Remotes (`docs/remotes.md`): two stores stand for two machines (two `SHAKE_DIR`s, each with
//! its own `SHAKE_MACHINE` name) and share a remote: a folder here, a real Garage server in
//! `remote_garage.rs`. A session pushed from one and fetched in the other reads the same with
//! every read command; a fork pushed from the second adds only its new objects.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use shake_plumbing::id::{Kind, ObjectId};

use crate::env::TestEnv;

/// One machine: a sandbox, the name its store goes by, and the remote's environment.
pub struct Machine {
    pub env: TestEnv,
    pub name: &'static str,
    pub vars: Vec<(String, String)>,
}

impl Machine {
    pub fn new(name: &'static str, vars: &[(String, String)]) -> Machine {
        Machine { env: TestEnv::new(), name, vars: vars.to_vec() }
    }

    /// A `shake` command of this machine run through `wrapper` (`timeout 60`), or alone.
    pub fn cmd_through(&self, wrapper: &[&str]) -> std::process::Command {
        let mut cmd = self.env.cmd_through(wrapper);
        cmd.env("SHAKE_MACHINE", self.name).envs(self.vars.iter().map(|(k, v)| (k, v)));
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd_through(&[]).args(args).output().expect("run shake")
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "{}: shake {args:?} failed ({}):\n{}", self.name, out.status, stderr(&out));
        String::from_utf8(out.stdout).expect("utf-8 stdout")
    }

    pub fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap_or_else(|e| panic!("shake {args:?}: {e}"))
    }
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A session of every kind of region, with the session id `id`, folded once (two versions),
/// in `m`'s pi folder; its path.
pub fn folded_session(m: &Machine, id: &str) -> PathBuf {
    let path = m.env.pi_session(id, fork_of(&crate::synthetic::rich().text, id));
    let p = path.to_str().unwrap().to_string();
    m.ok(&["import", &p]);
    m.ok(&["fold", &p]);
    path
}

/// The ids of the objects in every pack index under `packs` (a folder remote's, or a store's).
pub fn pack_ids(packs: &Path) -> Vec<(String, HashSet<ObjectId>)> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(packs).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "idx") {
            let (ids, _) = shake_plumbing::store::pack::index_ids(&std::fs::read(&path).unwrap()).unwrap();
            all.push((path.file_name().unwrap().to_string_lossy().into_owned(), ids.into_iter().collect()));
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// Every read command gives the same answer on `b`'s fetched `<machine>/<id>` as on `a`'s
/// origin (paths aside: each side's file is named `FILE`).
pub fn same_answers(a: &Machine, b: &Machine, id: &str, a_path: &Path, b_path: &Path, side_leaf: &str) {
    let fetched = format!("{}/{id}", a.name);
    let (ra, rb) = (id.to_string(), fetched.clone());

    let reads: Vec<Vec<String>> = vec![
        vec!["log".into(), "{}".into(), "--json".into()],
        vec!["log".into(), "{}".into()],
        vec!["show".into(), "{}".into()],
        vec!["show".into(), "{}".into(), "--json".into()],
        vec!["project".into(), "{}".into(), "--json".into()],
        vec!["diff".into(), format!("{{}}:{side_leaf}"), "{}".into(), "--json".into()],
        vec!["restore".into(), "{}".into(), "--version".into(), "1".into(), "-o".into(), "-".into()],
        vec!["restore".into(), "{}".into(), "-o".into(), "-".into()],
        vec!["audit".into(), "rewind".into(), "{}".into(), "--json".into()],
    ];
    for read in reads {
        let args = |rev: &str| read.iter().map(|a| a.replace("{}", rev)).collect::<Vec<String>>();
        let (args_a, args_b) = (args(&ra), args(&rb));
        let out_a = a.run(&args_a.iter().map(String::as_str).collect::<Vec<_>>());
        let out_b = b.run(&args_b.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(out_a.status.code(), out_b.status.code(), "{read:?}: {}\n{}", stderr(&out_a), stderr(&out_b));
        let text_a = clean(String::from_utf8_lossy(&out_a.stdout).into_owned(), a_path);
        let text_b = clean(String::from_utf8_lossy(&out_b.stdout).into_owned(), b_path);
        assert_eq!(text_a, text_b, "{read:?} differs between the origin and {fetched}");
        assert!(!text_a.is_empty(), "{read:?} said nothing");
    }
    let listed = |m: &Machine, machine: Value| -> Value {
        let all = m.json(&["sessions", "--json"]);
        let row = all.as_array().unwrap().iter().find(|s| s["session"] == id && s["machine"] == machine).cloned();
        let row = row.unwrap_or_else(|| panic!("{}: no session {id} from {machine} in {all}", m.name));
        serde_json::json!([row["entries"], row["leaves"], row["bytes"], row["versions"], row["version"]])
    };
    assert_eq!(listed(a, Value::Null), listed(b, Value::from(a.name)), "sessions --json");
    let table = b.ok(&["sessions"]);
    assert!(table.contains(&format!("{}/{}", a.name, &id[..8])), "the table names it <machine>/<session>: {table}");
}

/// `text` with `path` named `FILE`, whole or by its last two parts (as a file in pi's folder is
/// shown).
pub fn clean(text: String, path: &Path) -> String {
    let short = path.iter().rev().take(2).collect::<Vec<_>>();
    let short = format!("{}/{}", short[1].to_string_lossy(), short[0].to_string_lossy());
    text.replace(&path.display().to_string(), "FILE").replace(&short, "FILE")
}

/// The file `b` fetched `a`'s session `id` into.
pub fn fetched_path(b: &Machine, machine: &str, id: &str) -> PathBuf {
    let all = b.json(&["sessions", "--json"]);
    let row = all.as_array().unwrap().iter().find(|s| s["session"] == id && s["machine"] == machine).cloned();
    PathBuf::from(row.unwrap_or_else(|| panic!("no {machine}/{id} in {all}"))["path"].as_str().unwrap())
}

/// A fork of `text` as pi's `forkFrom` makes one: a new header (session id `new_id`), the same
/// entries.
pub fn fork_of(text: &str, new_id: &str) -> String {
    let mut lines = text.lines();
    let mut header: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    header["id"] = Value::from(new_id);
    let mut out = serde_json::to_string(&header).unwrap() + "\n";
    lines.for_each(|l| out.push_str(&format!("{l}\n")));
    out
}

/// The ids of the entry objects of `text`'s lines after its header.
pub fn entry_ids(text: &str) -> Vec<ObjectId> {
    text.lines().skip(1).map(|l| ObjectId::hash(Kind::Entry, l.as_bytes())).collect()
}

/// Two machines sharing a folder remote `origin` (the folder's root).
fn folder_pair() -> (tempfile::TempDir, Machine, Machine) {
    let bucket = tempfile::tempdir().unwrap();
    let (a, b) = (Machine::new("alpha", &[]), Machine::new("beta", &[]));
    for m in [&a, &b] {
        m.ok(&["remote", "add", "origin", bucket.path().to_str().unwrap()]);
    }
    (bucket, a, b)
}

/// The whole round over a folder remote: push from A, fetch in B, every read the same; a fork
/// pushed from B sends only its new objects; A fetches the fork; a second push sends nothing.
#[test]
fn a_folder_remote_carries_sessions_between_two_stores() {
    let bucket = tempfile::tempdir().unwrap();
    let url = bucket.path().join("shake").display().to_string();
    let a = Machine::new("alpha", &[]);
    let b = Machine::new("beta", &[]);
    for m in [&a, &b] {
        m.ok(&["remote", "add", "origin", &url]);
    }
    assert!(a.ok(&["remote", "list"]).contains(&format!("origin\tfile://{url}")));
    let id = "0199aaaa-1111";
    let a_path = folded_session(&a, id);
    let pushed = a.json(&["push", "--json"]);
    assert_eq!((pushed["packs"].as_u64(), pushed["sessions"].as_u64()), (Some(1), Some(1)), "{pushed}");
    let again = a.json(&["push", "--json"]);
    assert_eq!((again["packs"].as_u64(), again["manifest"].as_bool()), (Some(0), Some(false)), "{again}");
    let fetched = b.json(&["fetch", "--json"]);
    assert_eq!(fetched["machines"][0]["machine"], "alpha", "{fetched}");
    assert_eq!(fetched["packs"], 1, "{fetched}");
    let b_path = fetched_path(&b, "alpha", id);
    let side = crate::synthetic::rich().side_leaf;
    same_answers(&a, &b, id, &a_path, &b_path, &side);
    assert_eq!(b.json(&["fetch", "--json"])["packs"], 0, "a second fetch brings nothing");

    // A fork made on B shares every entry with its source: only what is new goes up.
    let text = std::fs::read_to_string(&b_path).unwrap();
    let fork = b.env.pi_session("0199bbbb-2222", fork_of(&text, "0199bbbb-2222"));
    b.ok(&["import", fork.to_str().unwrap()]);
    let pushed = b.json(&["push", "--json"]);
    assert_eq!(pushed["packs"], 1, "{pushed}");
    let packs = pack_ids(&bucket.path().join("shake/packs"));
    assert_eq!(packs.len(), 2, "{packs:?}");
    let first: &HashSet<ObjectId> = packs.iter().map(|(_, ids)| ids).max_by_key(|ids| ids.len()).unwrap();
    let second: &HashSet<ObjectId> = packs.iter().map(|(_, ids)| ids).min_by_key(|ids| ids.len()).unwrap();
    assert!(first.is_disjoint(second), "no object goes up twice");
    for entry in entry_ids(&text) {
        assert!(first.contains(&entry) && !second.contains(&entry), "the fork's shared entry {entry} went up again");
    }
    assert_eq!(pushed["objects"].as_u64(), Some(second.len() as u64));
    assert!(second.len() < 10, "only the fork's header, version and tables: {}", second.len());
    let back = a.json(&["fetch", "--json"]);
    assert_eq!(back["machines"][0]["machine"], "beta", "{back}");
    let in_a = fetched_path(&a, "beta", "0199bbbb-2222");
    let shown_a = clean(a.ok(&["show", "beta/0199bbbb"]), &in_a);
    let shown_b = clean(b.ok(&["show", "0199bbbb"]), &fork);
    assert_eq!(shown_a, shown_b, "the fork reads the same in A");
    let fsck = a.json(&["fsck", "--remote", "origin", "--json"]);
    assert_eq!(
        (fsck["ok"].as_bool(), fsck["manifests"].as_u64(), fsck["packs"].as_u64()),
        (Some(true), Some(2), Some(2))
    );
    a.ok(&["fsck"]);
    b.ok(&["fsck"]);
}

/// A pack damaged on the remote is refused whole (exit 3, named), and nothing of the machine
/// that names it is fetched; `fsck --remote` names it too.
#[test]
fn a_damaged_remote_pack_is_refused_and_said() {
    let (bucket, a, b) = folder_pair();
    folded_session(&a, "0199aaaa-3333");
    a.ok(&["push"]);
    let pack = crate::env::first_pack(&bucket.path().join("packs"));
    let mut bytes = std::fs::read(&pack).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&pack, bytes).unwrap();
    let out = b.run(&["fetch"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("is damaged") && err.contains(pack.file_stem().unwrap().to_str().unwrap()), "{err}");
    assert!(b.ok(&["sessions"]).contains("No sessions"), "nothing of alpha was fetched");
    assert_eq!(std::fs::read_dir(b.env.store().join("packs")).map(|d| d.count()).unwrap_or(0), 0, "no pack kept");
    let out = b.run(&["fsck", "--remote", "origin"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

/// What a remote holds is named, never guessed: an unknown remote, a second one with no name
/// given, a name that would be a path.
#[test]
fn remote_names_are_checked() {
    let a = Machine::new("alpha", &[]);
    let out = a.run(&["push"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no remote yet"), "{}", stderr(&out));
    let out = a.run(&["remote", "add", "../x", "/tmp/x"]);
    assert_eq!(out.status.code(), Some(1));
    a.ok(&["remote", "add", "one", a.env.dir.path().join("r1").to_str().unwrap()]);
    a.ok(&["remote", "add", "two", a.env.dir.path().join("r2").to_str().unwrap()]);
    assert!(stderr(&a.run(&["push"])).contains("several remotes"));
    assert!(stderr(&a.run(&["fetch", "three"])).contains("no remote named"));
    a.ok(&["remote", "remove", "two"]);
    assert_eq!(a.json(&["remote", "list", "--json"]).as_array().unwrap().len(), 1);
}

/// A push killed between its pack and its index (a folder remote, where the pack is seen to
/// land) leaves a pack that does not count: no manifest, a remote `fsck` passes, a fetch finds
/// nothing. The next push sends the same pack again and then its manifest.
#[test]
fn a_push_killed_between_its_pack_and_its_index_is_finished_by_the_next() {
    let (bucket, a, b) = folder_pair();
    folded_session(&a, "0199aaaa-9999");
    let mut push = a.cmd_through(&[]);
    push.env(shake_plumbing::remote::PAUSE_INDEX_ENV, "600000").arg("push");
    let mut child = push.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let packs = bucket.path().join("packs");
    // object_store writes a folder's object as `<name>#<n>`, then renames it.
    let names = || -> Vec<String> {
        let listed =
            std::fs::read_dir(&packs).map(|d| d.filter_map(|e| e.ok()).collect::<Vec<_>>()).unwrap_or_default();
        listed
            .iter()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("pack-") && !n.contains('#'))
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while names().is_empty() {
        assert!(std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(), "the push never paused");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let left = names();
    assert!(left.len() == 1 && left[0].ends_with(".pack"), "{left:?}");
    assert!(
        !bucket.path().join("machines").exists()
            || std::fs::read_dir(bucket.path().join("machines")).unwrap().count() == 0
    );
    let fsck = b.json(&["fsck", "--remote", "origin", "--json"]);
    assert_eq!(
        (fsck["ok"].as_bool(), fsck["manifests"].as_u64(), fsck["unnamed"].as_u64()),
        (Some(true), Some(0), Some(0))
    );
    assert_eq!(b.json(&["fetch", "--json"])["machines"], serde_json::json!([]));
    let done = a.json(&["push", "--json"]);
    assert_eq!((done["packs"].as_u64(), done["manifest"].as_bool()), (Some(1), Some(true)), "{done}");
    let mut now = names();
    now.sort();
    assert_eq!(now, [left[0].replace(".pack", ".idx"), left[0].clone()], "the same pack, now with its index");
    assert_eq!(b.json(&["fetch", "--json"])["machines"][0]["sessions"], 1);
}

/// A Claude Code transcript folded on A (a fork whose fold records live in A's store, not in the
/// file) reads the same in B: the records travel with the session.
#[test]
fn a_claude_code_fork_and_its_fold_records_travel() {
    let (_bucket, a, b) = folder_pair();
    let path = crate::claude_host::install(&a.env, &crate::env::fixture_path("claude/bash-read"));
    let fold = a.json(&["fold", "--json", path.to_str().unwrap()]);
    let (source, fork) = (
        shake_plumbing::claude::Transcript::read(&path).unwrap().session_id().unwrap().to_string(),
        fold["fork"]["sessionId"].as_str().unwrap().to_string(),
    );
    let fork_path = std::path::PathBuf::from(fold["fork"]["path"].as_str().unwrap());
    a.ok(&["push"]);
    b.ok(&["fetch"]);
    let b_fork = fetched_path(&b, "alpha", &fork);
    let b_source = fetched_path(&b, "alpha", &source);
    for read in
        [vec!["show", "{f}", "--json"], vec!["log", "{f}", "--json"], vec!["audit", "fork", "{s}", "{f}", "--json"]]
    {
        let on = |m: &Machine, s: &str, f: &str| {
            let args: Vec<String> = read.iter().map(|x| x.replace("{s}", s).replace("{f}", f)).collect();
            let out = m.run(&args.iter().map(String::as_str).collect::<Vec<_>>());
            (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let (code_a, text_a) = on(&a, &source, &fork);
        let (code_b, text_b) = on(&b, &format!("alpha/{source}"), &format!("alpha/{fork}"));
        assert_eq!(code_a, code_b, "{read:?}");
        let text_a = clean(clean(text_a, &fork_path), &path);
        let text_b = clean(clean(text_b, &b_fork), &b_source);
        assert_eq!(text_a, text_b, "{read:?} differs between the origin and alpha/…");
    }
}

/// What another machine's manifest says never becomes a path unchecked: a machine name that
/// would climb out of the store is refused (exit 3, naming the manifest), and a session path
/// that climbs (`../..`) only names a file inside that machine's folder.
#[test]
fn a_crafted_manifest_never_shapes_a_path() {
    let (bucket, a, b) = folder_pair();
    let unfolded = a.env.pi_session("0199aaaa-4444", fork_of(&crate::synthetic::rich().text, "0199aaaa-4444"));
    a.ok(&["import", unfolded.to_str().unwrap()]);
    a.ok(&["push"]);
    let machines = bucket.path().join("machines");
    let file = std::fs::read_dir(&machines).unwrap().next().unwrap().unwrap().path();
    let honest: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let mut crafted = honest.clone();
    crafted["name"] = Value::from("../up");
    std::fs::write(&file, serde_json::to_vec(&crafted).unwrap()).unwrap();
    let out = b.run(&["fetch"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains(file.file_name().unwrap().to_str().unwrap()), "{}", stderr(&out));
    assert!(!b.env.store().join("up").exists() && !b.env.dir.path().join("up").exists());
    let mut crafted = honest;
    crafted["sessions"][0]["path"] = Value::from("/../../../../up/../../evil.jsonl");
    std::fs::write(&file, serde_json::to_vec(&crafted).unwrap()).unwrap();
    b.ok(&["fetch"]);
    let path = fetched_path(&b, "alpha", "0199aaaa-4444");
    let mirrors = std::fs::canonicalize(b.env.store().join("remote/alpha")).unwrap();
    assert!(path.starts_with(&mirrors), "{} is outside {}", path.display(), mirrors.display());
    b.ok(&["show", "alpha/0199aaaa"]);
    // A fetched session is read-only here: its machine's to change (this one has folds to make).
    let out = b.run(&["fold", "alpha/0199aaaa"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("fetched from machine alpha, read-only here"), "{}", stderr(&out));
}

/// A push sends what the store keeps (what `gc` keeps: what refs and import states reach), not
/// objects nothing names any more: a line written with `hash-entry -w` and named by no session
/// stays home.
#[test]
fn a_push_sends_only_what_the_store_keeps() {
    let (bucket, a, _b) = folder_pair();
    let loose = a.env.write("loose.txt", "a line no session holds: AKIAIOSFODNN7EXAMPLE\n");
    a.ok(&["hash-entry", "-w", loose.to_str().unwrap()]);
    let id = ObjectId::hash(Kind::Entry, b"a line no session holds: AKIAIOSFODNN7EXAMPLE");
    folded_session(&a, "0199aaaa-eeee");
    a.ok(&["push"]);
    let sent: HashSet<ObjectId> = pack_ids(&bucket.path().join("packs")).into_iter().flat_map(|(_, ids)| ids).collect();
    assert!(!sent.is_empty());
    assert!(!sent.contains(&id), "an object no session names was pushed");
}

/// Two pushes of one store at once (a cron job and a person) both complete: each builds its
/// pack in a folder of its own, so neither removes the file the other is still sending.
#[test]
fn two_pushes_of_one_store_at_once_both_complete() {
    let (_bucket, a, b) = folder_pair();
    folded_session(&a, "0199aaaa-0000");
    let spawn = || {
        let mut cmd = a.cmd_through(&[]);
        cmd.env(shake_plumbing::remote::PAUSE_INDEX_ENV, "300").arg("push");
        cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
    };
    let (first, second) = (spawn(), spawn());
    for out in [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()] {
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(b.json(&["fsck", "--remote", "origin", "--json"])["ok"], true);
    assert_eq!(b.json(&["fetch", "--json"])["machines"][0]["sessions"], 1);
}

/// The secret scan runs before anything leaves: a push of a session whose tool output holds
/// keys is refused, naming session, entry and kind, and sends nothing; a key only an older
/// version holds (the file rewritten since, as OMP's `/shake` rewrites) still refuses it;
/// what the user allows goes.
#[test]
fn a_push_is_refused_while_a_session_holds_secrets() {
    let (bucket, a, _b) = folder_pair();
    let path = a.env.write("planted.jsonl", crate::scan::session());
    a.ok(&["import", path.to_str().unwrap()]);
    let out = a.run(&["push"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    for word in ["5ec7-planted", "r1", "aws-access-token", "github-pat", "private-key"] {
        assert!(said.contains(word), "{word} not named: {said}");
    }
    assert!(!bucket.path().join("machines").exists(), "a refused push wrote its manifest");
    let packs = bucket.path().join("packs");
    assert!(!packs.exists() || pack_ids(&packs).is_empty(), "a refused push sent a pack");

    // The file rewritten without the keys: the older version, which a push sends too, holds them.
    let clean: String = crate::scan::session().lines().take(2).map(|l| format!("{l}\n")).collect();
    a.env.write("planted.jsonl", clean);
    a.ok(&["import", path.to_str().unwrap()]);
    let out = a.run(&["push"]);
    assert_eq!(out.status.code(), Some(1), "the older version's keys let through: {}", stderr(&out));

    a.ok(&["push", "--allow", "aws-access-token", "--allow", "github-pat", "--allow", "private-key"]);
    assert!(bucket.path().join("machines").exists());
}

/// `grep` reads a fetched session as its origin does and names it as every read command takes
/// it, `<machine>/<session>`: the same matches (entry, line, role, text) on both machines, the
/// machine in `--json`, and `--session alpha/…` picks it and not a local session of the same
/// id prefix.
#[test]
fn grep_names_a_fetched_session_by_its_machine() {
    let (_bucket, a, b) = folder_pair();
    let id = "0199aaaa-3333";
    folded_session(&a, id);
    a.ok(&["push"]);
    b.ok(&["fetch"]);
    folded_session(&b, "0199aaaa-4444");
    let rows = |m: &Machine, args: &[&str]| -> Vec<Value> {
        m.ok(args).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let here = rows(&a, &["grep", "--json", "e"]);
    let there = rows(&b, &["grep", "--json", "--session", "alpha/0199aaaa", "e"]);
    assert!(!here.is_empty());
    assert_eq!(here.len(), there.len(), "{there:?}");
    for (x, y) in here.iter().zip(&there) {
        for key in ["host", "session", "entry", "line", "role", "timestamp", "text", "spans"] {
            assert_eq!(x[key], y[key], "{key}: {x} against {y}");
        }
        assert_eq!((&x["machine"], &y["machine"]), (&Value::Null, &Value::from("alpha")));
    }
    let people = b.ok(&["grep", "--session", "alpha/", "e"]);
    assert!(!people.is_empty() && people.lines().all(|l| l.contains(&format!(" alpha/{id}:"))), "{people}");
    assert!(rows(&b, &["grep", "--json", "e"]).len() > there.len(), "B's own session matches too");
}
