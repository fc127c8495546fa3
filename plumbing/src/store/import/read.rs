//! How an import reads a file's bytes: whole (settled, its host detected), only after the
//! committed prefix (the prefix proven as it streams by), from the caller's read, or after this
//! process's own append (the old bytes trusted by what the append saw).

use std::path::Path;

use crate::durable::FileError;
use crate::host::file::{Bytes, Stamp};
use crate::host::{Host, HostKind, SessionFile};
use crate::proof::{Proof, Prover};

use super::{stat, ImportError, OwnAppend};
use crate::store::state::FileState;

/// What the caller of an import knows of the file already.
#[derive(Clone, Copy)]
pub(super) enum Known<'a> {
    Nothing,
    /// Its bytes, read by the caller.
    Read(&'a SessionFile),
    /// An append the caller made to it.
    Appended(&'a OwnAppend<'a>),
}

impl<'a> Known<'a> {
    pub(super) fn file(self) -> Option<&'a SessionFile> {
        match self {
            Known::Read(file) => Some(file),
            _ => None,
        }
    }
}

/// A file's bytes as an import reads them: from byte `origin` on (0: the whole file), with the
/// proof of the bytes before `origin` still open and the whole file's proof.
pub(super) struct Read<'a> {
    pub(super) host: &'static dyn Host,
    pub(super) file: ReadFile<'a>,
    pub(super) origin: usize,
    pub(super) prover: Prover,
    pub(super) proof: Proof,
}

/// The bytes read with their lines: the caller's read of the whole file, or this import's.
pub(super) enum ReadFile<'a> {
    Known(&'a SessionFile),
    Read(SessionFile),
}

impl std::ops::Deref for ReadFile<'_> {
    type Target = SessionFile;
    fn deref(&self) -> &SessionFile {
        match self {
            ReadFile::Known(file) => file,
            ReadFile::Read(file) => file,
        }
    }
}

/// Reads the whole file (until the path shows the same file before and after: a version is
/// never a mix of two writes, an OMP rewrite mid-read) and finds its host. The bytes of `known`
/// stand for the read when the path still shows the file they were read from (the command
/// that imports has read it: it is then held once, not twice).
pub(super) fn read_whole<'a>(
    path: &Path,
    forced: Option<HostKind>,
    known: Option<&'a SessionFile>,
) -> Result<Read<'a>, ImportError> {
    let now = known.and_then(SessionFile::stamp).and_then(|_| Stamp::of(path).ok());
    let file = match known.filter(|k| now.is_some() && k.stamp() == now) {
        Some(known) => ReadFile::Known(known),
        None => ReadFile::Read(crate::hosts::read(path).map_err(FileError::at(path, "read"))?),
    };
    let host = crate::hosts::detect(&file, forced)?;
    let proof = file.proof().clone();
    Ok(Read { host, file, origin: 0, prover: Prover::default(), proof })
}

/// How much of the committed prefix is kept to find the file's host (its header, its first
/// conversation row).
const HEAD_BYTES: usize = 1 << 20;

/// Reads only what follows the committed prefix of `head`, streaming the prefix through its
/// proof without holding it. `None` (read the whole file instead) when the prefix changed, the
/// file changed while read (its size and mtime are not `stat`'s any more), its first MiB does
/// not decide its host, or the state is of format 2 (its digest is checked on a whole read).
pub(super) fn read_tail(
    path: &Path,
    head: &FileState,
    stat_before: (u64, u64),
    forced: Option<HostKind>,
) -> Result<Option<Read<'static>>, ImportError> {
    use std::io::Read as _;
    let (Ok(committed), Some(proof)) = (usize::try_from(head.committed), head.prefix.proof()) else {
        return Ok(None);
    };
    if committed == 0 || head.committed > stat_before.0 || proof.len != head.committed {
        return Ok(None);
    }
    let io = FileError::at(path, "read");
    let mut file = std::fs::File::open(path).map_err(&io)?;
    let mut prover = Prover::default();
    let mut first = Vec::new();
    let mut buf = vec![0; HEAD_BYTES.min(committed)];
    let mut left = committed;
    while left > 0 {
        let n = file.read(&mut buf[..left.min(HEAD_BYTES)]).map_err(&io)?;
        if n == 0 {
            return Ok(None); // shorter than `stat` said: it changed
        }
        prover.update(&buf[..n]);
        if first.len() < HEAD_BYTES {
            first.extend_from_slice(&buf[..n.min(HEAD_BYTES - first.len())]);
        }
        left -= n;
    }
    if prover.proof() != *proof {
        return Ok(None);
    }
    let mut data = Vec::new();
    file.read_to_end(&mut data).map_err(&io)?;
    if stat(path)? != stat_before || (committed + data.len()) as u64 != stat_before.0 {
        return Ok(None);
    }
    let Some(host) = head_host(path, first, forced) else { return Ok(None) };
    Ok(Some(tail_read(path, host, data.into(), committed, prover)))
}

/// Tells whether the path still shows the file of `stamp` (same inode, size and mtime).
pub(super) fn still(path: &Path, stamp: Stamp) -> bool {
    Stamp::of(path).ok() == Some(stamp)
}

/// [`read_tail`] of a file the caller has read whole (`file`, still the one at its path): the
/// committed prefix is proven from those bytes instead of read again, and the file remembers
/// the proof ([`SessionFile::proven`]: an append the command makes next carries it to the import
/// after it, [`read_own`]). `None` (read the whole file instead) when the prefix changed or the
/// state is of format 2.
pub(super) fn read_known<'a>(
    head: &FileState,
    file: &'a SessionFile,
    forced: Option<HostKind>,
) -> Result<Option<Read<'a>>, ImportError> {
    let (Ok(committed), Some(proof)) = (usize::try_from(head.committed), head.prefix.proof()) else {
        return Ok(None);
    };
    let bytes = file.raw();
    if committed == 0 || committed > bytes.len() || proof.len != head.committed {
        return Ok(None);
    }
    let mut prover = Prover::default();
    prover.update(&bytes[..committed]);
    if prover.proof() != *proof {
        return Ok(None);
    }
    prover.update(&bytes[committed..]);
    let whole = prover.proof();
    file.remember_proof(whole.clone());
    let host = crate::hosts::detect(file, forced)?;
    Ok(Some(Read { host, file: ReadFile::Known(file), origin: 0, prover: Prover::default(), proof: whole }))
}

/// The read of the bytes after `origin`, `prover` holding the proof of those before.
fn tail_read(path: &Path, host: &'static dyn Host, data: Bytes, origin: usize, prover: Prover) -> Read<'static> {
    let mut whole = prover.clone();
    whole.update(&data);
    let file = ReadFile::Read(SessionFile::from_shared(path.to_path_buf(), data));
    Read { host, file, origin, prover, proof: whole.proof() }
}

/// The host of a file from its first bytes' complete lines (pi's header, OMP's first line, Claude
/// Code's first conversation row); `None` when they decide none (a head of blank lines).
fn head_host(path: &Path, mut first: Vec<u8>, forced: Option<HostKind>) -> Option<&'static dyn Host> {
    first.truncate(memchr::memrchr(b'\n', &first).map_or(0, |i| i + 1));
    if first.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    crate::hosts::detect(&SessionFile::from_bytes(path.to_path_buf(), first), forced).ok()
}

/// The read after this process's own append (`appended`), trusting the old bytes without
/// hashing them whole; `None` (then [`read_tail`]) unless all of this holds:
///
/// - the import state describes the file exactly as the append found it, under its lock, on
///   the descriptor it wrote (same size, same mtime, the state's mtime a real one: an import
///   within a second of a write remembers 0) and its committed prefix is the whole of it: the
///   same identity (size and mtime) the store trusts to call a file unchanged with one `stat`;
///   or, when the state's mtime is racy (0), the command proved the bytes it read to be the
///   state's by their content, and the append found the file at the very stamp of that read
///   ([`crate::append::Appended::proven`]);
/// - the path shows the file the append left (same inode, size and mtime) before and after
///   the bytes are read, so no writer came in between (pi does not rewrite in place, and a
///   rename over the file changes the inode);
/// - the last 1 MiB block of the old bytes, re-read, still gives the state's proof (a writer
///   that changed bytes just before the end is seen);
/// - the bytes after the old ones, read back, are the bytes the append wrote.
///
/// The new state's mtime is our write's, less than a second old, so it is remembered as 0: the
/// next import proves the whole file by its content again. What this skips is the second pass
/// over the old bytes within one command, which read and checked them already.
pub(super) fn read_own(
    path: &Path,
    head: &FileState,
    own: &OwnAppend<'_>,
    forced: Option<HostKind>,
) -> Result<Option<Read<'static>>, ImportError> {
    let appended = own.append;
    use std::os::unix::fs::FileExt;
    let Some(proof) = head.prefix.proof() else { return Ok(None) };
    let described = match head.mtime_ns {
        // Racy: the state has no mtime, but the command may have proven the bytes at the stamp.
        0 => head.size == appended.before.len && appended.proven.as_ref() == Some(proof),
        mtime => (head.size, mtime) == (appended.before.len, appended.before.mtime_ns()),
    };
    let trusted = appended.foreign.is_none()
        && described
        && head.committed == head.size
        && proof.len == head.committed
        && appended.after.len > head.size;
    let (Ok(committed), Ok(len)) = (usize::try_from(head.committed), usize::try_from(appended.after.len)) else {
        return Ok(None);
    };
    if !trusted || Stamp::of(path).ok() != Some(appended.after) {
        return Ok(None);
    }
    if len - committed != own.bytes.len() {
        return Ok(None);
    }
    let io = FileError::at(path, "read");
    let file = std::fs::File::open(path).map_err(&io)?;
    let mut first = vec![0; HEAD_BYTES.min(committed)];
    let resume_at = proof.resume_at() as usize;
    let mut block = vec![0; committed - resume_at];
    if file.read_exact_at(&mut first, 0).is_err()
        || file.read_exact_at(&mut block, resume_at as u64).is_err()
        || !crate::append::reads_back(&file, committed as u64, own.bytes)
    {
        return Ok(None);
    }
    if Stamp::of(path).ok() != Some(appended.after) {
        return Ok(None);
    }
    let mut prover = proof.prover();
    prover.update(&block);
    if prover.proof() != *proof {
        return Ok(None);
    }
    let Some(host) = head_host(path, first, forced) else { return Ok(None) };
    Ok(Some(tail_read(path, host, own.bytes.clone(), committed, prover)))
}
