//! The staging area of an ingest: a hidden directory under the output root that no sweep reads,
//! removed when the ingest ends, whether it moved its partitions into place or failed.

use std::collections::BTreeMap;

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::IngestError;
use crate::data::{DataError, Dataset, decode_partition_value};

/// A staging area of one ingest.
pub(super) struct Staging {
    path: ObjectPath,
    local: Option<std::path::PathBuf>,
}

impl Staging {
    /// A fresh area under `root` (`_ingest-<pid>-<ns>`); nothing is created until written to.
    pub(super) fn new(output: &Dataset, root: &ObjectPath) -> Result<Self, IngestError> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let name = format!("_ingest-{}-{stamp}", std::process::id());
        let path = super::partitions::child(root, &name)?;
        let local = (output.url().scheme() == "file")
            .then(|| output.url().to_file_path().ok())
            .flatten()
            .map(|root| root.join(&name));
        Ok(Self { path, local })
    }

    pub(super) fn path(&self) -> &ObjectPath {
        &self.path
    }

    /// Removes whatever is left in the area (everything, after a failure): best effort, a
    /// leftover hidden directory is ignored by sweeps and named in their warnings.
    pub(super) async fn remove(&self, store: &dyn ObjectStore) {
        if let Some(dir) = &self.local {
            if let Err(e) = std::fs::remove_dir_all(dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(dir = %dir.display(), error = %e, "staging area not removed");
            }
            return;
        }
        let Ok(left) = store.list(Some(&self.path)).try_collect::<Vec<_>>().await else {
            return;
        };
        for meta in left {
            let _ = store.delete(&meta.location).await;
        }
    }
}

/// The symbols the dataset at `root` holds already, with their directories' names as spelled
/// there: an ingest writes into them rather than beside them.
pub(super) async fn symbol_dirs(
    output: &Dataset,
    store: &dyn ObjectStore,
    root: &ObjectPath,
) -> Result<BTreeMap<String, String>, IngestError> {
    if output.url().scheme() == "file"
        && output
            .url()
            .to_file_path()
            .is_ok_and(|p| !p.components().collect::<std::path::PathBuf>().is_dir())
    {
        return Ok(BTreeMap::new());
    }
    let top = store
        .list_with_delimiter(Some(root))
        .await
        .map_err(|source| DataError::Store {
            url: output.url().to_string(),
            source,
        })?;
    Ok(top
        .common_prefixes
        .iter()
        .filter_map(|dir| {
            let name = dir.filename()?;
            let symbol = decode_partition_value(name.strip_prefix("symbol=")?)?;
            Some((symbol, name.to_owned()))
        })
        .collect())
}
