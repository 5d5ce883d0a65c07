//! Content tags of local files: a hash of the bytes, so that a file's identity in a sweep's
//! manifest (and so the sweep id) survives `touch`, `cp` without `-p` or a fresh checkout, and
//! changes with any byte.
//!
//! The local object store's own ETag is `inode-mtime-size`, which changes without the content
//! changing. Hashing is paid once per file version: tags are cached by that ETag, in memory and
//! in `$XDG_CACHE_HOME/gridtest/content-tags.jsonl` (else `~/.cache/…`; `GRIDTEST_CACHE_DIR`
//! overrides the folder), so an unchanged file is not read again, in this process or the next.

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};
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

/// The content tag of the local file at `path` (`sha256:<hex>`), `stat` being the store's
/// ETag for it (inode-mtime-size): from the cache when that version was hashed before.
///
/// # Errors
/// The file cannot be read.
pub(crate) fn content_tag(path: &Path, stat: &str) -> std::io::Result<String> {
    let key = (path.to_path_buf(), stat.to_owned());
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

/// SHA-256 of the file's bytes, `sha256:<hex>`.
fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
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
        // A cached version is not read again: same stat, same tag, even if the bytes changed
        // behind the cache's back (which a real ETag change would reveal).
        std::fs::write(&a, b"changed without a new stat").unwrap();
        assert_eq!(ta, content_tag(&a, "stat-a").unwrap());
    }
}
