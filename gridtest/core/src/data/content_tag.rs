//! Content tags of local files: a hash of the bytes, so that a file's identity in a sweep's
//! manifest (and so the sweep id) survives `touch`, `cp` without `-p` or a fresh checkout, and
//! changes with any byte.
//!
//! The local object store's own ETag is `inode-mtime-size`, which changes without the content
//! changing. Hashing is paid once per file version: tags are cached by that ETag and the file's
//! change time (`ctime`), in memory and in `$XDG_CACHE_HOME/gridtest/content-tags.jsonl` (else
//! `~/.cache/…`; `GRIDTEST_CACHE_DIR` overrides the folder), so an unchanged file is not read
//! again, in this process or the next.
//!
//! The change time is what makes the cache safe: a write in place that keeps the size and has
//! its modification time set back (`touch -d`, `cp -p` over the file, a tool restoring times)
//! leaves `inode-mtime-size` as it was, but any write or time change moves the change time,
//! which no user call can set. A file changed so is hashed again (to the file system's timestamp
//! granularity, a few milliseconds).

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use super::dataset::Dataset;
use super::error::{DataError, Result};
use super::layout::DataObject;
use sha2::{Digest, Sha256};

/// One cached tag: the file, its store ETag (inode-mtime-size) when hashed, and the tag.
#[derive(Serialize, Deserialize)]
struct CacheLine {
    path: PathBuf,
    stat: String,
    tag: String,
}

struct Cache {
    tags: HashMap<(PathBuf, String), String>,
    file: Option<PathBuf>,
}

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        let file = cache_dir().map(|d| d.join("content-tags.jsonl"));
        let mut tags = HashMap::new();
        if let Some(Ok(f)) = file.as_ref().map(std::fs::File::open) {
            for line in std::io::BufReader::new(f).lines().map_while(Result::ok) {
                if let Ok(l) = serde_json::from_str::<CacheLine>(&line) {
                    tags.insert((l.path, l.stat), l.tag);
                }
            }
        }
        Mutex::new(Cache { tags, file })
    })
}

fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("GRIDTEST_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("gridtest")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/gridtest")))
}

/// For a local dataset, replaces the store's ETags (inode-mtime-size) of `objects` by content
/// tags (see [`super::content_tag`]); other stores' ETags are kept. Only the files given are
/// read (a shard's, never its neighbours').
///
/// # Errors
/// [`DataError::Unreadable`] naming a file that cannot be read.
pub async fn tag_contents(dataset: &Dataset, objects: Vec<DataObject>) -> Result<Vec<DataObject>> {
    if dataset.url().scheme() != "file" {
        return Ok(objects);
    }
    let dataset = dataset.clone();
    tokio::task::spawn_blocking(move || {
        let tag = |mut object: DataObject| {
            let url = dataset.object_url(&object.meta.location);
            let path = super::layout::local_path(&object.meta.location);
            let stat = object.meta.e_tag.take().unwrap_or_default();
            let tag = content_tag(&path, &stat).map_err(|e| DataError::Unreadable {
                file: url,
                reason: e.to_string(),
            })?;
            object.meta.e_tag = Some(tag);
            Ok(object)
        };
        // Files are hashed on every core, each thread a run of them, in order.
        let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let per_thread = objects.len().div_ceil(threads).max(1);
        let mut objects = objects.into_iter();
        let runs: Vec<Vec<DataObject>> = std::iter::from_fn(|| {
            let run: Vec<_> = objects.by_ref().take(per_thread).collect();
            (!run.is_empty()).then_some(run)
        })
        .collect();
        std::thread::scope(|scope| {
            let hashing: Vec<_> = runs
                .into_iter()
                .map(|run| {
                    scope.spawn(move || run.into_iter().map(tag).collect::<Result<Vec<_>>>())
                })
                .collect();
            let mut tagged = Vec::new();
            for thread in hashing {
                tagged.extend(thread.join().expect("hashing a file does not panic")?);
            }
            Ok(tagged)
        })
    })
    .await
    .map_err(|e| DataError::InvalidLocation {
        location: "(hashing local files)".to_owned(),
        reason: e.to_string(),
    })?
}

/// The content tag of the local file at `path` (`sha256:<hex>`), `stat` being the store's
/// ETag for it (inode-mtime-size): from the cache when that version was hashed before.
///
/// # Errors
/// The file cannot be read.
pub(crate) fn content_tag(path: &Path, stat: &str) -> std::io::Result<String> {
    let key = (path.to_path_buf(), with_change_time(path, stat)?);
    if let Some(tag) = cache().lock().expect("cache lock").tags.get(&key) {
        return Ok(tag.clone());
    }
    let tag = hash_file(path)?;
    let mut cache = cache().lock().expect("cache lock");
    if let Some(file) = cache.file.clone() {
        // Best effort: a cache that cannot be written only costs a re-hash next time.
        let line = serde_json::to_string(&CacheLine {
            path: key.0.clone(),
            stat: key.1.clone(),
            tag: tag.clone(),
        })
        .expect("cache lines serialise");
        let appended = file
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| {
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&file)?;
                f.write_all(format!("{line}\n").as_bytes())
            });
        if let Err(e) = appended {
            tracing::debug!(cache = %file.display(), error = %e, "content-tag cache not written");
        }
    }
    cache.tags.insert(key, tag.clone());
    Ok(tag)
}

/// The file's version as the cache knows it: the store's ETag and the file's change time.
#[cfg(unix)]
fn with_change_time(path: &Path, stat: &str) -> std::io::Result<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok(format!(
        "{stat} ctime:{}.{:09}",
        meta.ctime(),
        meta.ctime_nsec()
    ))
}

/// The file's version as the cache knows it (no change time on this platform: the ETag).
#[cfg(not(unix))]
fn with_change_time(_path: &Path, stat: &str) -> std::io::Result<String> {
    Ok(stat.to_owned())
}

/// SHA-256 of the file's bytes, `sha256:<hex>`.
fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    // One buffer per hashing thread: a dataset of many small files would otherwise zero a fresh
    // megabyte per file.
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 1 << 20]);
    }
    BUFFER.with_borrow_mut(|buffer| -> std::io::Result<()> {
        loop {
            let n = file.read(buffer)?;
            if n == 0 {
                return Ok(());
            }
            super::read_meter::count(n as u64);
            hasher.update(&buffer[..n]);
        }
    })?;
    let digest = hasher.finalize();
    Ok(format!(
        "sha256:{}",
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_follows_the_bytes_not_the_file_times() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.parquet");
        let b = dir.path().join("b.parquet");
        std::fs::write(&a, b"same bytes").unwrap();
        std::fs::write(&b, b"same bytes").unwrap();
        let ta = content_tag(&a, "stat-a").unwrap();
        assert_eq!(ta, content_tag(&b, "stat-b").unwrap());
        // Python: hashlib.sha256(b"same bytes").hexdigest()
        assert_eq!(
            ta,
            "sha256:58100dc8fc06562ce3e578231dc948e083520ee49c4b4ee5a5a28bb4b4003feb"
        );
        std::fs::write(&b, b"other bytes").unwrap();
        assert_ne!(ta, content_tag(&b, "stat-b2").unwrap());
    }

    #[test]
    fn a_same_size_edit_with_its_time_set_back_is_hashed_again() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.parquet");
        std::fs::write(&a, b"first bytes").unwrap();
        let modified = std::fs::metadata(&a).unwrap().modified().unwrap();
        // The store's ETag (inode-mtime-size) is the same before and after: the test passes
        // the same string both times, as the store would.
        let before = content_tag(&a, "inode-mtime-11").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&a, b"other bytes").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        assert_eq!(std::fs::metadata(&a).unwrap().modified().unwrap(), modified);
        let after = content_tag(&a, "inode-mtime-11").unwrap();
        assert_ne!(before, after, "the cache served the old bytes' tag");
        assert_eq!(after, hash_file(&a).unwrap());
    }
}
