//! Times shake's reading of a Claude Code transcript: read, Claude Code's loader, and the
//! request messages it would send (docs/claude-code.md, "Speed").
//!
//!   cargo run --release -p shake-plumbing --example claude_project -- T.jsonl [RUNS] [--json]
//!
//! Prints the best of RUNS (default 10) for each step; `--json` prints the messages instead.

use std::path::Path;
use std::time::Instant;

use shake_plumbing::claude::{self, LoadOptions, Transcript};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = Path::new(args.first().expect("usage: claude_project T.jsonl [RUNS] [--json]"));
    if args.iter().any(|a| a == "--json") {
        let t = Transcript::read(path).expect("read");
        let chain = claude::load(&t, LoadOptions::from_env());
        println!("{}", serde_json::json!({ "messages": claude::project(&t, &chain) }));
        return;
    }
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(10);
    let (mut read, mut load, mut project) = (f64::MAX, f64::MAX, f64::MAX);
    let mut messages = 0;
    for _ in 0..runs {
        let t0 = Instant::now();
        let t = Transcript::read(path).expect("read");
        let t1 = Instant::now();
        let chain = claude::load(&t, LoadOptions::from_env());
        let t2 = Instant::now();
        messages = claude::project(&t, &chain).len();
        let t3 = Instant::now();
        read = read.min((t1 - t0).as_secs_f64());
        load = load.min((t2 - t1).as_secs_f64());
        project = project.min((t3 - t2).as_secs_f64());
    }
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!(
        "{} bytes, {messages} messages; best of {runs}: read+parse {:.1} ms, load {:.1} ms, project {:.1} ms",
        bytes,
        read * 1e3,
        load * 1e3,
        project * 1e3
    );
}
