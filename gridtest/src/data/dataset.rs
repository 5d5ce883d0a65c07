//! `Dataset`: a root URL of hive-partitioned Parquet, and the object store that serves it.

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::NaiveDate;
use object_store::ObjectStore;
use object_store::path::Path;
use serde::{Deserialize, Serialize};
use url::Url;

use super::error::{DataError, Result};
use super::shard::Shard;
use crate::strategy::DataKind;

/// A dataset: Parquet files laid out `ROOT/symbol=SYM/date=YYYY-MM-DD/*.parquet`, holding ticks
/// (`ts`, `price`, `size`) or bars (`ts`, `open`, `high`, `low`, `close`, `volume`), `ts` a UTC
/// timestamp in ns.
///
/// The root is a URL: `file:///abs/path` (a plain path is accepted and made absolute) or
/// `s3://bucket/prefix` (credentials, region and endpoint from the usual `AWS_*` variables).
///
/// ```
/// use gridtest::{DataKind, data::Dataset};
/// let ds = Dataset::try_new("/tmp/ticks", DataKind::Ticks).unwrap();
/// assert_eq!(ds.url().as_str(), "file:///tmp/ticks/");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dataset {
    url: Url,
    kind: DataKind,
}

impl Dataset {
    /// A dataset at `location` (a URL or a local path).
    ///
    /// # Errors
    /// [`DataError::InvalidLocation`] for an unsupported scheme or an unusable path.
    pub fn try_new(location: &str, kind: DataKind) -> Result<Self> {
        let invalid = |reason: String| DataError::InvalidLocation {
            location: location.to_owned(),
            reason,
        };
        let mut url = match Url::parse(location) {
            Ok(url) if url.scheme().len() > 1 => url,
            _ => {
                // Resolve `..` and symlinks when the path exists (object_store rejects `..`).
                let abs = std::fs::canonicalize(location)
                    .or_else(|_| std::path::absolute(location))
                    .map_err(|e| invalid(e.to_string()))?;
                Url::from_directory_path(&abs)
                    .map_err(|()| invalid("not an absolute path".to_owned()))?
            }
        };
        match url.scheme() {
            "file" => {}
            "s3" => {
                if url.host_str().is_none_or(str::is_empty) {
                    return Err(invalid(
                        "an s3 URL needs a bucket: s3://bucket/prefix".into(),
                    ));
                }
            }
            other => {
                return Err(invalid(format!(
                    "unsupported scheme `{other}` (use a path, file:// or s3://)"
                )));
            }
        }
        if !url.path().ends_with('/') {
            let path = format!("{}/", url.path());
            url.set_path(&path);
        }
        Ok(Self { url, kind })
    }

    /// The root URL (always ends with `/`).
    #[must_use]
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// Ticks or bars.
    #[must_use]
    pub fn kind(&self) -> DataKind {
        self.kind
    }

    /// The base URL the object store is registered under (`file:///` or `s3://bucket`).
    #[must_use]
    pub fn store_url(&self) -> Url {
        let mut base = self.url.clone();
        base.set_path("/");
        base
    }

    /// Builds the object store serving the dataset, and the root's path inside it.
    ///
    /// # Errors
    /// [`DataError::Store`] if the store cannot be configured.
    pub fn store(&self) -> Result<(Arc<dyn ObjectStore>, Path)> {
        let url = self.url.as_str().to_owned();
        let store: Arc<dyn ObjectStore> = match self.url.scheme() {
            "s3" => Arc::new(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(self.url.as_str())
                    .build()
                    .map_err(|source| DataError::Store {
                        url: url.clone(),
                        source,
                    })?,
            ),
            _ => Arc::new(object_store::local::LocalFileSystem::new()),
        };
        let path =
            Path::from_url_path(self.url.path()).map_err(|e| DataError::InvalidLocation {
                location: url,
                reason: e.to_string(),
            })?;
        Ok((store, path))
    }

    /// The URL of an object of the dataset's store.
    #[must_use]
    pub fn object_url(&self, path: &Path) -> String {
        let mut u = self.store_url();
        u.set_path(&format!("/{path}"));
        u.to_string()
    }

    /// Symbols present (`symbol=…` directories), sorted.
    ///
    /// # Errors
    /// [`DataError::Store`] when listing fails.
    pub async fn symbols(&self) -> Result<Vec<String>> {
        let (store, root) = self.store()?;
        self.partition_values(&*store, &root, "symbol").await
    }

    /// Dates present for `symbol`, sorted.
    ///
    /// # Errors
    /// [`DataError::Store`] when listing fails.
    pub async fn dates(&self, symbol: &str) -> Result<Vec<NaiveDate>> {
        let (store, root) = self.store()?;
        let dir = root.clone().join(format!("symbol={symbol}"));
        let values = self.partition_values(&*store, &dir, "date").await?;
        Ok(values
            .iter()
            .filter_map(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
            .collect())
    }

    async fn partition_values(
        &self,
        store: &dyn ObjectStore,
        dir: &Path,
        key: &str,
    ) -> Result<Vec<String>> {
        let listing = store
            .list_with_delimiter(Some(dir))
            .await
            .map_err(|source| DataError::Store {
                url: self.object_url(dir),
                source,
            })?;
        let prefix = format!("{key}=");
        let values: BTreeSet<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename()?.strip_prefix(&prefix).map(str::to_owned))
            .collect();
        Ok(values.into_iter().collect())
    }

    /// Plans one shard per symbol (all symbols when `symbols` is `None`) over the dates present
    /// between `from` and `to` (inclusive; open ends when `None`). Listing only: no file is
    /// opened.
    ///
    /// # Errors
    /// [`DataError::Empty`] for a dataset with no partitions, [`DataError::UnknownSymbol`] for a
    /// requested symbol that is absent, [`DataError::NoFiles`] for a symbol with no date in range.
    pub async fn plan_shards(
        &self,
        symbols: Option<&[String]>,
        from: Option<NaiveDate>,
        to: Option<NaiveDate>,
    ) -> Result<Vec<Shard>> {
        let present = self.symbols().await?;
        if present.is_empty() {
            return Err(DataError::Empty {
                url: self.url.to_string(),
            });
        }
        let wanted: Vec<String> = match symbols {
            Some(list) => {
                for s in list {
                    if !present.contains(s) {
                        return Err(DataError::UnknownSymbol {
                            symbol: s.clone(),
                            url: self.url.to_string(),
                            known: summary(&present),
                        });
                    }
                }
                list.to_vec()
            }
            None => present,
        };
        let mut shards = Vec::with_capacity(wanted.len());
        for symbol in wanted {
            let dates: Vec<NaiveDate> = self
                .dates(&symbol)
                .await?
                .into_iter()
                .filter(|d| from.is_none_or(|f| *d >= f) && to.is_none_or(|t| *d <= t))
                .collect();
            let (Some(first), Some(last)) = (dates.first(), dates.last()) else {
                return Err(DataError::NoFiles {
                    shard: format!(
                        "{symbol}:{}..{}",
                        from.map(|d| d.to_string()).unwrap_or_default(),
                        to.map(|d| d.to_string()).unwrap_or_default()
                    ),
                });
            };
            shards.push(Shard::new(symbol, *first, *last));
        }
        Ok(shards)
    }
}

fn summary(items: &[String]) -> String {
    let mut s = items.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > 8 {
        s.push_str(&format!(", … ({} in all)", items.len()));
    }
    s
}
