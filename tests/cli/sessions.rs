//! The store as a tool: `sessions` (families through shared node ids, versions), `restore`
//! (byte-exact, refusing to clobber), `gc` (drops what nothing reaches, keeps every version),
//! implicit import by reading commands, and overlays stored per leaf and checked by `fsck`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::env::TestEnv;
use crate::family::{folded, pi_fork};

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A fork as pi's `createBranchedSession` writes one: a new header, then the source's first
/// `keep` entry lines byte for byte.
fn fork(env: &TestEnv, source: &Path, keep: usize, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(source).unwrap();
    let mut lines = text.lines();
    let mut head: Value = json(lines.next().unwrap());
    head["id"] = "0bb22cc3-0000-7000-8000-00000000f0e1".into();
    head["parentSession"] = p(source).into();
    let body: Vec<&str> = lines.take(keep).collect();
    env.write(name, format!("{head}\n{}\n", body.join("\n")))
}

fn sessions(env: &TestEnv, extra: &[&str]) -> Vec<Value> {
    json(&env.ok(&[&["sessions", "--json"], extra].concat())).as_array().unwrap().clone()
}

fn by_path<'a>(rows: &'a [Value], path: &Path) -> &'a Value {
    let want = std::fs::canonicalize(path).unwrap();
    rows.iter().find(|r| r["path"] == p(&want)).unwrap_or_else(|| panic!("{} not listed: {rows:?}", path.display()))
}

#[test]
fn reading_commands_import_and_sessions_finds_forks() {
    let env = TestEnv::new();
    let source = env.dir.path().join("source.jsonl");
    env.ok(&["generate-session", "--seed", "3", "-o", p(&source)]);
    let other = env.dir.path().join("other.jsonl");
    env.ok(&["generate-session", "--seed", "4", "-o", p(&other)]);
    let fork = fork(&env, &source, 5, "fork.jsonl");
    assert!(sessions(&env, &[]).is_empty());
    // No `shake import`: reading commands bring the files in.
    for f in [&source, &other, &fork] {
        env.ok(&["ls-leaves", p(f)]);
    }
    let rows = sessions(&env, &[]);
    assert_eq!(rows.len(), 3);
    let (s, o, f) = (by_path(&rows, &source), by_path(&rows, &other), by_path(&rows, &fork));
    assert_eq!(f["entries"], 5);
    assert_eq!(f["leaves"], 1);
    assert_eq!(f["bytes"], std::fs::metadata(&fork).unwrap().len());
    assert_eq!(f["family"].as_array().unwrap().len(), 1);
    assert_eq!(f["family"][0]["session"], s["session"]);
    assert_eq!(f["family"][0]["shared"], 5);
    assert_eq!(s["family"][0]["shared"], 5);
    assert!(o["family"].as_array().unwrap().is_empty(), "{o}");
    // Text: one record per session, the family number shared by relatives; -z ends with NUL.
    let text = env.ok(&["sessions", "--porcelain"]);
    let family_of = |path: &Path| {
        let path = std::fs::canonicalize(path).unwrap();
        let line = text.lines().find(|l| l.ends_with(p(&path))).unwrap().to_string();
        line.split('\t').nth(6).unwrap().to_string()
    };
    assert_eq!(family_of(&source), family_of(&fork));
    assert_ne!(family_of(&source), family_of(&other));
    let z = env.ok(&["sessions", "-z"]);
    assert_eq!(z.matches('\0').count(), 3 * 8);
    assert!(!z.contains('\n'));
}

#[test]
fn versions_are_listed_and_restored_byte_for_byte() {
    let env = TestEnv::new();
    let path = env.dir.path().join("s.jsonl");
    env.ok(&["generate-session", "--seed", "5", "-o", p(&path)]);
    env.ok(&["import", p(&path)]);
    let v1 = std::fs::read(&path).unwrap();
    let mut v2 = v1.clone();
    v2.extend_from_slice(
        b"{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"zz01\",\"parentId\":null,\"timestamp\":\"t\"}\n",
    );
    std::fs::write(&path, &v2).unwrap();
    env.ok(&["ls-entries", p(&path)]);
    let v3 = v1[..v1.len() / 2].iter().chain(b"\n").copied().collect::<Vec<u8>>();
    std::fs::write(&path, &v3).unwrap();
    env.ok(&["ls-entries", p(&path)]);
    let rows = sessions(&env, &["--versions"]);
    let history: Vec<(u64, String)> = rows[0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["bytes"].as_u64().unwrap(), v["how"].as_str().unwrap().to_string()))
        .collect();
    let sizes = [v1.len() as u64, v2.len() as u64, v3.len() as u64];
    assert_eq!(history, [(sizes[0], "first".into()), (sizes[1], "appended".into()), (sizes[2], "rewritten".into())]);
    let text = env.ok(&["sessions", "--versions", "--porcelain"]);
    assert_eq!(text.lines().filter(|l| l.starts_with("version\t")).count(), 3);
    // The session's own path exists: refused without --force, restored with it.
    let err = env.fails(&["restore", p(&path), "--version", "2"], 1);
    assert!(err.contains("exists"), "{err}");
    env.ok(&["restore", p(&path), "--version", "2", "--force"]);
    assert_eq!(std::fs::read(&path).unwrap(), v2);
    let out = env.dir.path().join("v1.jsonl");
    let sid = rows[0]["session"].as_str().unwrap();
    env.ok(&["restore", &sid[..8], "--version", "1", "-o", p(&out)]);
    assert_eq!(std::fs::read(&out).unwrap(), v1);
    env.fails(&["restore", p(&path), "-o", p(&out)], 1);
    // The bytes replaced by --force were imported first: nothing is lost.
    let n = sessions(&env, &[])[0]["versions"].as_u64().unwrap();
    let last = env.cmd().args(["restore", p(&path), "--version", &n.to_string(), "-o", "-"]).output().unwrap();
    assert_eq!(last.stdout, v3);
    env.fails(&["restore", p(&path), "--version", "99", "-o", "-"], 1);
}

fn refs(env: &TestEnv) -> Vec<(String, String)> {
    env.ok(&["show-ref"])
        .lines()
        .map(|l| l.split_once(' ').map(|(a, b)| (b.to_string(), a.to_string())).unwrap())
        .collect()
}

#[test]
fn fold_stores_overlays_fsck_recomputes_them_and_gc_keeps_every_version() {
    let env = TestEnv::new();
    let Some(f) = (1..20).find_map(|seed| folded(&env, seed, &format!("s{seed}.jsonl"))) else {
        panic!("nothing folds")
    };
    env.ok(&["status", f.p(), "--leaf", &f.before]);
    let overlays: Vec<(String, String)> =
        refs(&env).into_iter().filter(|(n, _)| n.starts_with("refs/overlays/")).collect();
    assert_eq!(overlays.len(), 2, "{overlays:?}");
    let fsck = json(&env.ok(&["fsck", "--json"]));
    assert_eq!(fsck["ok"], true, "{fsck}");
    assert!(fsck["notes"].as_array().unwrap().is_empty(), "every overlay is recomputed: {fsck}");
    // The folded leaf's overlay lists the fold's targets.
    let leaf_overlay = overlays
        .iter()
        .map(|(_, id)| json(&env.ok(&["cat-object", id])))
        .find(|o| o["leaf"] == f.leaf.as_str())
        .expect("overlay of the folded leaf");
    assert_eq!(leaf_overlay["wall"]["items"][0]["log"], f.log.as_str());
    // status derives the wall whether the store holds its overlay or not: the same report.
    let stored = env.ok(&["status", f.p(), "--json"]);
    // (Without the packed refs and states, status imports the file again and derives the wall.)
    std::fs::rename(env.store().join("packed"), env.dir.path().join("packed")).unwrap();
    assert_eq!(env.ok(&["status", f.p(), "--json"]), stored);
    std::fs::remove_dir_all(env.store().join("packed")).unwrap();
    std::fs::rename(env.dir.path().join("packed"), env.store().join("packed")).unwrap();
    // An overlay under another leaf's ref is corruption, named by its ref.
    let (a, b) = (&overlays[0], &overlays[1]);
    env.ok(&["update-ref", &a.0, &b.1]);
    env.fails(&["fsck"], 3);
    let out = json(&String::from_utf8(env.run(&["fsck", "--json"]).stdout).unwrap());
    assert!(out["problems"].as_array().unwrap().iter().any(|p| p.as_str().unwrap().contains(&a.0)), "{out}");
    env.ok(&["update-ref", &a.0, &a.1]);
    // Remove one overlay ref: gc drops that object and nothing any version needs.
    let versions: Vec<Vec<u8>> = (1..=sessions(&env, &[])[0]["versions"].as_u64().unwrap())
        .map(|n| env.cmd().args(["cat-session", f.p(), "--version", &n.to_string()]).output().unwrap().stdout)
        .collect();
    // (shake deletes no ref: unpack the store into loose refs, as an older shake wrote them.)
    env.ok(&["gc"]);
    crate::store::make_loose(&env.store());
    std::fs::remove_file(env.store().join(&b.0)).unwrap();
    let dry = json(&env.ok(&["gc", "--dry-run", "--json"]));
    assert_eq!(dry["dropped"]["overlay"], 1, "{dry}");
    assert_eq!(json(&env.ok(&["gc", "--dry-run", "--json"])), dry, "a dry run changes nothing");
    let gc = json(&env.ok(&["gc", "--json"]));
    assert_eq!(gc["dropped"], dry["dropped"]);
    assert!(env.cmd().args(["cat-object", &b.1]).output().unwrap().status.code() != Some(0));
    let counts = json(&env.ok(&["count-objects", "--json"]));
    assert_eq!(counts["packs"], 1, "{counts}");
    assert_eq!(counts["objects"], gc["kept"], "{counts}");
    assert_eq!(json(&env.ok(&["fsck", "--json"]))["ok"], true);
    for (n, bytes) in versions.iter().enumerate() {
        let out = env.cmd().args(["cat-session", f.p(), "--version", &(n + 1).to_string()]).output().unwrap();
        assert_eq!(&out.stdout, bytes, "version {}", n + 1);
    }
    // A second gc finds nothing to drop.
    let again = json(&env.ok(&["gc", "--json"]));
    assert_eq!(again["kept"], again["objects"]);
}

/// Each write stores the overlay at its new leaf derived from the session it parsed before the
/// append plus the batch (not from the file read again): it must be what `fsck` recomputes from
/// the file, and the store's latest version (the appended bytes imported alone) rebuilds it.
#[test]
fn the_overlay_written_after_each_fold_and_undo_is_the_one_fsck_recomputes() {
    let env = TestEnv::new();
    let path = env.write("rich.jsonl", &crate::synthetic::rich().text);
    let steps: [&[&str]; 6] = [
        &["fold"],
        &["undo"],
        &["fold"],
        &["fold", "--profile", "aggressive"],
        &["undo", "--last"],
        &["fold", "--scope", "thinking"],
    ];
    let mut leaves = Vec::new();
    for step in steps {
        let out = json(&env.ok(&[step, &[p(&path), "--json"]].concat()));
        let Some(leaf) = out["appended"].as_array().unwrap().last() else { continue };
        leaves.push(leaf.as_str().unwrap().to_string());
        let fsck = json(&env.ok(&["fsck", "--json"]));
        assert_eq!(fsck["ok"], true, "after {step:?}: {fsck}");
        assert!(fsck["notes"].as_array().unwrap().is_empty(), "after {step:?}: {fsck}");
        let stored: Vec<String> = refs(&env)
            .into_iter()
            .filter(|(n, _)| n.starts_with("refs/overlays/"))
            .map(|(_, id)| json(&env.ok(&["cat-object", &id]))["leaf"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(stored.len(), leaves.len(), "one overlay per write, at its leaf: {stored:?}");
        assert!(stored.contains(leaves.last().unwrap()), "after {step:?}: {stored:?}");
        let rebuilt = env.cmd().args(["cat-session", p(&path)]).output().unwrap().stdout;
        assert_eq!(rebuilt, std::fs::read(&path).unwrap(), "after {step:?}");
    }
    assert!(leaves.len() >= 5, "the steps write: {leaves:?}");
}

#[test]
fn an_unwritable_store_warns_once_and_reading_goes_on() {
    let env = TestEnv::new();
    let path = env.dir.path().join("s.jsonl");
    env.ok(&["generate-session", "--seed", "2", "-o", p(&path)]);
    // A file where the store's folder should be: it can be neither opened nor written.
    let blocker = env.write("not-a-dir", "x");
    let out = env.cmd().args(["--store", p(&blocker), "status", p(&path)]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("not updated").count(), 1, "{stderr}");
    // fold still appends (the store fails before and after the append: still one warning).
    let seed = (1..20).find(|seed| {
        let path = env.dir.path().join(format!("f{seed}.jsonl"));
        env.ok(&["generate-session", "--seed", &seed.to_string(), "-o", p(&path)]);
        let dry = json(&env.ok(&["fold", p(&path), "--dry-run", "--json"]));
        !dry["targets"].as_array().unwrap().is_empty()
    });
    let path = env.dir.path().join(format!("f{}.jsonl", seed.expect("a session that folds")));
    // Generated a while ago: its own-write record is in the other store.
    crate::env::settled(&path);
    let before = std::fs::metadata(&path).unwrap().len();
    let out = env.cmd().args(["--store", p(&blocker), "fold", p(&path), "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!json(&String::from_utf8_lossy(&out.stdout))["appended"].as_array().unwrap().is_empty());
    assert!(std::fs::metadata(&path).unwrap().len() > before);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("not updated").count(), 1, "{stderr}");
}

#[test]
fn gc_interrupted_after_the_new_pack_leaves_a_valid_store() {
    let env = TestEnv::new();
    let path = env.dir.path().join("s.jsonl");
    env.ok(&["generate-session", "--seed", "6", "-o", p(&path)]);
    env.ok(&["status", p(&path)]);
    let first = std::fs::read(&path).unwrap();
    let mut grown = first.clone();
    grown.extend_from_slice(
        b"{\"type\":\"custom\",\"customType\":\"x\",\"id\":\"zz02\",\"parentId\":null,\"timestamp\":\"t\"}\n",
    );
    std::fs::write(&path, &grown).unwrap();
    env.ok(&["status", p(&path)]);
    let packs = env.store().join("packs");
    let saved = tempfile::tempdir().unwrap();
    let old: Vec<PathBuf> = std::fs::read_dir(&packs).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(old.len() >= 2, "{old:?}");
    for f in &old {
        std::fs::copy(f, saved.path().join(f.file_name().unwrap())).unwrap();
    }
    env.ok(&["gc"]);
    // A crash between the new pack's rename and the old packs' removal: both sets are there.
    for f in &old {
        std::fs::copy(saved.path().join(f.file_name().unwrap()), f).unwrap();
    }
    // And one before any rename: a temp pack left behind.
    std::fs::write(packs.join("tmp-pack-crashed"), b"SHAKPACK half").unwrap();
    let fsck = json(&String::from_utf8(env.run(&["fsck", "--json"]).stdout).unwrap());
    assert_eq!(fsck["ok"], true, "{fsck}");
    assert_eq!(env.cmd().args(["cat-session", p(&path), "--version", "1"]).output().unwrap().stdout, first);
    assert_eq!(env.cmd().args(["cat-session", p(&path)]).output().unwrap().stdout, grown);
    env.ok(&["gc"]);
    assert_eq!(json(&env.ok(&["count-objects", "--json"]))["packs"], 1);
}

#[test]
fn a_fork_made_by_pi_is_in_its_sources_family() {
    let env = TestEnv::new();
    let Some(f) = (1..20).find_map(|seed| folded(&env, seed, &format!("s{seed}.jsonl"))) else {
        panic!("nothing folds")
    };
    let fork = pi_fork(&env, "branched", &f.path, &f.before, "forks");
    env.ok(&["ls-leaves", p(&fork)]);
    let rows = sessions(&env, &[]);
    let (s, k) = (by_path(&rows, &f.path), by_path(&rows, &fork));
    assert_ne!(s["session"], k["session"]);
    let shared = k["family"][0]["shared"].as_u64().unwrap();
    assert_eq!(k["family"][0]["session"], s["session"], "{k}");
    assert!(shared > 0 && shared <= k["entries"].as_u64().unwrap(), "{k}");
    assert_eq!(s["family"][0]["shared"], shared);
}

/// A Claude Code transcript whose first rows name no session (summaries first, or only
/// conversation rows) is listed by the id its rows carry, else by its file's name (issue 32.10):
/// `-` gave the user nothing to type.
#[test]
fn a_transcript_is_listed_by_the_id_to_type() {
    let env = TestEnv::new();
    let copy = |fixture: &str, name: &str| {
        let to = env.dir.path().join(name);
        std::fs::copy(crate::env::fixture_path(&format!("claude-real/{fixture}")), &to).unwrap();
        to
    };
    let rows = copy("attach-every-type.jsonl", "rows.jsonl");
    let summaries_first =
        copy("gouchan__agent-swarm-config__bdc6842b-5fce-422b-8644-c62e32c34900.jsonl", "summaries-first.jsonl");
    // Only summaries: no row names the session; Claude Code names the file by it.
    let named =
        copy("aistrad__work__d6ae3ef5-fae9-4f38-9d8a-5b5249c0cbd6.jsonl", "d6ae3ef5-0816-4b4f-9c0f-5b5249c0cbd6.jsonl");
    for path in [&rows, &summaries_first, &named] {
        env.ok(&["import", p(path)]);
    }
    let listed = json(&env.ok(&["sessions", "--json"]));
    let id_of = |path: &Path| {
        let row =
            listed.as_array().unwrap().iter().find(|s| s["path"] == p(path)).unwrap_or_else(|| panic!("{listed}"));
        row["session"].as_str().map(str::to_string)
    };
    assert_eq!(id_of(&rows).as_deref(), Some("61dcf75d-56df-459d-b351-729550898806"));
    assert_eq!(id_of(&summaries_first).as_deref(), Some("bdc6842b-5fce-422b-8644-c62e32c34900"));
    assert_eq!(id_of(&named).as_deref(), Some("d6ae3ef5-0816-4b4f-9c0f-5b5249c0cbd6"));
    let text = env.ok(&["sessions"]);
    assert!(text.lines().all(|l| !l.starts_with("- ")), "{text}");
}
