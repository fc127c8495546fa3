//! The undo for OMP's destructive `/shake`: every imported version of an OMP file stays in the
//! store, and `shake restore --version N` brings back the file as it was before OMP rewrote it,
//! byte for byte, without losing a version the store had not seen yet.
//!
//! OMP's `/shake` is simulated as its code does it (`omp::shake::rewrite`: OMP's regions, its
//! placeholders, `prunedAt`, the whole file re-written through a temp file and a rename), and the
//! oracle confirms the rewritten file is one OMP reads as shaken.

use std::path::Path;

use shake_plumbing::hosts::generate::Limit;
use shake_plumbing::omp::generate;
use shake_plumbing::omp::shake::{self, AGGRESSIVE};
use shake_plumbing::omp::{reading, OmpFile, OmpTokenizer};

use crate::env::TestEnv;
use crate::omp::OmpOracle;

/// Writes `bytes` over `path` as OMP's `rewriteEntries` does: a temp file, then a rename.
fn omp_rewrite(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("jsonl.tmp");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Simulates OMP's manual `/shake` on the file at `path` (bytes/4 counts), saving `artifact`.
fn omp_shake(path: &Path, artifact: u64) -> (usize, u64) {
    let file = OmpFile::read(path).unwrap();
    let got = reading(&file, &AGGRESSIVE, None, OmpTokenizer::new(None, false));
    assert!(!got.regions.is_empty(), "something to shake");
    let (bytes, freed) = shake::rewrite(&file, &got.regions, Some(artifact), 1_790_000_000_000 + artifact);
    omp_rewrite(path, &bytes);
    (got.regions.len(), freed)
}

fn versions(env: &TestEnv) -> Vec<String> {
    env.ok(&["sessions", "--versions", "--porcelain"])
        .lines()
        .filter(|l| l.starts_with("version\t"))
        .map(str::to_string)
        .collect()
}

/// A generated 300-entry OMP session for `model` (seed 40 + `n`), written and imported: its
/// path and bytes.
fn imported(env: &TestEnv, n: u64, model: &str) -> (std::path::PathBuf, Vec<u8>) {
    let opts =
        generate::Options { seed: 40 + n, limit: Limit::Entries(300), model: model.into(), title: "undo".into() };
    let original = generate::generate(&opts);
    let path = env.write(&format!("2026-01-01T00-00-00-000Z_0194f5a0-0000-7000-8000-00000000000{n}.jsonl"), &original);
    env.ok(&["import", path.to_str().unwrap()]);
    (path, original)
}

#[test]
fn omp_restore_undoes_omps_shake_byte_for_byte() {
    let env = TestEnv::new();
    let (path, original) = imported(&env, 1, "anthropic/claude-sonnet-4-5");
    let p = path.to_str().unwrap();

    let (regions, freed) = omp_shake(&path, 1);
    assert!(regions > 3 && freed > 1_000, "{regions} regions, {freed} freed");
    let shaken = std::fs::read(&path).unwrap();
    assert_ne!(shaken, original);
    // OMP reads the rewrite as shaken: its own rules find no tool result left outside the tail.
    let after = &OmpOracle::regions(&[(path.as_path(), None, false)], &[("NODE_ENV", "test")])[0];
    let file = OmpFile::read(&path).unwrap();
    let ours = reading(&file, &AGGRESSIVE, None, OmpTokenizer::new(None, false));
    assert_eq!(after["regions"].as_array().unwrap().len(), ours.regions.len());
    assert!(ours.regions.len() < regions);
    assert!(file
        .entries
        .iter()
        .any(|e| shake_plumbing::omp::file::message(&file.value(e)).is_some_and(|m| m.contains_key("prunedAt"))));

    // The meter's import keeps the shaken version too; version 1 is the file before the shake.
    env.ok(&["import", p]);
    assert_eq!(versions(&env).len(), 2);
    let err = env.fails(&["restore", p, "--version", "1"], 1);
    assert!(err.contains("exists; not overwritten"), "{err}");
    env.ok(&["restore", p, "--version", "1", "--force"]);
    assert_eq!(std::fs::read(&path).unwrap(), original, "restored byte for byte");
    assert_eq!(versions(&env).len(), 2, "nothing new to keep: the shaken file was already imported");

    // OMP shakes again and appends a turn the store never saw: restoring imports it first, so
    // it is a version of its own and can be restored in turn.
    omp_shake(&path, 2);
    let mut unseen = std::fs::read(&path).unwrap();
    unseen.extend_from_slice(b"{\"type\":\"custom\",\"customType\":\"late\",\"id\":\"feedf00d\",\"parentId\":null,\"timestamp\":\"2026-01-02T00:00:00.000Z\"}\n");
    std::fs::write(&path, &unseen).unwrap();
    env.ok(&["restore", p, "--version", "1", "--force"]);
    assert_eq!(std::fs::read(&path).unwrap(), original);
    let list = versions(&env);
    assert_eq!(list.len(), 3, "{list:?}");
    env.ok(&["restore", p, "--version", "3", "--force"]);
    assert_eq!(std::fs::read(&path).unwrap(), unseen, "the unseen version came back too");
}

/// A Claude session's rewrite is counted with OMP's own encoding (ctok 1.0.0's vocabulary, which
/// OMP ships), and every output names that one: `omp-v3`, not ctok 1.3.0's `claude-v3`.
#[test]
fn omp_outputs_name_the_encoding_omp_counts_claude_with() {
    let env = TestEnv::new();
    let (path, _) = imported(&env, 3, "anthropic/claude-sonnet-4-5");
    let p = path.to_str().unwrap();
    let meter: serde_json::Value = serde_json::from_str(&env.ok(&["meter", "--json", p])).unwrap();
    assert_eq!((meter["tokenizer"].as_str(), meter["exact"].as_bool()), (Some("omp-v3"), Some(true)));
    omp_shake(&path, 3);
    env.ok(&["import", p]);
    let log: serde_json::Value = serde_json::from_str(&env.ok(&["log", "--json", p])).unwrap();
    assert_eq!(log[0]["tokenizer"], "omp-v3", "{log}");
    let text = env.ok(&["log", p]);
    assert!(text.contains("tokens left the context (omp-v3)"), "{text}");
}

/// The ids of the entries `regions` (the oracle's) name.
fn region_entries(regions: &serde_json::Value) -> std::collections::BTreeSet<String> {
    regions["regions"].as_array().unwrap().iter().map(|r| r["entryId"].as_str().unwrap().to_string()).collect()
}

#[test]
fn omp_log_and_diff_name_exactly_what_omps_shake_changed() {
    let env = TestEnv::new();
    let started = shake_plumbing::time::now_millis();
    let (path, original) = imported(&env, 2, "openai/gpt-5.1-codex");
    let p = path.to_str().unwrap();
    let before = &OmpOracle::regions(&[(path.as_path(), None, false)], &[("NODE_ENV", "test")])[0];
    let (regions, freed) = omp_shake(&path, 7);
    assert_eq!(regions, before["regions"].as_array().unwrap().len(), "the rewrite took OMP's regions");
    let want = region_entries(before);
    assert!(want.len() > 3);
    env.ok(&["meter", p]); // the footer's import keeps the shaken version

    let log: serde_json::Value = serde_json::from_str(&env.ok(&["log", "--json", p])).unwrap();
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 1, "one rewrite: {log:?}");
    let r = &log[0];
    assert_eq!((r["from"].as_u64(), r["to"].as_u64()), (Some(1), Some(2)));
    let ids = |changes: &serde_json::Value| -> std::collections::BTreeSet<String> {
        changes.as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(ids(&r["changes"]), want, "the log names exactly the entries OMP shook");
    assert!(r["changes"].as_array().unwrap().iter().all(|c| c["change"] == "shaken"));
    let put: usize = r["changes"].as_array().unwrap().iter().map(|c| c["placeholders"].as_array().unwrap().len()).sum();
    assert_eq!(put, regions, "one placeholder per region");
    let removed = r["tokensRemoved"].as_u64().unwrap();
    assert!(removed.abs_diff(freed) * 100 <= freed, "{removed} tokens left, /shake said {freed}");
    assert_eq!((r["tokenizer"].as_str(), r["exact"].as_bool()), (Some("bytes/4"), Some(true)));
    let at = shake_plumbing::time::parse_iso_millis(r["importedAt"].as_str().unwrap()).unwrap() as u64;
    assert!(at >= started - 1_000 && at <= shake_plumbing::time::now_millis(), "imported at {at}");
    let text = env.ok(&["log", p]);
    assert!(text.contains("2 versions imported; 1 rewrite by oh-my-pi."), "{text}");
    assert!(text.contains("version 1 → 2") && text.contains("shake restore --version 1"), "{text}");
    assert!(want.iter().all(|id| text.contains(id.as_str())), "{text}");

    // diff of the two versions: the same entries, in every shape.
    let a = format!("{p}@1");
    let b = format!("{p}@2");
    let out = env.cmd().args(["diff", "--json", &a, &b]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ids(&d["changes"]), want);
    assert_eq!((d["appended"].as_bool(), d["same"].as_bool()), (Some(false), Some(false)));
    assert_eq!((d["a"]["number"].as_u64(), d["b"]["number"].as_u64()), (Some(1), Some(2)));
    assert_eq!(d["tokensRemoved"], r["tokensRemoved"]);
    let out = env.cmd().args(["diff", "--porcelain", &a, &b]).output().unwrap();
    let records = String::from_utf8(out.stdout).unwrap();
    let first = records.lines().next().unwrap();
    assert!(first.starts_with(&format!("versions\t1\t2\tno\tno\t{removed}\t")), "{first}");
    let shaken: std::collections::BTreeSet<String> = records
        .lines()
        .filter_map(|l| l.strip_prefix("shaken\t"))
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect();
    assert_eq!(shaken, want);
    assert_eq!(records.lines().filter(|l| l.starts_with("put\t")).count(), regions);
    let out = env.cmd().args(["diff", &a, &b]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("[shaken ~") && text.contains(&format!("{} entries changed", want.len())), "{text}");
    // A version against itself is the same; one version against a leaf is refused.
    assert_eq!(env.cmd().args(["diff", &b, &b]).output().unwrap().status.code(), Some(0));
    let err = env.fails(&["diff", &a, p], 2);
    assert!(err.contains("not one of each"), "{err}");
    let err = env.fails(&["diff", &a, &format!("{p}@9")], 2);
    assert!(err.contains("no version 9 (it has 2)\nhint: `shake sessions --versions` lists them\n"), "{err}");

    // The undo still brings the file back byte for byte, and the log then shows that rewrite too.
    env.ok(&["restore", p, "--version", "1", "--force"]);
    assert_eq!(std::fs::read(&path).unwrap(), original);
    let log: serde_json::Value = serde_json::from_str(&env.ok(&["log", "--json", p])).unwrap();
    assert_eq!(log.as_array().unwrap().len(), 2);
    assert_eq!(ids(&log[0]["changes"]), want, "the restore put back the same entries");
    assert!(log[0]["changes"].as_array().unwrap().iter().all(|c| c["change"] == "edited"));
}
