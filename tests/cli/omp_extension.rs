//! The OMP extension (`integrations/omp/shake-meter.ts`), loaded through oh-my-pi's own extension
//! loader from npm (`tests/omp-oracle/extension-check.ts`) and driven with a session: its footer
//! shows OMP's own `/shake` figure with the priced meter's verdict, its log records it, and every
//! refresh imports the file, so the version before a `/shake` is in the store and `restore` brings
//! it back.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use shake_plumbing::hosts::generate::Limit;
use shake_plumbing::omp::generate;
use shake_plumbing::omp::shake::{self, AGGRESSIVE};
use shake_plumbing::omp::{reading, OmpFile, OmpTokenizer};

use crate::env::{json_stdout, TestEnv};
use crate::omp::OmpOracle;

/// The footer text and colour the extension should show for `tokens`.
fn label(tokens: u64) -> String {
    let color = match tokens {
        25_000.. => "error",
        10_000.. => "warning",
        _ => "dim",
    };
    match tokens {
        0..1000 => format!("[{color}]✂ <1k shakeable"),
        _ => format!("[{color}]✂ ~{}k shakeable", (tokens as f64 / 1000.0).round()),
    }
}

/// `shake meter --json` on `file` at `now`, in a store of its own (the test's store counts the
/// versions the extension imports).
fn meter(file: &Path, now: &str) -> Value {
    let scratch = TestEnv::new();
    let mut cmd = scratch.cmd();
    cmd.env("SHAKE_TIMESTAMP", now).args(["meter", "--json"]).arg(file);
    json_stdout(cmd, "shake meter")
}

/// Drives the extension on `file` (then `then` renamed over it), with "now" fixed at `now` for
/// the meter's verdict.
fn drive(env: &TestEnv, file: &Path, model: &str, then: Option<&Path>, now: &str) -> Value {
    OmpOracle::ensure();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(dir.join("tests/omp-oracle/node_modules/.bin/bun"));
    cmd.arg(dir.join("tests/omp-oracle/extension-check.ts"))
        .arg(dir.join("integrations/omp/shake-meter.ts"))
        .arg(file)
        .args(["--model", model])
        .args(then.map(|t| vec!["--then".as_ref(), t.as_os_str()]).unwrap_or_default())
        .current_dir(env.cwd())
        .env("SHAKE_BIN", env!("CARGO_BIN_EXE_shake"))
        .env("SHAKE_DIR", env.store())
        .env("SHAKE_TIMESTAMP", now)
        .env("HOME", env.dir.path().join("home"))
        .env("OMP_SHAKE_METER_LOG", env.dir.path().join("meter.jsonl"));
    json_stdout(cmd, "extension-check.ts")
}

#[test]
fn omp_extension_shows_omps_figure_and_keeps_the_version_before_a_shake() {
    let env = TestEnv::new();
    let model = "anthropic/claude-opus-4-7";
    let opts = generate::Options { seed: 77, limit: Limit::Entries(400), model: model.into(), title: "ext".into() };
    let original = generate::generate(&opts);
    let path = env.write("s.jsonl", &original);
    // What OMP's /shake would do next, prepared beside the file.
    let file = OmpFile::read(&path).unwrap();
    let regions = reading(&file, &AGGRESSIVE, None, OmpTokenizer::new(None, false)).regions;
    let next = env.write("next.jsonl", shake::rewrite(&file, &regions, Some(1), 1_790_000_000_000).0);
    let want: Vec<u64> = OmpOracle::regions(&[(&path, Some(model), false), (&next, Some(model), false)], &[])
        .iter()
        .map(|r| r["freed"].as_u64().unwrap())
        .collect();
    assert!(want[0] > want[1], "the shake freed something: {want:?}");

    // Long after the last turn: the verdict is the cold cache's, as `shake meter` words it.
    let now = "2026-12-01T00:00:00.000Z";
    let verdicts = [&path, &next].map(|p| meter(p, now)["cache"]["verdict"].as_str().unwrap().to_string());
    let out = drive(&env, &path, model, Some(&next), now);
    assert_eq!(out["errors"], Value::Array(vec![]), "{out}");
    for event in ["session_start", "session_switch", "session_compact", "turn_end", "agent_end"] {
        assert!(out["events"].as_array().unwrap().iter().any(|e| e == event), "{event}: {out}");
    }
    let statuses: Vec<String> =
        out["statuses"].as_array().unwrap().iter().map(|s| s[1].as_str().unwrap().to_string()).collect();
    assert_eq!(verdicts, ["cache cold: free now", "cache cold: free now"]);
    assert_eq!(statuses, [0, 1].map(|i| format!("{} · {}", label(want[i]), verdicts[i])));

    let log = std::fs::read_to_string(env.dir.path().join("meter.jsonl")).unwrap();
    let tokens: Vec<u64> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .inspect(|r| assert_eq!(r["source"], "omp"))
        .map(|r| r["tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(tokens, want, "one log line per reading");

    // Both versions were imported by the refreshes: the one before the shake comes back.
    let p = path.to_str().unwrap();
    let versions = env.ok(&["sessions", "--versions", "--porcelain"]);
    assert_eq!(versions.lines().filter(|l| l.starts_with("version\t")).count(), 2, "{versions}");
    env.ok(&["restore", p, "--version", "1", "--force"]);
    assert_eq!(std::fs::read(&path).unwrap(), original);
}

#[test]
fn omp_extension_shows_the_verdict_of_the_priced_meter() {
    let env = TestEnv::new();
    let path = env.write("omp.jsonl", std::fs::read(crate::env::fixture_path("omp/omp-large-session.jsonl")).unwrap());
    let model = "anthropic/claude-sonnet-4-5";
    // Two minutes after its last turn (2025-11-21T02:14:02.980Z) the cache is warm: the verdict is
    // the priced meter's (`tests/cli/price.rs` checks its arithmetic on this file).
    let now = "2025-11-21T02:16:00.000Z";
    let m = meter(&path, now);
    let verdict = m["cache"]["verdict"].as_str().unwrap();
    assert!(verdict.starts_with("pays back in "), "{m}");
    let out = drive(&env, &path, model, None, now);
    assert_eq!(out["errors"], Value::Array(vec![]), "{out}");
    let statuses: Vec<&str> = out["statuses"].as_array().unwrap().iter().map(|s| s[1].as_str().unwrap()).collect();
    let want = format!("{} · {verdict}", label(m["tokens"].as_u64().unwrap()));
    assert_eq!(statuses, [want.as_str()]);
}
