//! `shake meter --log FILE`: one JSON line per reading whose figure changed, with the time.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde_json::Value;
use shake_plumbing::durable::FileError;
use shake_plumbing::Result;

/// Appends a reading's JSON to the meter log, with the time, unless the figure is the last one's.
pub(crate) fn append_log(path: &Path, mut line: Value) -> Result<()> {
    if last_logged(path).is_some_and(|last| same_figure(&last, &line)) {
        return Ok(());
    }
    line["time"] = Value::from(shake_plumbing::time::iso(shake_plumbing::time::now_millis()));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(FileError::at(path, "open the meter log"))?;
    file.write_all(format!("{line}\n").as_bytes())?;
    Ok(())
}

fn same_figure(a: &Value, b: &Value) -> bool {
    ["tokens", "toolResults", "blocks", "tokenizer", "profile", "session", "leafId"].iter().all(|k| a[k] == b[k])
}

/// The last line of the log, when it is JSON (reads at most the last 64 KiB).
fn last_logged(path: &Path) -> Option<Value> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(64 << 10))).ok()?;
    let mut tail = String::new();
    file.read_to_string(&mut tail).ok()?;
    serde_json::from_str(tail.trim_end().rsplit('\n').next()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::tests::reading;

    #[test]
    fn the_log_gets_a_line_only_when_the_figure_changes() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("meter.jsonl");
        append_log(&log, reading(12_000).json()).unwrap();
        append_log(&log, reading(12_000).json()).unwrap();
        append_log(&log, reading(500).json()).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        let tokens: Vec<u64> =
            text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["tokens"].as_u64().unwrap()).collect();
        assert_eq!(tokens, [12_000, 500]);
        assert!(text.lines().all(|l| l.contains("\"time\":\"")));
    }
}
