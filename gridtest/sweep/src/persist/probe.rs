//! Checking a results root before a sweep relies on it.

use object_store::{ObjectStoreExt, PutPayload};

use super::PersistError;
use crate::storage::Location;

/// Checks that `root` accepts writes: puts a small probe object under it and deletes it again.
/// Run before computing, so a read-only, unreachable or misspelt results root is reported in
/// seconds, not after the sweep.
///
/// # Errors
/// [`PersistError::Unwritable`] naming the root and the store's reason.
pub async fn probe_root(root: &Location) -> Result<(), PersistError> {
    let unwritable = |reason: String| PersistError::Unwritable {
        root: root.to_string(),
        reason,
    };
    if root.url().scheme() == "file"
        && let Ok(dir) = root.url().to_file_path()
        && dir.exists()
        && !dir.is_dir()
    {
        return Err(unwritable("it is a file, not a directory".to_owned()));
    }
    let (store, path) = root.store().map_err(|e| unwritable(e.to_string()))?;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let probe = path.join(format!(".gridtest-probe-{}-{nonce}", std::process::id()));
    store
        .put(&probe, PutPayload::from_static(b"probe"))
        .await
        .map_err(|e| unwritable(e.to_string()))?;
    store
        .delete(&probe)
        .await
        .map_err(|e| unwritable(e.to_string()))?;
    Ok(())
}
