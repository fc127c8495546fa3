//! The fault study of the OMP meter (`docs/reliability.md`): one flipped bit in an oh-my-pi
//! session, measured by shake's `meter` and by OMP 18.2.11's own `/shake` code
//! (`tests/omp-oracle/regions.ts`, one Bun process for every trial). OMP never refuses a file:
//! it skips a line that does not parse, and reads the rest as they are. The meter must print
//! OMP's figure for whatever OMP reads; a refusal where OMP reads is a difference, a figure that
//! is not OMP's with exit 0 a wrong answer. Ignored by default; run it with
//! `cargo test --test cli fault_omp -- --ignored --nocapture` (trials from
//! `SHAKE_STUDY_OMP_FLIPS`, seed from `SHAKE_STUDY_SEED`).

use std::path::PathBuf;

use serde_json::Value;

use crate::env::{fixture_path, TestEnv};
use crate::fault_study::{trials, Figures, Rng};
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
            let at = rng.below(bytes.len());
            bytes[at] ^= 1 << rng.below(8);
            let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            flipped.push(format!("byte {at}: {}", String::from_utf8_lossy(&bytes[start..(at + 40).min(bytes.len())])));
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

#[test]
#[ignore = "a fault study: minutes; run it with --ignored (docs/reliability.md)"]
fn fault_omp() {
    let seed = std::env::var("SHAKE_STUDY_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_u64);
    let mut rng = Rng(seed);
    let (f, threw) = flips(&mut rng, trials("OMP_FLIPS", 200));
    println!("fault study of the OMP meter, seed {seed}");
    println!("| part | trials | same as OMP | differs | wrong with exit 0 | panics | hangs |");
    println!("|---|---|---|---|---|---|---|");
    let part = format!(
        "one flipped bit in an OMP session, metered by shake and by OMP's `/shake` (OMP's code threw on {threw})"
    );
    println!("{}", f.row(&part));
    assert_eq!((f.panics, f.hangs), (0, 0), "a panic or a hang");
    assert_eq!(f.kept, f.trials, "the meter differs from OMP's own figure");
}
