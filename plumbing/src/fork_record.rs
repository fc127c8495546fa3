//! The records of folds written as forks ([`Writer::Fork`]), kept in the store: no record goes
//! into a forking host's session file (Claude Code's transcript: every byte of a fork but the
//! folded results is its source's). The layout is the same for every host that forks.
//!
//! A session's records are one canonical-JSON object under `refs/forks/<session id>`:
//! `{"v":1,"session":<id>,"records":[{"leaf","source","sourceSession","fork","forkPath","inPlace",
//! "sourceBytes","sourceHash","at","data"}]}`, oldest first; `sourceBytes` and `sourceHash`
//! (blake3, hex) are the bytes of the source the write read; `inPlace` says the write replaced
//! the source itself (`fork` is then the source's own id); `at` is when the record was written
//! (ISO 8601; records of an older shake have none, and are read with their row's time); `data`
//! is the fold's shake log data
//! (`docs/log-entry.md`; Claude Code's target ids are `tool_use_id`s). A fork made from a fork inherits its source's records, so the folds in force
//! in a file are its own records. Loading attaches them to the session
//! ([`attach`]), where the engine reads them as it reads pi's log entries.

use std::path::Path;

use serde_json::{json, Value};

use crate::host::{Exact, Session, Stored, Writer};
use crate::id::{Kind, ObjectId};
use crate::store::StoreError;
use crate::store::{refs, Store};
use crate::Context;

/// What reading or writing a session's fork records can fail with.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The store does not open, read or write.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The records object is not JSON.
    #[error("fork records {id}: {source}")]
    Damaged {
        /// The records object.
        id: ObjectId,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// The records do not encode.
    #[error("cannot encode fork records: {0}")]
    Encode(#[source] serde_json::Error),
}

/// What reading or writing fork records returns.
type Result<T> = std::result::Result<T, RecordError>;

/// The record layout version.
pub const VERSION: u64 = 1;

/// The ref holding session `session_id`'s fork records.
pub fn records_ref(session_id: &str) -> String {
    refs::session_ref(session_id).replacen("refs/sessions/", "refs/forks/", 1)
}

/// The records of session `session_id`, oldest first (none: empty).
pub fn read(ctx: &Context, session_id: &str) -> Result<Vec<Value>> {
    let store = Store::open(ctx)?;
    let Some(id) = store.read_ref(&records_ref(session_id))? else { return Ok(Vec::new()) };
    let value: Value = serde_json::from_slice(store.read_kind(&id, Kind::Overlay)?)
        .map_err(|source| RecordError::Damaged { id, source })?;
    Ok(value["records"].as_array().cloned().unwrap_or_default())
}

/// What one fold written as a fork was.
pub struct Record<'r> {
    /// The source row the fold was planned at (its uuid; the fork has the same row).
    pub leaf: &'r str,
    /// The source file.
    pub source: &'r Path,
    /// The source's session id.
    pub source_session: &'r str,
    /// The fork's session id (the source's own, in place).
    pub fork: &'r str,
    /// The fork's file (the source itself, in place).
    pub fork_path: &'r Path,
    /// The bytes of the source the write read.
    pub read: &'r [u8],
    /// The write replaced the source itself.
    pub in_place: bool,
    /// The fold's log data.
    pub data: Value,
}

/// Stores the records of a new fork: its source's records, then `record`.
pub fn write(ctx: &Context, record: Record<'_>) -> Result<()> {
    let mut records = read(ctx, record.source_session)?;
    records.push(json!({
        "leaf": record.leaf,
        "source": record.source.display().to_string(),
        "sourceSession": record.source_session,
        "fork": record.fork,
        "forkPath": record.fork_path.display().to_string(),
        "inPlace": record.in_place,
        "sourceBytes": record.read.len(),
        "sourceHash": blake3::hash(record.read).to_hex().as_str(),
        "at": crate::time::iso(crate::time::now_millis()),
        "data": record.data,
    }));
    put(ctx, record.fork, records)
}

/// The bytes a record's write read ([`Record::read`]), when it names them.
pub fn read_bytes(record: &Value) -> Option<Exact> {
    let len = record["sourceBytes"].as_u64()?;
    let hash = blake3::Hash::from_hex(record["sourceHash"].as_str()?).ok()?;
    Some(Exact { len, hash: *hash.as_bytes() })
}

/// For an undo in place of session `session_id` that puts back `targets`: the bytes the file
/// must start with after it, those the earliest in-place fold read whose targets it all puts
/// back (every later write kept them, rows appended aside). `None` when there is no such fold
/// (an undo at a leaf that no longer reaches all of a fold's results puts back only part).
pub fn exact_before(records: &[Value], session_id: &str, targets: &[&str]) -> Option<Exact> {
    let folds = records.iter().filter(|r| r["inPlace"] == true && r["fork"] == session_id && r["data"]["op"] == "fold");
    let mut covered = folds.filter(|r| {
        let mut ids = r["data"]["targets"].as_array().into_iter().flatten().map(|t| t["id"].as_str());
        ids.all(|id| id.is_some_and(|id| targets.contains(&id)))
    });
    covered.next().and_then(read_bytes)
}

/// Replaces session `session_id`'s records.
pub fn put(ctx: &Context, session_id: &str, records: Vec<Value>) -> Result<()> {
    let value = json!({"v": VERSION, "session": session_id, "records": records});
    let bytes = serde_json::to_vec(&value).map_err(RecordError::Encode)?;
    let mut store = Store::open(ctx)?;
    let mut batch = store.batch()?;
    let id: ObjectId = batch.put(Kind::Overlay, &bytes).map_err(StoreError::from)?;
    batch.set_ref(&records_ref(session_id), id)?;
    Ok(batch.commit()?)
}

/// Attaches the store's records of a session whose host keeps them outside the file: each
/// record's `data` at the row it names (a record whose row is missing is left out). A store that
/// cannot be read is an error: attaching nothing would report a fork's folds as none.
pub fn attach(ctx: &Context, session: &mut Session<'_>) -> Result<()> {
    let Writer::Fork(_) = session.host().writer() else { return Ok(()) };
    let Some(id) = session.header.as_ref().map(|h| h.id.to_string()) else { return Ok(()) };
    for mut record in read(ctx, &id)? {
        let Some(index) = record["leaf"].as_str().and_then(|leaf| session.index_of(leaf)) else { continue };
        // A record written before shake stored its time has no `at`: its row's time stands in.
        let at = record["at"].as_str().map(str::to_string);
        session.stored.push(Stored { index, data: record["data"].take(), at });
    }
    Ok(())
}
