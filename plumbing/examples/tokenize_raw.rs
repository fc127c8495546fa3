//! Benchmark limit for `shake meter` (docs/bench/notebook.md, "Meter"): tiktoken's raw time on exactly
//! the text the meter must count at a session's leaf, on one thread and on every core.
//!
//!     cargo run --release -p shake-plumbing --example tokenize_raw -- SESSION.jsonl [o200k|cl100k]

use std::time::Instant;

use shake_plumbing::host::View;
use shake_plumbing::tokens::context_texts;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: tokenize_raw SESSION.jsonl [o200k|cl100k]")?;
    let name = args.next().unwrap_or_else(|| "o200k".into());
    let file = shake_plumbing::hosts::read(path.as_ref())?;
    let session = shake_plumbing::hosts::load(&file, None)?;
    let projection = View::at(&session, session.default_leaf())?;
    let texts = context_texts(&projection);
    let bytes: usize = texts.iter().map(String::len).sum();

    let t = Instant::now();
    let bpe = match name.as_str() {
        "cl100k" => tiktoken_rs::cl100k_base()?,
        _ => tiktoken_rs::o200k_base()?,
    };
    let build = t.elapsed();

    let t = Instant::now();
    let one: usize = texts.iter().map(|s| bpe.count_ordinary(s)).sum();
    let single = t.elapsed();

    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let t = Instant::now();
    let all: usize = std::thread::scope(|s| {
        let chunk = texts.len().div_ceil(threads).max(1);
        let handles: Vec<_> = texts
            .chunks(chunk)
            .map(|part| s.spawn(|| part.iter().map(|t| bpe.count_ordinary(t)).sum::<usize>()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
    });
    let parallel = t.elapsed();
    assert_eq!(one, all);

    let mb = bytes as f64 / 1e6;
    println!("{name}: {} pieces, {mb:.1} MB of text, {one} tokens", texts.len());
    println!("  build tables   {:>8.3} s", build.as_secs_f64());
    println!("  1 thread       {:>8.3} s  ({:.1} MB/s)", single.as_secs_f64(), mb / single.as_secs_f64());
    println!("  {threads} threads      {:>8.3} s  ({:.1} MB/s)", parallel.as_secs_f64(), mb / parallel.as_secs_f64());
    Ok(())
}
