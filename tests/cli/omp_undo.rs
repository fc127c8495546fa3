//! The undo for OMP's destructive `/shake`: every imported version of an OMP file stays in the
//! store, and `shake restore --version N` brings back the file as it was before OMP rewrote it,
//! byte for byte, without losing a version the store had not seen yet.
//!
//! OMP's `/shake` is simulated as its code does it (`omp::shake::rewrite`: OMP's regions, its
//! placeholders, `prunedAt`, the whole file re-written through a temp file and a rename), and the
//! oracle confirms the rewritten file is one OMP reads as shaken.

use std::path::Path;

use shake_plumbing::host::generate::Limit;
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

#[test]
fn omp_restore_undoes_omps_shake_byte_for_byte() {
    let env = TestEnv::new();
    let opts = generate::Options {
        seed: 41,
        limit: Limit::Entries(300),
        model: "anthropic/claude-sonnet-4-5".into(),
        title: "undo".into(),
    };
    let original = generate::generate(&opts);
    let path = env.write("2026-01-01T00-00-00-000Z_0194f5a0-0000-7000-8000-000000000001.jsonl", &original);
    let p = path.to_str().unwrap();
    env.ok(&["import", p]);

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
    assert!(file.entries.iter().any(|e| e.message().is_some_and(|m| m.contains_key("prunedAt"))));

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
