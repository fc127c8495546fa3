//! Prints, for each file, the least time over `--runs` runs (default 5, one thread) of two passes
//! over its lines: serde_json checking each line (`IgnoredAny`: nothing built) and parsing each
//! into a `Value`. `--pass check` or `--pass value` runs one pass only (to count its
//! instructions under valgrind with `--runs 1`).
//!
//!     cargo run --release --manifest-path docs/bench/floor/Cargo.toml -- [--runs N] [--pass P] FILE...

use std::time::{Duration, Instant};

use serde::de::IgnoredAny;

fn least(runs: usize, mut pass: impl FnMut() -> usize) -> (Duration, usize) {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            let n = pass();
            (t.elapsed(), n)
        })
        .min()
        .expect("at least one run")
}

fn main() {
    let (mut runs, mut only, mut paths) = (5, None, Vec::new());
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).filter(|&n| n > 0).expect("--runs N"),
            "--pass" => only = Some(args.next().filter(|p| p == "check" || p == "value").expect("--pass check|value")),
            _ => paths.push(arg),
        }
    }
    for path in paths {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: a benchmark input nobody writes while it runs.
        let bytes = unsafe { memmap2::Mmap::map(&file) }.unwrap_or_else(|e| panic!("{path}: {e}"));
        let lines = || bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty());
        let wanted = |pass: &str| only.as_deref().is_none_or(|o| o == pass);
        let mut report = format!("{path}: {} bytes", bytes.len());
        if wanted("check") {
            let (t, n) = least(runs, || lines().filter(|l| serde_json::from_slice::<IgnoredAny>(l).is_ok()).count());
            report += &format!(", {n} valid lines: check {:.1} ms", ms(t));
        }
        if wanted("value") {
            let (t, _) =
                least(runs, || lines().filter(|l| serde_json::from_slice::<serde_json::Value>(l).is_ok()).count());
            report += &format!(", Value {:.1} ms", ms(t));
        }
        println!("{report}");
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
