//! `fsck --remote`: every manifest reads, every pack it names is there whole (pack and index)
//! and hashes right, and every session's version is in one of its packs.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::{RemoteError, Result};
use crate::id::ObjectId;
use crate::remote::{manifest, remote_packs, valid_id, Remote, Transport};
use crate::store::pack::Pack;

/// What `fsck --remote` found.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    /// Manifests read.
    pub manifests: usize,
    /// Packs checked (downloaded and verified).
    pub packs: usize,
    /// Packs on the remote that no manifest names (a push cut short before its manifest): not
    /// a problem; the next push of that machine names them or sends them again.
    pub unnamed: usize,
    /// One line per problem, naming the remote's file.
    pub problems: Vec<String>,
}

/// Checks the remote `remote`.
pub fn check(remote: &Remote) -> Result<Checked> {
    let transport = Transport::open(&remote.url)?;
    let present = remote_packs(&transport)?;
    let mut checked = Checked::default();
    let mut named: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut versions: Vec<(String, String, ObjectId, Vec<String>)> = Vec::new();
    for listed in transport.list("machines")? {
        let Some(id) = listed.name.strip_suffix(".json").filter(|id| valid_id(id)) else { continue };
        match manifest::read(&transport, id) {
            Ok(Some(m)) => {
                checked.manifests += 1;
                for sum in &m.packs {
                    named.entry(sum.clone()).or_default().push(manifest::name(id));
                }
                for s in &m.sessions {
                    let version = s.version_id().unwrap_or(ObjectId::NULL);
                    versions.push((manifest::name(id), s.path.clone(), version, m.packs.clone()));
                }
            }
            Ok(None) => {}
            Err(e) => checked.problems.push(e.to_string()),
        }
    }
    checked.unnamed = present.keys().filter(|sum| !named.contains_key(*sum)).count();
    let dir = tempfile::tempdir().map_err(RemoteError::TempDir)?;
    let mut contents: BTreeMap<String, HashSet<ObjectId>> = BTreeMap::new();
    for (sum, by) in &named {
        if !present.contains_key(sum) {
            checked.problems.push(format!("{}: names packs/pack-{sum}, which is not there whole", by.join(", ")));
            continue;
        }
        checked.packs += 1;
        let mut problems = Vec::new();
        let mut fetch = |ext: &str| -> Result<()> {
            let name = format!("pack-{sum}.{ext}");
            if !transport.get_file(&format!("packs/{name}"), &dir.path().join(&name), &mut |_| {})? {
                problems.push(format!("packs/{name} vanished while checked"));
            }
            Ok(())
        };
        fetch("pack")?;
        fetch("idx")?;
        if problems.is_empty() {
            match Pack::open(&dir.path().join(format!("pack-{sum}.idx"))) {
                Ok(pack) => {
                    problems.extend(pack.verify());
                    contents.insert(sum.clone(), (0..pack.len()).map(|i| pack.id_at(i)).collect());
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        let local = dir.path().display().to_string();
        for p in problems {
            checked.problems.push(format!("packs/{}", p.replace(&format!("{local}/"), "").replace(&local, "")));
        }
        let _ = std::fs::remove_file(dir.path().join(format!("pack-{sum}.pack")));
        let _ = std::fs::remove_file(dir.path().join(format!("pack-{sum}.idx")));
    }
    let mut missing = BTreeSet::new();
    for (by, path, version, packs) in versions {
        if !packs.iter().any(|p| contents.get(p).is_some_and(|ids| ids.contains(&version))) {
            missing.insert(format!("{by}: session {path}: version {version} is in none of its packs"));
        }
    }
    checked.problems.extend(missing);
    Ok(checked)
}
