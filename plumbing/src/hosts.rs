//! The registry: the hosts shake reads, above the seam (`host`) and the host modules. It is
//! the one place that lists them; `host` names none, and nothing outside a host's own module
//! and this file names a host (`tests/cli/seam.rs`).

use std::borrow::Cow;
use std::path::Path;

use crate::host::error::{HostError, Result};
use crate::host::{Host, HostKind, Refusal, Session, SessionFile};

/// pi's session generator: seeded, realistic sessions for tests and benchmarks.
pub use crate::pi::generate;

/// The hosts shake reads, in the order detection asks them: one line per host. A host whose
/// files another's would also accept goes first (oh-my-pi's are pi's format plus a title slot).
pub static HOSTS: &[&dyn Host] = &[
    &crate::omp::host::Omp,
    &crate::claude::host::Claude,
    #[cfg(feature = "fixture-host")]
    &toy::Toy,
    &crate::pi::Pi,
];

#[cfg(feature = "fixture-host")]
mod toy;

/// The host whose session a command without `REV` opens when it has one here, before the
/// others' newest (`crate::rev::default_choice`).
pub static FIRST_CHOICE: &dyn Host = &crate::pi::Pi;

/// The registered host named `name` (`--host`, a tail's host).
pub fn named(name: &str) -> Option<&'static dyn Host> {
    HOSTS.iter().copied().find(|h| h.kind().as_str() == name)
}

/// The names `--host` takes, the base formats first (the reverse of detection's order).
pub fn names() -> Vec<&'static str> {
    HOSTS.iter().rev().map(|h| h.kind().as_str()).collect()
}

/// A seeded session of host `kind` for tests and benchmarks (`shake generate-session`): pi's
/// (`cwd` its header's), or oh-my-pi's (`model` every assistant names).
pub fn generate_session(
    kind: Option<HostKind>,
    seed: u64,
    limit: generate::Limit,
    cwd: Option<String>,
    model: Option<String>,
) -> Result<Vec<u8>> {
    if kind == Some(crate::omp::host::KIND) {
        if cwd.is_some() {
            return Err(HostError::refused("--cwd is for pi sessions; an OMP session has its own"));
        }
        return Ok(crate::omp::generate::generate(&crate::omp::generate::Options {
            seed,
            limit,
            model: model.unwrap_or_else(|| "anthropic/claude-sonnet-4-5".into()),
            title: format!("generated session {seed}"),
        }));
    }
    if kind.is_some_and(|k| k != crate::pi::KIND) {
        return Err(HostError::refused("generate-session writes pi and oh-my-pi sessions"));
    }
    match model {
        Some(_) => Err(HostError::refused("--model is for OMP sessions (--host omp)")),
        None => Ok(generate::generate(&generate::Options { seed, limit, cwd })),
    }
}

/// Returns the registered host of `kind`, or the error a host not yet supported gives.
pub fn of(kind: HostKind) -> Result<&'static dyn Host> {
    HOSTS.iter().copied().find(|h| h.kind() == kind).ok_or_else(|| {
        HostError::refused(format!("{} sessions are not supported yet", kind.title()))
            .hint("see docs/architecture.md for the hosts shake reads")
    })
}

/// Finds the host of a file: the one `forced` names, else the first in [`HOSTS`] that accepts
/// it. A file no host accepts is an error naming the file and what it looked like.
pub fn detect(file: &SessionFile, forced: Option<HostKind>) -> Result<&'static dyn Host> {
    if let Some(kind) = forced {
        return of(kind);
    }
    // The refusal told is the last host's: pi, the base format the others extend, is asked last,
    // so a file that is nobody's is described as pi would describe it.
    let mut last: Option<Refusal> = None;
    for host in HOSTS {
        match host.accepts(file) {
            Ok(()) => return Ok(*host),
            Err(r) => last = Some(r),
        }
    }
    let mut refusal = last.unwrap_or(Refusal { line: 0, reason: "no host is registered".into() });
    // A byte order mark makes line 1 text to JSON.parse, whatever follows it: said there.
    if file.raw().starts_with("\u{feff}".as_bytes()) {
        refusal = Refusal {
            line: 1,
            reason: format!("line 1 starts with a byte order mark (U+FEFF), which JSON.parse refuses, so the hosts skip that line ({})", refusal.reason),
        };
    }
    let at = match refusal.line {
        0 => file.display().into_owned(),
        n => format!("{}:{n}", file.display()),
    };
    Err(HostError::refused(format!("{at}: {}; {}", refusal.reason, crate::host::looks_like(file.raw()))))
}

/// How much of a file [`of_head`] reads at most.
const HEAD_BYTES: u64 = 64 * 1024;

/// The host of the file at `path`, when it is one that `has` a capability of its own, as the
/// file's first line tells (read up to 64 KiB; or the host `forced` names): for a command that
/// takes another way on such a host before it reads the whole file (the meter's memo answers
/// from a stat). Detection's order is kept, asked no further than the last host that has it,
/// and the first line is what tells a host whose files another would also accept (oh-my-pi's
/// title slot or header). `None`: the file cannot be read, or its host is not one that has it
/// (the command's own read then finds the host, or says why not).
pub fn of_head(path: &Path, forced: Option<HostKind>, has: impl Fn(&dyn Host) -> bool) -> Option<&'static dyn Host> {
    use std::io::Read;
    if let Some(kind) = forced {
        return of(kind).ok().filter(|h| has(*h));
    }
    let last = HOSTS.iter().rposition(|h| has(*h))?;
    let mut head = Vec::new();
    std::fs::File::open(path).and_then(|f| f.take(HEAD_BYTES).read_to_end(&mut head)).ok()?;
    head.truncate(memchr::memchr(b'\n', &head).map_or(head.len(), |at| at + 1));
    let file = SessionFile::from_bytes(path.to_path_buf(), head);
    HOSTS[..=last].iter().copied().find(|h| h.accepts(&file).is_ok()).filter(|h| has(*h))
}

/// Reads a session file any host may be writing ([`SessionFile::read`]).
pub fn read(path: &Path) -> std::io::Result<SessionFile> {
    SessionFile::read(path, HOSTS)
}

/// Loads a session file with its host (see [`detect`]).
pub fn load<'a>(file: &'a SessionFile, forced: Option<HostKind>) -> Result<Session<'a>> {
    detect(file, forced)?.load(file)
}

/// A session file's path for people: relative to its host's sessions folder when inside one,
/// else with `~` for the home folder, else as given; quoted when odd ([`crate::output::path`]).
pub fn short_path(ctx: &crate::Context, file: &Path) -> String {
    let roots = HOSTS.iter().flat_map(|h| h.session_roots(ctx));
    if let Some(rest) = roots.into_iter().find_map(|root| file.strip_prefix(root).ok().map(|r| r.to_path_buf())) {
        return crate::output::path(&rest).into_owned();
    }
    match file.strip_prefix(&ctx.home).ok().filter(|_| ctx.home != Path::new("/")) {
        Some(rest) => match crate::output::path(rest) {
            Cow::Borrowed(plain) => format!("~/{plain}"),
            // The quotes go around the whole path.
            Cow::Owned(_) => crate::output::path(&Path::new("~").join(rest)).into_owned(),
        },
        None => crate::output::path(file).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    //! How the registered hosts' writers decide how a file is read (`host::file`'s module doc).

    use super::*;
    use crate::host::file::{read_settled_from, Stamp};
    use crate::host::View;

    /// OMP's title slot, 256 bytes with its `\n`, holding `title`.
    fn slot(title: &str) -> Vec<u8> {
        let mut line = format!(r#"{{"type":"title","title":"{title}","pad":""#).into_bytes();
        line.resize(HOSTS.iter().map(|h| h.overwrites_in_place()).max().unwrap() - 3, b' ');
        line.extend_from_slice(b"\"}\n");
        line
    }

    fn overwrite_at_start(path: &Path, bytes: &[u8], secs: u64) {
        use std::io::{Seek, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.seek(std::io::SeekFrom::Start(0)).unwrap();
        f.write_all(bytes).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
    }

    #[test]
    fn a_mapped_read_keeps_its_bytes_through_a_title_overwrite_a_rename_and_an_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let body = b"{\"type\":\"session\",\"version\":3}\n{\"a\":1}\n".repeat(200);
        let old = [slot("old"), body.clone()].concat();
        std::fs::write(&path, &old).unwrap();
        // Overwritten in place while read: seen, read again (the first page is copied before the
        // check, so the bytes of the second read are the new slot's, whole).
        let mut calls = 0;
        let read = read_settled_from(&path, HOSTS, 0, || {
            calls += 1;
            if calls == 1 {
                overwrite_at_start(&path, &slot("new"), 1);
            }
        })
        .unwrap();
        assert!(read.settled && read.bytes.is_mapped());
        let new = [slot("new"), body.clone()].concat();
        assert_eq!(&read.bytes[..], &new[..]);
        // After the read: an overwrite of the slot, an append, then a rename over the path are
        // not seen by the bytes read.
        let file = SessionFile::read_mapping_from(&path, HOSTS, 0).unwrap();
        assert!(file.bytes().is_mapped() && file.stamp().is_some());
        overwrite_at_start(&path, &slot("later"), 2);
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"{\"b\":2}\n").unwrap();
        let other = dir.path().join("t.jsonl");
        std::fs::write(&other, b"replaced\n").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(file.raw(), &new[..]);
        assert_eq!(file.lines.len(), 1 + 400);
        assert_ne!(file.stamp(), Stamp::of(&path).ok());
        use std::io::Write;
    }

    #[test]
    fn a_file_pi_would_migrate_is_copied_not_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        // pi rewrites a v1 or v2 file through a truncating open: never mapped.
        for (header, mapped) in [
            (r#"{"type":"session","id":"s"}"#, false),
            (r#"{"type":"session","id":"s","version":2}"#, false),
            (r#"{"type":"session","id":"s","version":"3"}"#, false),
            (r#"{"type":"session","id":"s","version":3}"#, true),
            (r#"{"type":"user","uuid":"u"}"#, true),
        ] {
            std::fs::write(&path, format!("\n{header}\n{{\"type\":\"message\"}}\n")).unwrap();
            let file = SessionFile::read_mapping_from(&path, HOSTS, 0).unwrap();
            assert_eq!(file.bytes().is_mapped(), mapped, "{header}");
        }
        // A head with no complete JSON line decides nothing: copied.
        std::fs::write(&path, "not json\n{\"type\":\"sess").unwrap();
        assert!(!SessionFile::read_mapping_from(&path, HOSTS, 0).unwrap().bytes().is_mapped());
    }

    /// Runs `check` on each fixture with branches, edits, a compaction and tool calls (pi,
    /// migrated v1, oh-my-pi), loaded, with its name.
    fn each_fixture(check: impl Fn(&str, &Session<'_>)) {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/");
        for name in
            ["pi-v3-branch-compaction-edit.jsonl", "pi-mono-large-session.v1.jsonl", "omp/omp-large-session.jsonl"]
        {
            let file = read(Path::new(&format!("{fixtures}{name}"))).unwrap();
            check(name, &load(&file, None).unwrap());
        }
    }

    /// A shared view is the view made alone, at every entry of files with
    /// branches, edits, a compaction and tool calls (pi, migrated v1, oh-my-pi), whatever the
    /// order the leaves are visited in.
    #[test]
    fn shared_views_are_the_views_made_alone() {
        each_fixture(|name, session| {
            let n = session.entries.len();
            let mut calls = 0;
            for leaf in (0..n).rev().step_by(61).chain((0..n).step_by(53)).chain([0, n / 2]) {
                let (alone, shared) = (View::at(session, Some(leaf)), View::shared(session, Some(leaf)));
                let (Ok(alone), Ok(shared)) = (alone, shared) else { continue };
                assert_eq!(format!("{:?}", alone.units), format!("{:?}", shared.units), "{name}: units at {leaf}");
                assert_eq!(format!("{:?}", alone.calls), format!("{:?}", shared.calls), "{name}: calls at {leaf}");
                calls += shared.calls.len();
            }
            assert!(calls > 0, "{name}: no tool call seen");
        });
    }

    /// The calls a view reads with each message (no block list made, no text decoded) are the
    /// tool calls of the content it gives the model, parsed whole, in context order: at every
    /// leaf of files with edits, a compaction and tool calls (pi, migrated v1, oh-my-pi).
    #[test]
    fn the_calls_are_those_of_the_content_seen() {
        use crate::host::BlockKind;
        use serde_json::value::RawValue;
        each_fixture(|name, session| {
            let n = session.entries.len();
            let mut seen = 0;
            for leaf in (0..n).step_by(37).chain([n - 1]) {
                let Ok(view) = View::at(session, Some(leaf)) else { continue };
                let of_content: Vec<String> = view
                    .context
                    .iter()
                    .filter_map(|&i| view.content(i))
                    .flat_map(|c| {
                        let calls: Vec<String> = c
                            .blocks()
                            .iter()
                            .filter_map(|b| match &b.kind {
                                BlockKind::ToolCall { id: Some(id), name, arguments } => {
                                    Some(format!("{id} {name} {:?}", arguments.map(RawValue::get)))
                                }
                                _ => None,
                            })
                            .collect();
                        calls
                    })
                    .collect();
                let read: Vec<String> = view
                    .calls
                    .iter()
                    .map(|c| format!("{} {} {:?}", c.id, c.name, c.arguments.map(RawValue::get)))
                    .collect();
                assert_eq!(read, of_content, "{name}: calls at {leaf}");
                seen += read.len();
            }
            assert!(seen > 0, "{name}: no tool call seen");
        });
    }

    /// Sessions and views of two files, each borrowed from its own local, compare through one
    /// pair of lifetimes (the host data behind them is a trait object, invariant in them, and
    /// may be read as it drops): the borrows meet when the files are read before the sessions
    /// and views that borrow them. A compile test: it builds or it does not.
    #[test]
    fn two_files_side_by_side() {
        fn same_context<'s, 'a>(a: &View<'s, 'a>, b: &View<'s, 'a>) -> bool {
            a.context.len() == b.context.len() && a.session.kind == b.session.kind
        }
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/");
        let read = |name: &str| read(Path::new(&format!("{fixtures}{name}"))).unwrap();
        let (first, second) = (read("pi-v3-branch-compaction-edit.jsonl"), read("omp/omp-large-session.jsonl"));
        let (a, b, c) = (load(&first, None).unwrap(), load(&first, None).unwrap(), load(&second, None).unwrap());
        let view = |s| View::at(s, s.default_leaf()).unwrap();
        let (va, vb, vc) = (view(&a), view(&b), view(&c));
        assert!(same_context(&va, &vb), "one file, twice");
        assert!(!same_context(&va, &vc), "two files");
    }
}
