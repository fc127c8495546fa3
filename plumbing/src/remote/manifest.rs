//! A machine's manifest on a remote (`machines/<id>.json`): the packs that hold its objects and
//! its sessions, each with its latest version, import state and import times. Written by that
//! machine alone, after every pack it names is on the remote; read by every other machine,
//! which checks every field before any of it names a file or an object.

use serde::{Deserialize, Serialize};

use super::{RemoteError, Result};
use crate::id::ObjectId;
use crate::remote::{valid_id, valid_name, valid_sum, Transport};

/// The manifest format this shake writes and reads.
pub const VERSION: u32 = 1;

/// One machine's manifest.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// [`VERSION`].
    pub v: u32,
    /// The machine's id (32 hex digits); the manifest's name is `machines/<id>.json`.
    pub machine: String,
    /// Its readable name.
    pub name: String,
    /// The remote packs (checksum prefixes, 40 hex digits) that hold objects of its store.
    pub packs: Vec<String>,
    /// Its sessions.
    pub sessions: Vec<Shared>,
}

/// One session a machine shares: one session file of its own.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Shared {
    /// The session id from its header, when it has one.
    pub session: Option<String>,
    /// The file's path on that machine (its last two parts name the fetched copy).
    pub path: String,
    /// Its latest version object.
    pub version: String,
    /// Its import state on that machine (hex), so the copy has the same history.
    pub state: String,
    /// Its import times (`<version> <ms>` lines), so `log` says the same times.
    pub times: String,
    /// The object of its fold records, for a host whose folds are forks
    /// (`refs/forks/<session>`, `fork_record.rs`), when it has some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forks: Option<String>,
}

impl Shared {
    /// The version id, checked.
    pub fn version_id(&self) -> Option<ObjectId> {
        self.version.parse().ok()
    }
}

/// The name of machine `id`'s manifest on a remote.
pub fn name(id: &str) -> String {
    format!("machines/{id}.json")
}

/// Reads every manifest on the remote but `skip`'s (this machine's own), checked; a manifest
/// that does not read is the remote's damage (exit 3, naming it).
pub fn read_all(remote: &Transport, skip: Option<&str>) -> Result<Vec<Manifest>> {
    let mut all = Vec::new();
    for listed in remote.list("machines")? {
        // Other names (a temp file a service left, a newer shake's) are not manifests.
        let Some(id) = listed.name.strip_suffix(".json").filter(|id| valid_id(id)) else { continue };
        if skip == Some(id) {
            continue;
        }
        if let Some(manifest) = read(remote, id)? {
            all.push(manifest);
        }
    }
    Ok(all)
}

/// Reads machine `id`'s manifest, checked; `None` when there is none.
pub fn read(remote: &Transport, id: &str) -> Result<Option<Manifest>> {
    let key = name(id);
    let Some(bytes) = remote.get(&key)? else { return Ok(None) };
    let damaged = |why: String| RemoteError::ManifestDamaged { url: remote.url().to_string(), key: key.clone(), why };
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| damaged(format!("not a manifest: {e}")))?;
    if manifest.v != VERSION {
        return Err(RemoteError::ManifestVersion {
            url: remote.url().to_string(),
            key,
            version: manifest.v,
            reads: VERSION,
        });
    }
    if manifest.machine != id || !valid_name(&manifest.name) {
        return Err(damaged("its machine id or name is not one (or not its file's)".to_string()));
    }
    if let Some(bad) = manifest.packs.iter().find(|p| !valid_sum(p)) {
        return Err(damaged(format!("names pack {bad:?}, which is no pack name")));
    }
    let unreadable = |s: &&Shared| {
        s.version_id().is_none()
            || crate::id::unhex(&s.state).is_none()
            || s.forks.as_ref().is_some_and(|f| f.parse::<ObjectId>().is_err())
    };
    if let Some(bad) = manifest.sessions.iter().find(unreadable) {
        return Err(damaged(format!("session {:?}: its version or state does not read", bad.path)));
    }
    Ok(Some(manifest))
}

/// Writes this machine's manifest (after every pack it names is on the remote).
pub fn write(remote: &Transport, manifest: &Manifest) -> Result<()> {
    let bytes =
        serde_json::to_vec_pretty(manifest).map_err(|source| RemoteError::Encode { what: "a manifest", source })?;
    remote.put(&name(&manifest.machine), bytes)
}
