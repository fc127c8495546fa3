//! The readers' fault study (`docs/reliability.md`): one flipped bit in a session file, read by
//! shake and by the host's own code, which is the reference for whatever it makes of the bytes.
//! - oh-my-pi: shake's `meter` beside OMP 18.2.11's own `/shake` code
//!   (`tests/omp-oracle/regions.ts`, one Bun process for every trial). OMP never refuses a file:
//!   it skips a line that does not parse and reads the rest as they are; the meter must print
//!   OMP's figure for whatever OMP reads.
//! - Claude Code: shake's projection beside the request the real Claude Code 2.1.328 sends when it
//!   resumes the file (`tests/claude-oracle/probe-real.mjs`, every trial in one run); where Claude
//!   Code will not resume the file, shake must not project it either.
//!
//! A refusal where the host reads is a difference, another answer with exit 0 a wrong one.
//! (pi's flips are `fault_pi.rs`'s.) Ignored by default; run it with
//! `cargo test --test cli fault_reads -- --ignored --nocapture` (trials from
//! `SHAKE_STUDY_OMP_FLIPS` and `SHAKE_STUDY_CLAUDE_FLIPS`, seed from `SHAKE_STUDY_SEED`).

use std::path::PathBuf;

use serde_json::Value;

use crate::claude_real::{project_file, resume_all, same, without_probe, Resumed};
use crate::env::{fixture_path, TestEnv};
use crate::fault_study::{flip_one_bit, trials, Figures, Rng};
use crate::omp::OmpOracle;

/// Flips one bit of an OMP session per trial (OMP's own fixture, and a generated session of
/// another model), then compares shake's meter with OMP's figure. Returns the figures and how
/// many files OMP's own code threw on.
fn flips(rng: &mut Rng, n: usize) -> (Figures, usize) {
    let env = TestEnv::new();
    let generated = env.dir.path().join("generated.jsonl");
    let g = generated.to_str().unwrap();
    env.ok(&["--host", "omp", "generate-session", "--seed", "7", "--size", "300K", "--model", "openai/gpt-5", "-o", g]);
    let sources =
        [std::fs::read(fixture_path("omp/omp-large-session.jsonl")).unwrap(), std::fs::read(&generated).unwrap()];
    let mut flipped = Vec::new();
    let paths: Vec<PathBuf> = (0..n)
        .map(|t| {
            let mut bytes = sources[t % 2].clone();
            let (at, line) = flip_one_bit(rng, &mut bytes);
            flipped.push(format!("byte {at}: {line}"));
            env.write(&format!("flip-{t}.jsonl"), bytes)
        })
        .collect();
    let ours: Vec<std::process::Output> = paths
        .iter()
        .map(|p| {
            let args = ["meter", "--host", "omp", "--json", p.to_str().unwrap()];
            env.cmd_through(&["timeout", "120"]).args(args).output().unwrap()
        })
        .collect();
    // OMP is given the model shake read (a flip may have changed it: both read the same bytes).
    let models: Vec<Option<String>> = ours
        .iter()
        .map(|o| serde_json::from_slice::<Value>(&o.stdout).ok().and_then(|v| v["model"].as_str().map(str::to_string)))
        .collect();
    let jobs: Vec<_> = paths.iter().zip(&models).map(|(p, m)| (p.as_path(), m.as_deref(), false)).collect();
    let theirs = OmpOracle::regions(&jobs, &[]);
    let mut figures = Figures::default();
    let mut threw = 0;
    for (t, (out, omp)) in ours.iter().zip(&theirs).enumerate() {
        let reading: Option<Value> = out.status.success().then(|| serde_json::from_slice(&out.stdout).ok()).flatten();
        // Where OMP's own code throws (a text block without `text`, a message without
        // `content`: JavaScript's TypeError), `/shake` frees nothing and says an error; there is
        // no figure to equal, and shake measures the entry as if the missing part were empty
        // (`docs/reliability.md`). Counted apart, as "OMP threw".
        let same = match (&reading, omp.get("error")) {
            (Some(r), None) => r["tokens"] == omp["freed"],
            (_, Some(_)) => {
                threw += 1;
                true
            }
            (None, None) => false,
        };
        if !same {
            let said = String::from_utf8_lossy(&out.stderr);
            let got = reading
                .map_or_else(|| format!("exit {:?}: {}", out.status.code(), said.trim()), |r| r["tokens"].to_string());
            let omp = omp.get("error").unwrap_or(&omp["freed"]);
            eprintln!("flip trial {t} ({}): shake {got}, OMP {omp}: {}", paths[t].display(), flipped[t]);
        }
        figures.count(same, out);
    }
    (figures, threw)
}

/// Real Claude Code transcripts that Claude Code resumes (`tests/fixtures/claude-real/`).
const CLAUDE_SOURCES: [&str; 3] = [
    "marot__spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
    "aistrad__work__560343df-fb9a-4a40-af98-7c1fa4218709.jsonl",
    "aistrad__work__2e75676f-cf4b-4274-b7c3-fcaebb112349.jsonl",
];

/// Flips one bit of a real Claude Code transcript per trial, then compares shake's projection
/// with the request Claude Code sends when it resumes the file. Each trial's file is named as
/// the probe resumes it (`trial<N>__x__<session id>.jsonl`).
fn claude_flips(rng: &mut Rng, n: usize) -> Figures {
    let env = TestEnv::new();
    let dir = env.dir.path().join("claude");
    std::fs::create_dir_all(&dir).unwrap();
    let sources: Vec<(Vec<u8>, &str)> = CLAUDE_SOURCES
        .iter()
        .map(|name| {
            let bytes = std::fs::read(fixture_path(&format!("claude-real/{name}"))).unwrap();
            (bytes, name.rsplit("__").next().unwrap())
        })
        .collect();
    let mut flipped = Vec::new();
    let names: Vec<String> = (0..n)
        .map(|t| {
            let (source, id) = &sources[t % sources.len()];
            let mut bytes = source.clone();
            let (at, line) = flip_one_bit(rng, &mut bytes);
            flipped.push(format!("byte {at}: {line}"));
            let name = format!("trial{t}__x__{id}");
            std::fs::write(dir.join(&name), bytes).unwrap();
            name
        })
        .collect();
    let resumed = resume_all(&dir);
    let mut figures = Figures::default();
    for (t, name) in names.iter().enumerate() {
        let path = dir.join(name);
        let args = ["project", "--json", path.to_str().unwrap()];
        let out = env.cmd_through(&["timeout", "120"]).args(args).output().unwrap();
        let verdict = match resumed.get(name) {
            Some(Resumed::Sent { messages, .. }) if out.status.success() => {
                let ours = project_file(&path, resumed.get(name));
                let theirs = std::panic::catch_unwind(|| without_probe(name, &ours, messages));
                let equal = |theirs: Vec<Value>| {
                    theirs.len() == ours.len() && ours.iter().zip(&theirs).all(|(a, b)| same(a, b))
                };
                match theirs.is_ok_and(equal) {
                    true => Ok(()),
                    false => Err("another conversation".to_string()),
                }
            }
            Some(Resumed::Sent { .. }) => Err(format!("refused: {}", String::from_utf8_lossy(&out.stderr).trim())),
            Some(Resumed::Refused(_)) if !out.status.success() => Ok(()),
            Some(Resumed::Refused(said)) => Err(format!("projected; Claude Code said {said}")),
            None => Err("not resumed by the probe".to_string()),
        };
        if let Err(why) = &verdict {
            eprintln!("claude flip trial {t} ({}): {why}: {}", path.display(), flipped[t]);
        }
        figures.count(verdict.is_ok(), &out);
    }
    figures
}

#[test]
#[ignore = "a fault study: minutes; run it with --ignored (docs/reliability.md)"]
fn fault_reads() {
    let seed = std::env::var("SHAKE_STUDY_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_u64);
    let mut rng = Rng(seed);
    let (omp, threw) = flips(&mut rng, trials("OMP_FLIPS", 200));
    let claude = claude_flips(&mut rng, trials("CLAUDE_FLIPS", 60));
    println!("fault study of the readers, seed {seed}");
    println!("| part | trials | same as the host | differs | wrong with exit 0 | panics | hangs |");
    println!("|---|---|---|---|---|---|---|");
    let part = format!(
        "one flipped bit in an OMP session, metered by shake and by OMP's `/shake` (OMP's code threw on {threw})"
    );
    println!("{}", omp.row(&part));
    let part = "one flipped bit in a real Claude Code transcript, projected by shake and resumed by Claude Code";
    println!("{}", claude.row(part));
    for f in [&omp, &claude] {
        assert_eq!((f.panics, f.hangs), (0, 0), "a panic or a hang");
        assert_eq!(f.kept, f.trials, "shake differs from the host's own code");
    }
}
