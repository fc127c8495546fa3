//! A remote's objects through the `object_store` crate: S3 and S3-compatible services, Google
//! Cloud Storage, Azure, and a plain folder, behind four blocking calls (list, head, get, put).
//!
//! object_store is async: each transport owns one current-thread tokio runtime, made when a
//! command opens the remote and dropped with it, so nothing else in shake runs on tokio.
//! Credentials are each service's own (`AWS_*`, `GOOGLE_*`, `AZURE_*` variables and the files
//! the builders' `from_env` read); shake keeps only the URL.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreScheme, PutPayload, WriteMultipart};

use super::{RemoteError, Result};
use crate::durable::FileError;

/// The size of each part of a large upload (S3 takes parts of 5 MiB and more, but the last).
pub const PART: usize = 8 << 20;

/// One opened remote.
pub struct Transport {
    runtime: tokio::runtime::Runtime,
    store: Arc<dyn ObjectStore>,
    /// The folder inside the bucket or container (`s3://bucket/<prefix>`), `""` at its root.
    prefix: String,
    /// The URL as the user gave it, for messages.
    url: String,
}

/// One object a listing found: its name under the listed folder, and its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The name after the folder (`pack-….idx`).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

impl Transport {
    /// Opens the remote at `url`: `s3://`, `gs://`, `az://` (and the other spellings
    /// object_store reads), `file://` or a plain absolute path (a folder, made if missing).
    pub fn open(url: &str) -> Result<Transport> {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(RemoteError::Runtime)?;
        let (store, prefix): (Arc<dyn ObjectStore>, String) = match folder(url) {
            Some(dir) => {
                crate::durable::private_dir(&dir)?;
                let local = object_store::local::LocalFileSystem::new_with_prefix(&dir)
                    .map_err(|e| service(url, "open the folder", e))?;
                (Arc::new(local), String::new())
            }
            None => {
                let parsed =
                    url::Url::parse(url).map_err(|source| RemoteError::Url { url: url.to_string(), source })?;
                let (scheme, prefix) = ObjectStoreScheme::parse(&parsed)
                    .map_err(|source| RemoteError::Scheme { url: url.to_string(), source: Box::new(source) })?;
                let open = |e| service(url, "open", e);
                let store: Arc<dyn ObjectStore> = match scheme {
                    ObjectStoreScheme::AmazonS3 => {
                        Arc::new(object_store::aws::AmazonS3Builder::from_env().with_url(url).build().map_err(open)?)
                    }
                    ObjectStoreScheme::GoogleCloudStorage => Arc::new(
                        object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(url).build().map_err(open)?,
                    ),
                    ObjectStoreScheme::MicrosoftAzure => Arc::new(
                        object_store::azure::MicrosoftAzureBuilder::from_env().with_url(url).build().map_err(open)?,
                    ),
                    other => {
                        return Err(RemoteError::NotWritable { url: url.to_string(), scheme: format!("{other:?}") })
                    }
                };
                (store, prefix.to_string())
            }
        };
        Ok(Transport { runtime, store, prefix, url: url.to_string() })
    }

    /// The full key of `name` (`packs/pack-….pack`) under the remote's prefix.
    fn key(&self, name: &str) -> Key {
        match self.prefix.is_empty() {
            true => Key::from(name),
            false => Key::from(format!("{}/{name}", self.prefix)),
        }
    }

    /// Lists the objects directly in `folder` (`packs`, `machines`), sorted by name.
    pub fn list(&self, folder: &str) -> Result<Vec<Listed>> {
        let key = self.key(folder);
        let found = self
            .runtime
            .block_on(async { self.store.list(Some(&key)).try_collect::<Vec<_>>().await })
            .map_err(|e| service(&self.url, &format!("list {folder}/ in"), e))?;
        let mut listed: Vec<Listed> = found
            .into_iter()
            .filter_map(|meta| {
                let mut parts = meta.location.prefix_match(&key)?;
                let name = parts.next()?.as_ref().to_string();
                parts.next().is_none().then_some(Listed { name, size: meta.size })
            })
            .collect();
        listed.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(listed)
    }

    /// Reads object `name` whole; `None` when there is none.
    pub fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let key = self.key(name);
        let got = self.runtime.block_on(async {
            match self.store.get(&key).await {
                Ok(found) => found.bytes().await.map(Some),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        });
        got.map(|b| b.map(|b| b.to_vec())).map_err(|e| service(&self.url, &format!("read {name} from"), e))
    }

    /// Writes object `name`. Every service here replaces an object whole or not at all; shake
    /// never relies on a conditional write (Garage accepts `If-None-Match: *` and overwrites
    /// anyway): a pack's name is its content, and a manifest has one writer.
    pub fn put(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        let key = self.key(name);
        self.runtime
            .block_on(self.store.put(&key, PutPayload::from(bytes)))
            .map(|_| ())
            .map_err(|e| service(&self.url, &format!("write {name} to"), e))
    }

    /// Writes object `name` from the file at `path`: whole when it is small, else in parts of
    /// [`PART`] bytes (a multipart upload, which the service makes the object at its end, whole
    /// or not at all; two parts in memory at most), telling `sent` the bytes sent so far. A
    /// failed upload is aborted, so the service drops the parts it kept.
    pub fn put_file(&self, name: &str, path: &Path, sent: &mut dyn FnMut(u64)) -> Result<()> {
        let meta = std::fs::metadata(path).map_err(FileError::at(path, "read"))?;
        if meta.len() <= PART as u64 {
            self.put(name, std::fs::read(path).map_err(FileError::at(path, "read"))?)?;
            sent(meta.len());
            return Ok(());
        }
        let mut file = std::fs::File::open(path).map_err(FileError::at(path, "read"))?;
        let key = self.key(name);
        let local = |e: std::io::Error| object_store::Error::Generic { store: "local file", source: Box::new(e) };
        let done = self.runtime.block_on(async {
            let mut writer = WriteMultipart::new_with_chunk_size(self.store.put_multipart(&key).await?, PART);
            let mut buf = vec![0u8; PART];
            let mut total = 0u64;
            let streamed: object_store::Result<()> = async {
                loop {
                    let n = read_full(&mut file, &mut buf).map_err(local)?;
                    if n == 0 {
                        return Ok(());
                    }
                    writer.wait_for_capacity(1).await?;
                    writer.write(&buf[..n]);
                    total += n as u64;
                    sent(total);
                }
            }
            .await;
            match streamed {
                Ok(()) => writer.finish().await.map(|_| ()),
                Err(e) => {
                    let _ = writer.abort().await;
                    Err(e)
                }
            }
        });
        done.map_err(|e| service(&self.url, &format!("write {name} to"), e))
    }

    /// Reads object `name` into a new private file at `path` (synced), as it streams in,
    /// telling `got` the bytes so far; `false` when there is no such object.
    pub fn get_file(&self, name: &str, path: &Path, got: &mut dyn FnMut(u64)) -> Result<bool> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(FileError::at(path, "create"))?;
        let key = self.key(name);
        let local = |e: std::io::Error| object_store::Error::Generic { store: "local file", source: Box::new(e) };
        let done = self.runtime.block_on(async {
            let mut stream = match self.store.get(&key).await {
                Ok(found) => found.into_stream(),
                Err(object_store::Error::NotFound { .. }) => return Ok(false),
                Err(e) => return Err(e),
            };
            let mut total = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                file.write_all(&chunk).map_err(local)?;
                total += chunk.len() as u64;
                got(total);
            }
            file.sync_all().map_err(local)?;
            Ok(true)
        });
        done.map_err(|e| service(&self.url, &format!("read {name} from"), e))
    }

    /// The remote's URL as given.
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Reads until `buf` is full or the file ends; returns how many bytes were read.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            got => n += got,
        }
    }
    Ok(n)
}

/// The folder a `file://` URL or a plain path names; `None` for a service's URL.
fn folder(url: &str) -> Option<PathBuf> {
    if let Some(path) = url.strip_prefix("file://") {
        return Some(PathBuf::from(path));
    }
    (!url.contains("://")).then(|| PathBuf::from(url))
}

/// A service's failure: what shake was doing, on which remote, and what the service said. A
/// refused login, a missing bucket or a dropped connection is neither the store's damage nor
/// bad input: exit 4, as the system's refusals are.
fn service(url: &str, doing: &str, source: object_store::Error) -> RemoteError {
    RemoteError::Service { doing: doing.to_string(), url: url.to_string(), source: Box::new(source) }
}
