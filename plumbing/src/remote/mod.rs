//! Remotes (`docs/remotes.md`): the store's packs and each machine's sessions on an object store
//! (S3 and S3-compatible services, Google Cloud Storage, Azure, a folder), shared by machines.
//!
//! On the remote, under its URL's prefix:
//!
//! ```text
//! packs/pack-<sum>.pack   a pack, under its content name (as in a store), written once
//! packs/pack-<sum>.idx    its index, written after the pack: a pack counts once both are there
//! machines/<id>.json      one machine's manifest (its packs and sessions), written by it alone,
//!                         last, after every pack it names
//! ```
//!
//! Nothing depends on a conditional write: a name is its content, or has one writer. A reader
//! takes the union of the manifests.
//!
//! In the store: `remotes` (each remote's name and URL, never a credential), `machine` (this
//! store's stable id and readable name), `remote/<machine>/…` (the files of the sessions fetched
//! from other machines, rebuilt from their versions, each with its origin's import state and
//! history, so every read command opens them as `<machine>/<session>`), and
//! `cache/remote-idx/` (the indexes of the remotes' packs: derived).

pub mod check;
pub mod error;
pub mod fetch;
pub mod manifest;
pub mod push;
pub mod transport;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::durable::FileError;
use crate::id::ObjectId;
use crate::store::{Store, StoreError, WriteLock};
use crate::Context;
pub use error::{RemoteError, Result};
pub use transport::Transport;

/// The file listing the store's remotes.
const CONFIG: &str = "remotes";
/// The file holding this store's machine id and name.
const MACHINE: &str = "machine";
/// The folder of the fetched sessions' files, one folder per machine.
pub const MIRRORS: &str = "remote";
/// Inside a machine's folder: the id of the machine the folder is for.
const MIRROR_ID: &str = ".machine";
/// The fault tests' pause (ms) in a push, after its pack and before its index (`fault.rs`).
pub const PAUSE_INDEX_ENV: &str = "SHAKE_TEST_PUSH_INDEX_PAUSE_MS";
/// The fault tests' pause (ms) in a push, before its manifest.
pub const PAUSE_MANIFEST_ENV: &str = "SHAKE_TEST_PUSH_MANIFEST_PAUSE_MS";
/// The fault tests' pause (ms) in a fetch, after each pack.
pub const PAUSE_FETCH_ENV: &str = "SHAKE_TEST_FETCH_PACK_PAUSE_MS";

/// One remote: the name it goes by here and its URL.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Remote {
    /// `origin`, `nas`, … (letters, digits, `.`, `_`, `-`).
    pub name: String,
    /// `s3://bucket/prefix`, `gs://…`, `az://…`, `file:///path` or an absolute folder path.
    pub url: String,
}

/// The `remotes` file.
#[derive(Default, Serialize, Deserialize)]
struct Config {
    v: u32,
    remotes: Vec<Remote>,
}

/// Lists the store's remotes, in the order they were added.
pub fn remotes(store: &Path) -> Result<Vec<Remote>> {
    let path = store.join(CONFIG);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(FileError::at(&path, "read")(e).into()),
    };
    let config: Config =
        serde_json::from_slice(&bytes).map_err(|source| RemoteError::BadRemotes { path: path.clone(), source })?;
    if config.v != 1 || !config.remotes.iter().all(|r| valid_name(&r.name)) {
        return Err(RemoteError::RemotesVersion { path });
    }
    Ok(config.remotes)
}

/// Adds a remote (a folder path is made absolute first); a name already taken is refused.
pub fn add(ctx: &Context, name: &str, url: &str) -> Result<Remote> {
    if !valid_name(name) {
        return Err(RemoteError::BadName { name: name.to_string() });
    }
    let url = match url.strip_prefix("file://").or((!url.contains("://")).then_some(url)) {
        Some("") => return Err(RemoteError::EmptyUrl),
        Some(path) => format!("file://{}", ctx.cwd.join(path).display()),
        None => url.to_string(),
    };
    let remote = Remote { name: name.to_string(), url };
    // Checked now, not at the first push: a URL no service takes.
    if !remote.url.starts_with("file://") {
        Transport::open(&remote.url)?;
    }
    change(&ctx.store_dir, |all| match all.iter().any(|r| r.name == name) {
        true => Err(RemoteError::Exists { name: name.to_string() }),
        false => {
            all.push(remote.clone());
            Ok(())
        }
    })?;
    Ok(remote)
}

/// Removes a remote from the list (nothing on the remote or in the store is deleted).
pub fn remove(ctx: &Context, name: &str) -> Result<()> {
    change(&ctx.store_dir, |all| {
        let before = all.len();
        all.retain(|r| r.name != name);
        match all.len() < before {
            true => Ok(()),
            false => Err(unknown(name)),
        }
    })
}

/// Rewrites the remotes file under the store's write lock.
fn change(store: &Path, edit: impl FnOnce(&mut Vec<Remote>) -> Result<()>) -> Result<()> {
    let _lock = WriteLock::take(store)?;
    let mut all = remotes(store)?;
    edit(&mut all)?;
    let bytes = serde_json::to_vec_pretty(&Config { v: 1, remotes: all })
        .map_err(|source| RemoteError::Encode { what: "the remotes", source })?;
    crate::durable::write(&store.join(CONFIG), &bytes)?;
    Ok(())
}

/// The remote a command names, or the only one when it names none.
pub fn named(store: &Path, name: Option<&str>) -> Result<Remote> {
    let mut all = remotes(store)?;
    match name {
        Some(name) => all.into_iter().find(|r| r.name == name).ok_or_else(|| unknown(name)),
        None if all.len() == 1 => Ok(all.remove(0)),
        None if all.is_empty() => Err(RemoteError::NoRemote),
        None => Err(RemoteError::Several { names: all.into_iter().map(|r| r.name).collect() }),
    }
}

fn unknown(name: &str) -> RemoteError {
    RemoteError::Unknown { name: name.to_string() }
}

/// Tells whether `name` may name a remote or a machine, and so a folder: 1 to 64 of ASCII
/// letters, digits, `.`, `_` and `-`, not starting with `.` or `-`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with(['.', '-'])
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Tells whether `id` is a machine id: 32 lowercase hex digits.
pub fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// This store's machine: a stable id (kept in the store) and a readable name.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Machine {
    /// 32 hex digits, made once.
    pub id: String,
    /// From `$SHAKE_MACHINE` when the id was made, else the host name.
    pub name: String,
}

/// Reads this store's machine, making it on first use (under the write lock).
pub fn machine(store: &Path) -> Result<Machine> {
    let path = store.join(MACHINE);
    let read = |path: &Path| -> Result<Option<Machine>> {
        match std::fs::read(path) {
            Ok(bytes) => match serde_json::from_slice::<Machine>(&bytes) {
                Ok(m) if valid_id(&m.id) && valid_name(&m.name) => Ok(Some(m)),
                _ => Err(RemoteError::BadMachine { path: path.to_path_buf() }),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FileError::at(path, "read")(e).into()),
        }
    };
    if let Some(m) = read(&path)? {
        return Ok(m);
    }
    let _lock = WriteLock::take(store)?;
    if let Some(m) = read(&path)? {
        return Ok(m);
    }
    let host = std::env::var("SHAKE_MACHINE").ok().filter(|n| !n.is_empty()).unwrap_or_else(host_name);
    let name = sanitize(&host, 64);
    let seed =
        format!("{name} {} {} {:?}", std::process::id(), crate::store::times::now_ms(), std::time::Instant::now());
    let seed = [seed.as_bytes(), &std::fs::read("/proc/sys/kernel/random/uuid").unwrap_or_default()].concat();
    let id = blake3::hash(&seed).to_hex()[..32].to_string();
    let machine = Machine { id, name };
    let bytes = serde_json::to_vec(&machine).map_err(|source| RemoteError::Encode { what: "the machine", source })?;
    crate::durable::write(&path, &bytes)?;
    Ok(machine)
}

/// The system's host name, `machine` when it has none.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its whole length, which is passed.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(0);
    let name = String::from_utf8_lossy(&buf[..end]).split('.').next().unwrap_or_default().to_string();
    if ok && !name.is_empty() {
        name
    } else {
        "machine".to_string()
    }
}

/// `text` as a folder or file name: every character but ASCII letters, digits, `.`, `_` and `-`
/// becomes `_`, a leading `.` or `-` too; at most `max` bytes; `_` when empty.
fn sanitize(text: &str, max: usize) -> String {
    let mut out: String =
        text.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).take(max).collect();
    if out.starts_with(['.', '-']) {
        out.replace_range(..1, "_");
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// The folder of the sessions fetched from machine `id` named `name` (from its manifest,
/// checked): `remote/<name>`, or `remote/<name>-<id prefix>` when another machine has the name.
/// The folder records the id it is for.
fn mirror_dir(store: &Path, id: &str, name: &str) -> Result<PathBuf> {
    for candidate in [name.to_string(), format!("{name}-{}", &id[..8]), format!("{name}-{id}")] {
        let dir = store.join(MIRRORS).join(&candidate);
        let mark = dir.join(MIRROR_ID);
        match std::fs::read_to_string(&mark) {
            Ok(owner) if owner.trim() == id => return Ok(dir),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                crate::durable::private_dir(&dir)?;
                crate::durable::write(&mark, format!("{id}\n").as_bytes())?;
                return Ok(dir);
            }
            Err(e) => return Err(FileError::at(&mark, "read")(e).into()),
        }
    }
    Err(RemoteError::NoMirror { dir: store.join(MIRRORS), id: id.to_string(), name: name.to_string() })
}

/// The machine a session file was fetched from, when `path` is in a machine's folder of the
/// store at `store`: that folder's name (what `<machine>/<session>` names it by).
pub fn machine_of(store: &Path, path: &Path) -> Option<String> {
    let root = std::fs::canonicalize(store.join(MIRRORS)).ok()?;
    let rest = path.strip_prefix(&root).ok()?;
    rest.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned())
}

/// Resolves `<machine>/<session id or prefix>` to the file of that fetched session; `None` when
/// `text` does not name a machine fetched into this store (it may be a path).
pub fn resolve(ctx: &Context, text: &str) -> crate::store::Result<Option<PathBuf>> {
    match named_session(&ctx.store_dir, text) {
        Some(_) => resolve_in(&Store::open(ctx)?, text),
        None => Ok(None),
    }
}

/// The machine's folder and the session id prefix `<machine>/<prefix>` names, when `text` has
/// that form and the machine was fetched into the store at `store`.
fn named_session<'t>(store: &Path, text: &'t str) -> Option<(PathBuf, &'t str)> {
    let (machine, prefix) = text.split_once('/')?;
    if !valid_name(machine) || prefix.is_empty() || prefix.contains('/') {
        return None;
    }
    Some((std::fs::canonicalize(store.join(MIRRORS).join(machine)).ok()?, prefix))
}

/// [`resolve`] in an open store: the one resolver of `<machine>/<session>`, for the commands
/// that read files (`Rev::session_path`) and those that read the store's records
/// (`Store::find_session`). A machine with no such session, or several, is the store's answer
/// for any session id (`NoSession`, `AmbiguousSession`).
pub fn resolve_in(store: &Store, text: &str) -> crate::store::Result<Option<PathBuf>> {
    let Some((dir, prefix)) = named_session(store.dir(), text) else { return Ok(None) };
    let mut hits: Vec<PathBuf> = store
        .sessions()?
        .into_iter()
        .filter(|s| s.path.starts_with(&dir) && s.session_id.as_deref().is_some_and(|id| id.starts_with(prefix)))
        .map(|s| s.path)
        .collect();
    hits.sort();
    match hits.len() {
        1 => Ok(Some(hits.remove(0))),
        0 => Err(StoreError::NoSession { prefix: text.to_string() }),
        _ => Err(StoreError::AmbiguousSession { prefix: text.to_string(), paths: hits }),
    }
}

/// The packs a remote holds whole (its `.pack` and its `.idx` both listed): checksum prefix
/// (40 hex digits) → the pack's size. A pack without its index is a push cut short.
pub fn remote_packs(remote: &Transport) -> Result<BTreeMap<String, u64>> {
    let listed = remote.list("packs")?;
    let indexes: HashSet<&str> =
        listed.iter().filter_map(|l| l.name.strip_prefix("pack-")?.strip_suffix(".idx")).collect();
    Ok(listed
        .iter()
        .filter_map(|l| Some((l.name.strip_prefix("pack-")?.strip_suffix(".pack")?, l.size)))
        .filter(|(sum, _)| valid_sum(sum) && indexes.contains(sum))
        .map(|(sum, size)| (sum.to_string(), size))
        .collect())
}

/// Tells whether `sum` is a pack's name: 40 lowercase hex digits.
pub fn valid_sum(sum: &str) -> bool {
    sum.len() == 40 && sum.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The ids of the objects in the remote's pack `sum`, from its index: the copy in
/// `cache/remote-idx/` when there is a sound one (a pack's index is a function of the pack, and
/// the pack of its name), else the remote's, checked and then cached. A remote index that does
/// not read, or indexes another pack, is the remote's damage (exit 3).
pub fn remote_ids(store: &Path, remote: &Transport, sum: &str) -> Result<Vec<ObjectId>> {
    let cached = store.join("cache/remote-idx").join(format!("pack-{sum}.idx"));
    let matches = |found: &Option<(Vec<ObjectId>, [u8; 32])>| {
        found.as_ref().is_some_and(|(_, pack)| crate::id::hex(pack).starts_with(sum))
    };
    if let Ok(bytes) = std::fs::read(&cached) {
        let found = crate::store::pack::index_ids(&bytes);
        if matches(&found) {
            return Ok(found.map(|(ids, _)| ids).unwrap_or_default());
        }
    }
    let name = format!("packs/pack-{sum}.idx");
    let bytes = remote
        .get(&name)?
        .ok_or_else(|| RemoteError::IndexMissing { url: remote.url().to_string(), name: name.clone() })?;
    let found = crate::store::pack::index_ids(&bytes);
    if !matches(&found) {
        return Err(RemoteError::IndexDamaged { url: remote.url().to_string(), name });
    }
    // A cache: a failed write costs a download next time, nothing else.
    let _ = crate::durable::write_cache(&cached, &bytes);
    Ok(found.map(|(ids, _)| ids).unwrap_or_default())
}

/// Writes `what` on stderr as progress, on a terminal only (as `import` does): `\r` lines, the
/// last one ended.
pub struct Progress {
    shown: bool,
    /// The bytes last shown: a line per mebibyte, not per chunk a service sends.
    last: std::cell::Cell<u64>,
}

impl Progress {
    /// Progress for this process: shown when stderr is a terminal and `quiet` is not asked.
    pub fn new(quiet: bool) -> Progress {
        Progress { shown: !quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()), last: Default::default() }
    }

    /// Shows how far a transfer is: `done` of `total` bytes of `what` (ended with a newline
    /// once done).
    pub fn bytes(&self, what: &str, done: u64, total: u64) {
        let due = done >= total || done < self.last.get() || done - self.last.get() >= 1 << 20;
        if self.shown && due {
            self.last.set(done);
            let end = if done >= total { "\n" } else { "" };
            let (done, total) = (crate::regions::thousands(done), crate::regions::thousands(total));
            let line = format!("\r{what}: {done} of {total} bytes{end}");
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_be_paths_are_not_names() {
        for good in ["origin", "nas-2", "a.b_c", "x"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", ".", "..", ".hidden", "-x", "a/b", "a b", "é", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
        assert!(valid_id(&"0a".repeat(16)) && !valid_id(&"0A".repeat(16)) && !valid_id("../x"));
        assert!(valid_sum(&"f".repeat(40)) && !valid_sum(&"f".repeat(39)));
    }

    #[test]
    fn sanitize_makes_a_plain_name() {
        assert_eq!(sanitize("..", 64), "_.");
        assert_eq!(sanitize("a/b c", 64), "a_b_c");
        assert_eq!(sanitize("-home-x", 64), "_home-x");
        assert_eq!(sanitize("", 64), "_");
        assert_eq!(sanitize("abcdef", 3), "abc");
        assert!(valid_name(&sanitize("my host.local", 64)));
    }
}
