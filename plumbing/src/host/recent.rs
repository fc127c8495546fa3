//! "The most recent session of a folder", as each host decides it for its `--continue`: the
//! newest modification time first, but the hosts differ in how finely they compare times and in
//! what breaks a tie (measured against each host's own code; `docs/revisions.md`, "Choosing the
//! host"). One ordering here, the differences as a [`Recency`] each host passes.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// How finely a host compares modification times.
#[derive(Clone, Copy, Debug)]
pub enum Precision {
    /// Node's `stats.mtimeMs`: `seconds * 1e3 + nanoseconds / 1e6` as a double, so two files a
    /// fraction of a millisecond apart are not tied.
    NodeMtimeMs,
    /// Whole milliseconds, as a JavaScript `Date` holds them (`stats.mtime.getTime()`).
    Millis,
}

/// What a host compares, newest first, between files of equal modification time.
#[derive(Clone, Copy)]
pub enum Created {
    /// Nothing: the names decide.
    Nothing,
    /// The file's birth time, in whole milliseconds (a file without one sorts last).
    Birth,
    /// A creation stamp the host reads from the file (Unix milliseconds; `None` sorts last).
    Stamp(fn(&Path) -> Option<i64>),
}

/// Which name wins when everything else is equal.
#[derive(Clone, Copy, Debug)]
pub enum Name {
    /// The smallest, by bytes (Node's `readdirSync` lists names sorted, and its sort is stable).
    Smallest,
    /// The greatest, by bytes.
    Greatest,
}

/// A host's rule for "the most recent session file": times compared at `precision`, newest
/// first; on a tie, `created` newest first; then `name`.
#[derive(Clone, Copy)]
pub struct Recency {
    /// How finely modification times are compared.
    pub precision: Precision,
    /// What breaks a tie of modification times.
    pub created: Created,
    /// Which name wins when the rest is equal.
    pub name: Name,
}

/// `files` in the order the host tries them for `--continue`: the first it accepts is the one it
/// opens. A file whose metadata cannot be read is left out.
pub fn newest_first(files: Vec<PathBuf>, rule: Recency) -> Vec<PathBuf> {
    let mut found: Vec<(f64, PathBuf, std::fs::Metadata)> = files
        .into_iter()
        .filter_map(|path| {
            let meta = path.metadata().ok()?;
            Some((time(meta.modified().ok()?, rule.precision), path, meta))
        })
        .collect();
    // Newest first; ties keep the name order, which `created` then refines within each run.
    found.sort_by(|a, b| {
        b.0.total_cmp(&a.0).then_with(|| match rule.name {
            Name::Smallest => a.1.cmp(&b.1),
            Name::Greatest => b.1.cmp(&a.1),
        })
    });
    let mut out = Vec::with_capacity(found.len());
    for run in found.chunk_by(|a, b| a.0 == b.0) {
        let mut run: Vec<(Option<i64>, &PathBuf)> = match rule.created {
            // Read only where there is a tie: a stamp costs a file read.
            _ if run.len() == 1 => vec![(None, &run[0].1)],
            Created::Nothing => run.iter().map(|(_, p, _)| (None, p)).collect(),
            Created::Birth => {
                run.iter().map(|(_, p, m)| (m.created().ok().map(|t| time(t, Precision::Millis) as i64), p)).collect()
            }
            Created::Stamp(stamp) => run.iter().map(|(_, p, _)| (stamp(p), p)).collect(),
        };
        // Stable: equal stamps keep the name order. `None` is less than any `Some`: last.
        run.sort_by_key(|r| std::cmp::Reverse(r.0));
        out.extend(run.into_iter().map(|(_, p)| p.clone()));
    }
    out
}

/// A time as the host compares it, in (fractional) milliseconds since the epoch (a time before
/// the epoch counts as the epoch: no session file has one).
fn time(t: SystemTime, precision: Precision) -> f64 {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as f64 * 1e3;
    match precision {
        Precision::NodeMtimeMs => secs + f64::from(d.subsec_nanos()) / 1e6,
        Precision::Millis => secs + f64::from(d.subsec_millis()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three files with the given mtime offsets (nanoseconds) from one instant, created in
    /// order a, b, c; returns the names in the rule's order.
    fn order(offsets: [u64; 3], rule: Recency) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let base = UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
        let mut files = Vec::new();
        for (name, nanos) in ["a", "b", "c"].into_iter().zip(offsets) {
            let path = dir.path().join(format!("{name}.jsonl"));
            std::fs::write(&path, name).unwrap();
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(base + std::time::Duration::from_nanos(nanos)).unwrap();
            files.push(path);
            // Birth times come from a coarse clock (a few milliseconds a tick).
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        files.reverse();
        newest_first(files, rule).iter().map(|p| p.file_stem().unwrap().to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn ties_break_by_the_rule_and_precision_decides_what_is_a_tie() {
        let pi = Recency { precision: Precision::NodeMtimeMs, created: Created::Nothing, name: Name::Smallest };
        let greatest = Recency { precision: Precision::Millis, created: Created::Nothing, name: Name::Greatest };
        let birth = Recency { precision: Precision::Millis, created: Created::Birth, name: Name::Smallest };
        assert_eq!(order([0, 0, 0], pi), ["a", "b", "c"]);
        assert_eq!(order([0, 0, 0], greatest), ["c", "b", "a"]);
        // Half a millisecond apart: a tie in whole milliseconds, not in Node's mtimeMs.
        assert_eq!(order([500_000, 0, 0], pi), ["a", "b", "c"]);
        assert_eq!(order([0, 0, 500_000], pi), ["c", "a", "b"]);
        assert_eq!(order([0, 0, 500_000], greatest), ["c", "b", "a"]);
        assert_eq!(order([500_000, 0, 0], greatest), ["c", "b", "a"]);
        assert_eq!(order([0, 2_000_000, 0], greatest), ["b", "c", "a"]);
        // The newest birth first where the filesystem records one (created a, b, c, 25 ms apart).
        if std::env::temp_dir().metadata().and_then(|m| m.created()).is_ok() {
            assert_eq!(order([0, 0, 0], birth), ["c", "b", "a"]);
            assert_eq!(order([2_000_000, 0, 0], birth), ["a", "c", "b"]);
        }
        let stamp = Recency {
            precision: Precision::Millis,
            created: Created::Stamp(|p| (p.file_stem()? == "b").then_some(1)),
            name: Name::Greatest,
        };
        assert_eq!(order([0, 0, 0], stamp), ["b", "c", "a"]);
    }
}
