//! Placing a finished sweep's output files: into a local folder all or nothing, or under a
//! results root (a local folder or an object store, streamed in parts); and checking a folder
//! can receive them before anything is computed.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::buffered::BufWriter as StoreWriter;
use object_store::{ObjectStore, ObjectStoreExt};
use tokio::io::AsyncWriteExt;

use super::{OPTIONAL_FILES, OUTPUT_FILES, SPEC_JSON, output_error};
use crate::storage::Location;
use crate::sweep::SweepError;

/// The output files present in `from`: [`OUTPUT_FILES`], then those of [`OPTIONAL_FILES`] it
/// holds.
fn present_files(from: &Path) -> Vec<&'static str> {
    let optional = OPTIONAL_FILES
        .into_iter()
        .filter(|n| from.join(n).is_file());
    OUTPUT_FILES.into_iter().chain(optional).collect()
}

/// The optional files a copy of `names` removes from its target: all absent ones but the spec
/// (a results root's `spec.json` is the ledger's, written before any output).
fn stale_files<'a>(names: &'a [&str]) -> impl Iterator<Item = &'static str> + 'a {
    OPTIONAL_FILES
        .into_iter()
        .filter(move |n| *n != SPEC_JSON && !names.contains(n))
}

/// Copies the output files of `from` into `dir` (created if needed), all or nothing: each is
/// first copied in full under a temporary name beside its target, and only when all three are
/// complete are they renamed into place. A full disk or a failing write leaves the previous
/// files untouched and no temporary file behind.
///
/// # Errors
/// [`SweepError::Output`] naming the file that could not be written.
pub fn write_all(from: &Path, dir: &Path) -> Result<(), SweepError> {
    std::fs::create_dir_all(dir).map_err(|e| output_error(dir, e))?;
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let discard = |staged: &[(PathBuf, PathBuf)]| {
        for (temporary, _) in staged {
            let _ = std::fs::remove_file(temporary);
        }
    };
    let names = present_files(from);
    for &name in &names {
        let target = dir.join(name);
        let temporary = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        staged.push((temporary.clone(), target.clone()));
        let copied = place_copy(&from.join(name), &temporary);
        if let Err(e) = copied {
            discard(&staged);
            return Err(output_error(&target, e));
        }
    }
    for (i, (temporary, target)) in staged.iter().enumerate() {
        if let Err(e) = std::fs::rename(temporary, target) {
            discard(&staged[i..]);
            return Err(output_error(target, e));
        }
    }
    for stale in stale_files(&names) {
        let _ = std::fs::remove_file(dir.join(stale));
    }
    Ok(())
}

/// Puts a copy of `from` at `to`: a hard link where both are on one file system and `to` is
/// free (instant, and `from` is never written again), else a full copy flushed to the disk.
fn place_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to)?;
    File::open(to)?.sync_all()
}

/// Puts the output files of `from` under `location` (a results root's `sweeps/<id>/`): on a
/// local root as [`write_all`] does; on S3 streamed in parts (multipart upload), so a file of
/// any size goes through a bounded buffer.
///
/// # Errors
/// [`SweepError::Output`] naming the object that could not be written.
pub async fn write_to_store(from: &Path, location: &Location) -> Result<(), SweepError> {
    if let Some(local) = location.local_path() {
        return write_all(from, &local);
    }
    let (store, dir) = location.store().map_err(|e| SweepError::Output {
        path: location.to_string(),
        reason: e.to_string(),
    })?;
    let names = present_files(from);
    for stale in stale_files(&names) {
        let _ = store.delete(&dir.clone().join(stale)).await;
    }
    for name in names {
        let path = dir.clone().join(name);
        let fail = |e: &dyn std::fmt::Display| SweepError::Output {
            path: location.object_url(&path),
            reason: e.to_string(),
        };
        let mut file = tokio::fs::File::open(from.join(name))
            .await
            .map_err(|e| fail(&e))?;
        let mut upload = StoreWriter::new(Arc::clone(&store) as Arc<dyn ObjectStore>, path.clone());
        let copied = tokio::io::copy(&mut file, &mut upload).await;
        match copied {
            Ok(_) => upload.shutdown().await.map_err(|e| fail(&e))?,
            Err(e) => {
                let _ = upload.abort().await;
                return Err(fail(&e));
            }
        }
    }
    Ok(())
}

/// Makes sure `dir` can receive the output: creates it if needed and writes (then removes) a
/// probe file. Called before a sweep computes anything.
///
/// # Errors
/// [`SweepError::Output`] naming the folder: it is a file, lies under a file, or is not writable.
pub fn prepare_dir(dir: &Path) -> Result<(), SweepError> {
    let unusable = |reason: String| SweepError::Output {
        path: dir.display().to_string(),
        reason: format!("cannot be the output folder: {reason}"),
    };
    if dir.exists() && !dir.is_dir() {
        return Err(unusable("it is a file".to_owned()));
    }
    std::fs::create_dir_all(dir).map_err(|e| unusable(e.to_string()))?;
    let probe = dir.join(format!(".gridtest-probe-{}", std::process::id()));
    write_synced(&probe, b"probe").map_err(|e| unusable(format!("not writable: {e}")))?;
    std::fs::remove_file(&probe).map_err(|e| unusable(e.to_string()))?;
    Ok(())
}

/// Writes `bytes` to `path` and flushes them to the disk (so a full disk fails here, not later).
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
