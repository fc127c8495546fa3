//! `push`: send what the remote lacks, then this machine's manifest.
//!
//! 1. The remote's packs are listed and their indexes read (cached by content name), which says
//!    which objects it holds; every object the store keeps (`gc`'s reachable set) that it lacks
//!    goes into one new pack, which
//!    goes up under its content name, its index after it. A pack already there is never sent
//!    again (a listing decides, not a conditional write).
//! 2. Then, last, the manifest: the packs holding this store's objects and its own sessions.
//!
//! Cut anywhere, the remote is valid: a pack without its index does not count, and the manifest
//! only names packs that were there before it was written. The next push sends the same pack
//! (the same objects in the same order: the same name and bytes) and then the manifest.
//!
//! Before anything leaves, a check ([`Check`]) is given the sessions that would leave and may
//! refuse (the secret scan plugs in there).

use std::collections::HashSet;
use std::path::Path;

use super::{RemoteError, Result};
use crate::id::ObjectId;
use crate::remote::manifest::{self, Manifest, Shared};
use crate::remote::{remote_ids, remote_packs, Machine, Progress, Remote, Transport};
use crate::store::{pack::PackWriter, state, times, Store};
use crate::Context;

/// One session that would leave: its file on this machine and the version going up.
#[derive(Clone, Debug)]
pub struct Leaving<'a> {
    /// The session id from its header, when it has one.
    pub session: Option<&'a str>,
    /// The session file's path here.
    pub path: &'a str,
    /// The version going up (what the remote will hold of it).
    pub version: ObjectId,
    /// The version this machine's manifest on the remote names already, if any: what lies
    /// between (`Store::version_chain`) is what is new.
    pub pushed: Option<ObjectId>,
}

/// The check run before anything leaves: given the store and every session whose version
/// would change on the remote, it returns an error to refuse the push (nothing is sent), the
/// caller's own (the porcelain's secret scan words its refusal), which the push returns.
pub type Check<'c, E> = &'c dyn Fn(&Store, &[Leaving<'_>]) -> std::result::Result<(), E>;

/// What a push did.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// This store's machine.
    pub machine: Machine,
    /// Sessions the manifest lists.
    pub sessions: usize,
    /// Sessions whose version changed on the remote.
    pub changed: usize,
    /// Packs sent (0 or 1).
    pub packs: usize,
    /// Objects sent.
    pub objects: u64,
    /// Bytes sent, packs and indexes.
    pub bytes: u64,
    /// Whether the manifest was written (it is not when it says what the remote has).
    pub manifest: bool,
}

/// Pushes this store to `remote`, after `check` let the sessions go; its refusal is returned
/// as it is, the push's own errors as `E`.
pub fn push<E: From<RemoteError>>(
    ctx: &Context,
    remote: &Remote,
    check: Check<'_, E>,
    progress: &Progress,
) -> Result<Pushed, E> {
    let machine = super::machine(&ctx.store_dir)?;
    let transport = Transport::open(&remote.url)?;
    let store = Store::open(ctx).map_err(RemoteError::from)?;
    let sessions = own_sessions(&store, &ctx.store_dir)?;
    let previous = manifest::read(&transport, &machine.id)?;
    let before = |path: &str| {
        previous.as_ref().and_then(|m| m.sessions.iter().find(|s| s.path == path)).and_then(Shared::version_id)
    };
    let leaving: Vec<Leaving<'_>> = sessions
        .iter()
        .filter_map(|s| {
            let version = s.version_id()?;
            let pushed = before(&s.path);
            (pushed != Some(version)).then_some(Leaving {
                session: s.session.as_deref(),
                path: &s.path,
                version,
                pushed,
            })
        })
        .collect();
    check(&store, &leaving)?;
    let changed = leaving.len();
    drop(leaving);

    let mut on_remote = remote_packs(&transport)?;
    let mut known: HashSet<ObjectId> = HashSet::new();
    let mut holds_ours = Vec::new();
    for sum in on_remote.keys() {
        let ids = remote_ids(&ctx.store_dir, &transport, sum)?;
        if ids.iter().any(|id| store.contains(id)) {
            holds_ours.push(sum.clone());
        }
        known.extend(ids);
    }
    let (mut packs, mut objects, mut bytes) = (0, 0, 0);
    if let Some((sum, count, sent)) = send_missing(&store, &ctx.store_dir, &transport, &known, progress)? {
        on_remote.insert(sum.clone(), sent);
        holds_ours.push(sum);
        (packs, objects, bytes) = (1, count, sent);
    }
    holds_ours.sort();
    holds_ours.dedup();
    let manifest = Manifest {
        v: manifest::VERSION,
        machine: machine.id.clone(),
        name: machine.name.clone(),
        packs: holds_ours,
        sessions,
    };
    crate::fault::pause(super::PAUSE_MANIFEST_ENV);
    let write = previous.as_ref() != Some(&manifest);
    if write {
        manifest::write(&transport, &manifest)?;
    }
    let sessions = manifest.sessions.len();
    Ok(Pushed { machine, sessions, changed, packs, objects, bytes, manifest: write })
}

/// This machine's own sessions (not the copies fetched from others), as a manifest lists them.
fn own_sessions(store: &Store, store_dir: &Path) -> Result<Vec<Shared>> {
    let mirrors = std::fs::canonicalize(store_dir.join(super::MIRRORS)).ok();
    let mut shared = Vec::new();
    for (from, bytes) in store.states()? {
        let (head, _) = state::decode(&from, &bytes).map_err(crate::store::StoreError::from)?;
        if mirrors.as_ref().is_some_and(|m| Path::new(&head.path).starts_with(m)) {
            continue;
        }
        let mut when: Vec<(u64, ObjectId)> =
            store.import_times(Path::new(&head.path))?.into_iter().map(|(id, ms)| (ms, id)).collect();
        when.sort();
        let times: Vec<u8> = when.iter().flat_map(|(ms, id)| times::line(id, *ms)).collect();
        let forks = match &head.session_id {
            Some(id) => store.read_ref(&crate::fork_record::records_ref(id))?.map(|f| f.to_hex()),
            None => None,
        };
        shared.push(Shared {
            forks,
            session: head.session_id.clone(),
            path: head.path.clone(),
            version: ObjectId(head.version).to_hex(),
            state: crate::id::hex(&bytes),
            times: String::from_utf8_lossy(&times).into_owned(),
        });
    }
    shared.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(shared)
}

/// Sends, as one new pack, every object the store keeps (what `gc` keeps: what its refs and
/// import states reach, never an object nothing names any more) that is not in `known` (the
/// remote's); returns its name, object count and the bytes sent, or `None` when the remote has
/// them all.
fn send_missing(
    store: &Store,
    store_dir: &Path,
    remote: &Transport,
    known: &HashSet<ObjectId>,
    progress: &Progress,
) -> Result<Option<(String, u64, u64)>> {
    let kept = crate::store::gc::reachable(store)?;
    // A folder of this process's own: two pushes of one store at once (a cron job and a person)
    // build the same pack, and one must not remove it while the other sends it.
    let dir = crate::durable::temp_dir_of_this_process(&store_dir.join("cache/push"), "push")?;
    let mut writer = PackWriter::new(&dir)?;
    for pack in store.packs() {
        for i in 0..pack.len() {
            let id = pack.id_at(i);
            if known.contains(&id) || writer.contains(&id) || !kept.contains(&id) {
                continue;
            }
            let obj = pack.object_at(i)?;
            if ObjectId::hash(obj.kind, obj.bytes) != id {
                return Err(RemoteError::ObjectMismatch { path: pack.path.clone(), id });
            }
            writer.add(id, obj.kind, obj.bytes)?;
        }
    }
    let count = writer.len() as u64;
    let Some(idx) = writer.finish()? else {
        let _ = std::fs::remove_dir_all(&dir);
        return Ok(None);
    };
    let pack = idx.with_extension("pack");
    let stem = idx.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let sum = stem.trim_start_matches("pack-").to_string();
    let size =
        |path: &Path| std::fs::metadata(path).map(|m| m.len()).map_err(crate::durable::FileError::at(path, "read"));
    let (pack_size, idx_size) = (size(&pack)?, size(&idx)?);
    let what = format!("pushing {stem}");
    remote.put_file(&format!("packs/{stem}.pack"), &pack, &mut |n| progress.bytes(&what, n, pack_size + idx_size))?;
    // The index last: a pack counts as there once both are.
    crate::fault::pause(super::PAUSE_INDEX_ENV);
    remote.put_file(&format!("packs/{stem}.idx"), &idx, &mut |n| {
        progress.bytes(&what, pack_size + n, pack_size + idx_size)
    })?;
    let sent = pack_size + idx_size;
    // The local copy was only for sending: the store has every object of it.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Some((sum, count, sent)))
}
