//! `fetch`: bring the other machines' manifests and the packs they name, then their sessions.
//!
//! 1. Every pack a manifest names that the store lacks (by name, or by content when a merge
//!    renamed it here) comes down into `packs/` as `tmp-fetch-*`, is checked whole (both
//!    checksums, every object against its id, its name against its checksum) and only then is
//!    renamed into place, pack first, index after, as a write of the store's own does. A damaged
//!    pack is refused, named, and leaves nothing: exit 3.
//! 2. Then each machine's sessions: the file of each one's latest version is rebuilt from the
//!    store into `remote/<machine>/<folder>/<file>` and given its origin's import state (moved to
//!    that path) and import times, in one packed file, so `log`, `sessions` and the rest read it
//!    as they read the origin's.
//!
//! Cut anywhere, the store is valid: packs land whole or not at all, and the records naming
//! them come after them. The next fetch finishes.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use super::{RemoteError, Result};
use crate::durable::FileError;
use crate::id::ObjectId;
use crate::remote::manifest::{self, Manifest};
use crate::remote::{mirror_dir, remote_ids, sanitize, Progress, Remote, Transport};
use crate::store::{pack::Pack, state, times, Store, WriteLock};
use crate::Context;

/// What a fetch did.
#[derive(Clone, Debug, Default)]
pub struct Fetched {
    /// Each machine fetched: the name its sessions go by here, its id, and how many sessions.
    pub machines: Vec<(String, String, usize)>,
    /// Packs brought.
    pub packs: usize,
    /// Their bytes, packs and indexes.
    pub bytes: u64,
    /// The remote's damage found: packs refused, with the manifests that named them (whose
    /// sessions were not fetched). Not empty: exit 3.
    pub refused: Vec<String>,
}

/// Fetches every other machine's sessions from `remote`.
pub fn fetch(ctx: &Context, remote: &Remote, progress: &Progress) -> Result<Fetched> {
    let own = super::machine(&ctx.store_dir)?;
    let transport = Transport::open(&remote.url)?;
    let manifests = manifest::read_all(&transport, Some(&own.id))?;
    let mut store = Store::open(ctx)?;
    let here: HashSet<String> = store
        .packs()
        .iter()
        .filter_map(|p| Some(p.path.file_stem()?.to_str()?.strip_prefix("pack-")?.to_string()))
        .collect();
    let wanted: BTreeSet<&String> = manifests.iter().flat_map(|m| &m.packs).filter(|s| !here.contains(*s)).collect();
    let mut fetched = Fetched::default();
    let mut bad: HashSet<&str> = HashSet::new();
    let mut todo = Vec::new();
    for sum in wanted {
        let ids = match remote_ids(&ctx.store_dir, &transport, sum) {
            Ok(ids) => ids,
            Err(e) if e.is_damage() => {
                fetched.refused.push(e.to_string());
                bad.insert(sum);
                continue;
            }
            Err(e) => return Err(e),
        };
        if !ids.iter().all(|id| store.contains(id)) {
            todo.push(sum);
        }
    }
    let sizes = super::remote_packs(&transport)?;
    for (n, sum) in todo.iter().enumerate() {
        let what = format!("fetching pack {} of {} (pack-{})", n + 1, todo.len(), &sum[..12]);
        let size = sizes.get(*sum).copied().unwrap_or(0);
        match install(&ctx.store_dir, &transport, sum, &mut |got| progress.bytes(&what, got, size)) {
            Ok(bytes) => (fetched.packs, fetched.bytes) = (fetched.packs + 1, fetched.bytes + bytes),
            Err(e) if e.is_damage() => {
                fetched.refused.push(e.to_string());
                bad.insert(sum);
            }
            Err(e) => return Err(e),
        }
        crate::fault::pause(super::PAUSE_FETCH_ENV);
    }
    let sound: Vec<&Manifest> =
        manifests.iter().filter(|m| !m.packs.iter().any(|p| bad.contains(p.as_str()))).collect();
    for m in manifests.iter().filter(|m| m.packs.iter().any(|p| bad.contains(p.as_str()))) {
        fetched.refused.push(format!("machine {} ({}): its sessions were not fetched", m.name, m.machine));
    }
    let mut batch = store.batch()?;
    for m in sound {
        let dir = mirror_dir(&ctx.store_dir, &m.machine, &m.name)?;
        let shown = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let count = copy_sessions(&mut batch, &dir, m)?;
        fetched.machines.push((shown, m.machine.clone(), count));
    }
    batch.commit()?;
    Ok(fetched)
}

/// Writes the files of machine `m`'s sessions into `dir` and adds their states and times to
/// `batch`; returns how many sessions it has.
fn copy_sessions(batch: &mut crate::store::Batch<'_>, dir: &Path, m: &Manifest) -> Result<usize> {
    let mut taken = HashSet::new();
    for shared in &m.sessions {
        let version = shared.version_id().unwrap_or(ObjectId::NULL);
        let bytes = batch.store().version_bytes(&version).map_err(|source| RemoteError::SessionUnread {
            name: m.name.clone(),
            machine: m.machine.clone(),
            path: shared.path.clone(),
            source: Box::new(source),
        })?;
        let path = copy_path(dir, &shared.path, &mut taken);
        if std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
            crate::durable::private_dir(path.parent().unwrap_or(dir))?;
            crate::durable::write(&path, &bytes)?;
        }
        let canonical = std::fs::canonicalize(&path).map_err(FileError::at(&path, "read"))?;
        let Some(at) = canonical.to_str() else { continue };
        let state_bytes = crate::id::unhex(&shared.state).unwrap_or_default();
        // Only the state of the version named: else the next read imports the file afresh.
        let names_it = state::decode_head(&state_bytes).is_some_and(|(head, _)| head.version == version.0);
        if let Some(moved) = state::moved(&state_bytes, at).filter(|_| names_it) {
            let old = batch.store().read_state(at).ok().and_then(|r| r.ok().flatten());
            if old.is_none_or(|(head, _)| head.version != version.0) {
                batch.set_record(state::name(at), moved);
            }
        }
        // Its fold records (a host whose folds are forks), unless this store has its own.
        if let (Some(id), Some(records)) = (&shared.session, shared.forks.as_ref().and_then(|f| f.parse().ok())) {
            let name = crate::fork_record::records_ref(id);
            if batch.store().read_ref(&name)?.is_none() {
                batch.set_ref(&name, records)?;
            }
        }
        let had = batch.store().import_times(&canonical)?;
        let new: String = shared
            .times
            .lines()
            .filter(|line| times::parse(line.as_bytes()).keys().any(|id| !had.contains_key(id)))
            .map(|line| format!("{line}\n"))
            .collect();
        if !new.is_empty() {
            batch.set_record(times::name(at), new.into_bytes());
        }
    }
    Ok(m.sessions.len())
}

/// Where the copy of the session file at `origin` (another machine's path: only its last two
/// parts are used, each made a plain name) goes in `dir`; a name already taken in this fetch
/// gets the origin's key.
fn copy_path(dir: &Path, origin: &str, taken: &mut HashSet<PathBuf>) -> PathBuf {
    let mut parts = origin.rsplit('/').filter(|p| !p.is_empty());
    let file = sanitize(parts.next().unwrap_or("session.jsonl"), 200);
    let folder = sanitize(parts.next().unwrap_or("_"), 200);
    let mut path = dir.join(&folder).join(&file);
    if !taken.insert(path.clone()) {
        path = dir.join(format!("{folder}-{}", &state::key(origin)[..12])).join(&file);
        taken.insert(path.clone());
    }
    path
}

/// Brings the remote's pack `sum` into the store (streamed to `tmp-fetch-*` files, `got` told
/// the pack's bytes so far), checked whole first; returns its bytes. A damaged pack is a
/// corrupt-remote error naming it, and leaves nothing behind.
fn install(store: &Path, remote: &Transport, sum: &str, got: &mut dyn FnMut(u64)) -> Result<u64> {
    let dir = store.join("packs");
    crate::durable::private_dir(&dir)?;
    let (tmp_pack, tmp_idx) = (dir.join(format!("tmp-fetch-{sum}.pack")), dir.join(format!("tmp-fetch-{sum}.idx")));
    let clean = || {
        let _ = std::fs::remove_file(&tmp_pack);
        let _ = std::fs::remove_file(&tmp_idx);
    };
    for (path, ext) in [(&tmp_pack, "pack"), (&tmp_idx, "idx")] {
        let name = format!("packs/pack-{sum}.{ext}");
        let found = remote.get_file(&name, path, &mut |n| {
            if ext == "pack" {
                got(n)
            }
        });
        if !found.inspect_err(|_| clean())? {
            clean();
            return Err(RemoteError::PackMissing { url: remote.url().to_string(), name });
        }
    }
    let size = |path: &Path| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let bytes = size(&tmp_pack) + size(&tmp_idx);
    let problems = match Pack::open(&tmp_idx) {
        Ok(opened) => {
            let mut problems = opened.verify();
            if !crate::id::hex(&opened.checksum()).starts_with(sum) {
                problems.push("its checksum is not its name".to_string());
            }
            problems
        }
        Err(e) => vec![e.to_string()],
    };
    if let Some(first) = problems.first() {
        clean();
        let first = first.replace(&tmp_pack.display().to_string(), "").replace(&tmp_idx.display().to_string(), "");
        return Err(RemoteError::PackDamaged {
            url: remote.url().to_string(),
            sum: sum.to_string(),
            count: problems.len(),
            first: first.trim_start_matches(": ").to_string(),
        });
    }
    let _lock = WriteLock::take(store)?;
    let (to_pack, to_idx) = (dir.join(format!("pack-{sum}.pack")), dir.join(format!("pack-{sum}.idx")));
    std::fs::rename(&tmp_pack, &to_pack).map_err(FileError::at(&to_pack, "rename into"))?;
    std::fs::rename(&tmp_idx, &to_idx).map_err(FileError::at(&to_idx, "rename into"))?;
    crate::durable::sync_dir(&dir)?;
    Ok(bytes)
}
