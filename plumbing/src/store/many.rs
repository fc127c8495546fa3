//! Importing many session files in one batch on every core: worker threads read, check, hash
//! and parse the files (`import::prepare`: reads only) while this thread adds what each one
//! brings to the batch's pack, in the order the files were given. The store's bytes are the
//! same whatever the number of workers or the timing of their threads.

use std::path::PathBuf;
use std::sync::mpsc;

use crate::host::HostKind;

use super::import::{prepare, ImportError, ImportReport, Prepared};
use super::{Result, Store};

/// No more workers than this, whatever the machine: beyond it this thread, which writes the
/// pack, is the bottleneck.
const MAX_WORKERS: usize = 4;

impl Store {
    /// Imports many files into one pack under one lock. A file that cannot be read gets an
    /// error of its own; the others are still imported. `progress` is called after each file.
    pub fn import_files(
        &mut self,
        paths: &[PathBuf],
        forced: Option<HostKind>,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Result<ImportReport, ImportError>>> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.import_with(paths, forced, cores.min(MAX_WORKERS), progress)
    }

    /// [`Store::import_files`] with `workers` threads preparing the files (none below 2: this
    /// thread prepares each file itself).
    fn import_with(
        &mut self,
        paths: &[PathBuf],
        forced: Option<HostKind>,
        workers: usize,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Vec<Result<ImportReport, ImportError>>> {
        let mut batch = self.batch()?;
        let (store, pending) = batch.parts();
        let workers = workers.min(paths.len());
        let mut reports = Vec::with_capacity(paths.len());
        let mut add = |i: usize, prepared: Result<Prepared, ImportError>| {
            reports.push(prepared.and_then(|p| p.apply(store, pending)));
            progress(i + 1);
        };
        if workers < 2 {
            paths.iter().enumerate().for_each(|(i, path)| add(i, prepare(store, path, forced, None)));
        } else {
            std::thread::scope(|scope| {
                // Worker `w` prepares files w, w + workers, …, and sends them in bunches (one
                // hand-over per bunch, not per file), so the files can be taken in order here.
                let mut queues: Vec<(mpsc::Receiver<_>, std::vec::IntoIter<_>)> = (0..workers)
                    .map(|w| {
                        let (send, receive) = mpsc::sync_channel(1);
                        let mine = paths.iter().skip(w).step_by(workers);
                        scope.spawn(move || work(store, mine, forced, send));
                        (receive, Vec::new().into_iter())
                    })
                    .collect();
                for i in 0..paths.len() {
                    let (receive, bunch) = &mut queues[i % workers];
                    let next = match bunch.next() {
                        Some(prepared) => Some(prepared),
                        // A worker stops early only by panicking; the scope then panics with it.
                        None => receive.recv().ok().and_then(|b| {
                            *bunch = b.into_iter();
                            bunch.next()
                        }),
                    };
                    let Some(prepared) = next else { break };
                    add(i, prepared);
                }
            });
        }
        batch.commit()?;
        Ok(reports)
    }
}

/// A bunch is sent once it holds this many bytes of files (or [`BUNCH_FILES`] files): files
/// that bring new bytes mostly go one by one (this thread can start on each at once, and a
/// bunch of files waiting in memory holds their bytes), unchanged ones together.
const BUNCH_BYTES: usize = 64 << 10;
/// At most this many files to a bunch (unchanged files hold no bytes); a few in tests, so that
/// a worker sends several.
const BUNCH_FILES: usize = if cfg!(test) { 3 } else { 64 };

/// A worker: prepares its files in turn and sends them on in bunches, until they are done or
/// nobody listens any more.
fn work<'p>(
    store: &Store,
    paths: impl Iterator<Item = &'p PathBuf>,
    forced: Option<HostKind>,
    send: mpsc::SyncSender<Vec<Result<Prepared, ImportError>>>,
) {
    let mut bunch = Vec::new();
    let mut held = 0;
    for path in paths {
        let prepared = prepare(store, path, forced, None);
        held += prepared.as_ref().map_or(0, Prepared::held);
        bunch.push(prepared);
        if held >= BUNCH_BYTES || bunch.len() >= BUNCH_FILES {
            if send.send(std::mem::take(&mut bunch)).is_err() {
                return;
            }
            held = 0;
        }
    }
    if !bunch.is_empty() {
        let _ = send.send(bunch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hosts::generate::{generate, Limit, Options};
    use std::io::Write;
    use std::path::Path;

    /// Every file of `dir`, by name, with its bytes; a packed file's times as version ids only
    /// (their milliseconds are the clock's).
    fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
            let entry = entry.unwrap();
            if !entry.file_type().is_file() {
                continue;
            }
            let name = entry.path().strip_prefix(dir).unwrap().display().to_string();
            if name.starts_with("packed/") {
                let packed = crate::store::packed::PackedFile::open(entry.path()).unwrap();
                for (record, bytes) in packed.records() {
                    let bytes = match record.starts_with("times/") {
                        true => bytes.split(|&b| b == b' ').next().unwrap().to_vec(),
                        false => bytes.to_vec(),
                    };
                    files.push((format!("{name}:{record}"), bytes));
                }
            } else {
                files.push((name, std::fs::read(entry.path()).unwrap()));
            }
        }
        files
    }

    /// However many threads prepare the files and however they are timed, an import writes the
    /// same store, byte for byte, and reports the same: sessions, a copy of one, a file that
    /// grew since an earlier import (read from its committed prefix on), odd lines, a partial
    /// last line, a folder and a missing file (errors of their own).
    #[test]
    fn the_store_is_the_same_whatever_the_workers() {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path().join("files");
        std::fs::create_dir(&files).unwrap();
        let mut paths = Vec::new();
        for seed in 0..14 {
            let path = files.join(format!("{seed}.jsonl"));
            std::fs::write(&path, generate(&Options { seed, limit: Limit::Entries(20 + seed * 9), cwd: None }))
                .unwrap();
            paths.push(path);
        }
        let copy = files.join("copy.jsonl");
        std::fs::copy(&paths[3], &copy).unwrap();
        let odd = files.join("odd.jsonl");
        let header = r#"{"type":"session","version":3,"id":"odd","timestamp":"t","cwd":"/"}"#;
        std::fs::write(
            &odd,
            format!("{header}\nnot json\n{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}}\n{{\"tor"),
        )
        .unwrap();
        let grown = files.join("grown.jsonl");
        std::fs::write(&grown, generate(&Options { seed: 99, limit: Limit::Entries(40), cwd: None })).unwrap();
        paths.splice(5..5, [copy, odd, grown.clone(), files.clone(), files.join("missing.jsonl")]);
        // Old mtimes: none of these files was modified moments ago (`remembered_mtime`).
        let age = |path: &Path| {
            let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
            std::fs::File::options().append(true).open(path).unwrap().set_modified(old).unwrap();
        };
        let stores: Vec<_> = [1, 2, 5].iter().map(|w| dir.path().join(format!("store-{w}"))).collect();
        for store in &stores {
            Store::open_dir(store).unwrap().import_file(&grown, None).unwrap();
        }
        let tail = generate(&Options { seed: 7, limit: Limit::Entries(10), cwd: None });
        let tail = tail.split_inclusive(|&b| b == b'\n').skip(1).flatten().copied().collect::<Vec<u8>>();
        std::fs::File::options().append(true).open(&grown).unwrap().write_all(&tail).unwrap();
        paths.iter().filter(|p| p.is_file()).for_each(|p| age(p));

        let mut seen = Vec::new();
        for (store, workers) in stores.iter().zip([1, 2, 5]) {
            let mut calls = 0;
            let reports = Store::open_dir(store)
                .unwrap()
                .import_with(&paths, None, workers, &mut |done| {
                    calls += 1;
                    assert_eq!(done, calls);
                })
                .unwrap();
            assert_eq!(calls, paths.len());
            let reports: Vec<String> = reports
                .iter()
                .map(|r| match r {
                    Ok(r) => format!("{r:?}"),
                    Err(e) => format!("error: {e}"),
                })
                .collect();
            seen.push((reports, contents(store)));
        }
        let (reports, store) = &seen[0];
        assert_eq!(reports.len(), paths.len());
        assert!(reports[5].contains("new_objects: 0"), "a copy adds nothing but its state: {}", reports[5]);
        assert!(reports[6].contains("malformed JSON") && reports[6].contains("partial last line"), "{}", reports[6]);
        assert!(reports[7].contains(&format!("bytes: {}", tail.len())), "only the tail is read: {}", reports[7]);
        assert!(reports[8].starts_with("error: ") && reports[8].contains("not a file"), "{}", reports[8]);
        assert!(reports[9].starts_with("error: ") && reports[9].contains("missing.jsonl"), "{}", reports[9]);
        assert!(
            store.iter().any(|(name, _)| name.ends_with(".pack")) && store.iter().any(|(n, _)| n.contains(":times/"))
        );
        for (other, workers) in seen[1..].iter().zip([2, 5]) {
            assert_eq!(&other.0, reports, "reports with {workers} workers");
            assert!(other.1 == *store, "the store with {workers} workers differs");
        }
    }
}
