//! Locations of datasets and results: a local path, `file://` or `s3://` URL, and the
//! object store that serves it. Everything gridtest reads or writes goes through object_store,
//! so local disks and S3 share one code path.

use std::sync::Arc;
#[cfg(feature = "s3")]
use std::time::Duration;

use object_store::ObjectStore;
use object_store::path::Path;
use serde::{Deserialize, Serialize};
use url::Url;

/// Why an `s3://` location is refused by a binary built without the `s3` feature.
const S3_NOT_BUILT: &str =
    "s3:// needs gridtest's `s3` feature, which this binary was built without";

/// Why a location is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocationError {
    /// Not a usable URL or path.
    #[error("invalid location `{location}`: {reason}")]
    Invalid {
        /// What was given.
        location: String,
        /// Why.
        reason: String,
    },
    /// The store cannot be configured.
    #[error("cannot configure the store for `{url}`: {source}")]
    Store {
        /// The URL.
        url: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
}

/// A directory-like location: a URL that always ends with `/`.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::storage::Location;
/// let l = Location::parse("/tmp/results").unwrap();
/// assert_eq!(l.url().as_str(), "file:///tmp/results/");
/// assert_eq!(l.join("sweeps/abc").url().as_str(), "file:///tmp/results/sweeps/abc/");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    url: Url,
}

impl Location {
    /// Parses a local path (made absolute; `..` resolved when it exists), a `file://` or an
    /// `s3://bucket/prefix` URL.
    ///
    /// # Errors
    /// [`LocationError::Invalid`] for an unsupported scheme or an unusable path.
    pub fn parse(location: &str) -> Result<Self, LocationError> {
        let invalid = |reason: String| LocationError::Invalid {
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
            "s3" if !cfg!(feature = "s3") => return Err(invalid(S3_NOT_BUILT.into())),
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
        Ok(Self { url })
    }

    /// The URL (ends with `/`).
    #[must_use]
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The folder on this machine, for a `file://` location.
    #[must_use]
    pub fn local_path(&self) -> Option<std::path::PathBuf> {
        (self.url.scheme() == "file")
            .then(|| self.url.to_file_path().ok())
            .flatten()
    }

    /// A sub-location.
    #[must_use]
    pub fn join(&self, relative: &str) -> Self {
        let mut url = self.url.clone();
        let path = format!("{}{}/", url.path(), relative.trim_matches('/'));
        url.set_path(&path);
        Self { url }
    }

    /// The URL the store is registered under (`file:///` or `s3://bucket`).
    #[must_use]
    pub fn store_url(&self) -> Url {
        let mut base = self.url.clone();
        base.set_path("/");
        base
    }

    /// The object store and this location's path inside it.
    ///
    /// # Errors
    /// [`LocationError`] if the store cannot be configured.
    pub fn store(&self) -> Result<(Arc<dyn ObjectStore>, Path), LocationError> {
        let store: Arc<dyn ObjectStore> = match self.url.scheme() {
            #[cfg(feature = "s3")]
            "s3" => Arc::new(
                object_store::aws::AmazonS3Builder::from_env()
                    .with_url(self.url.as_str())
                    .with_retry(retry_config())
                    .build()
                    .map_err(|source| LocationError::Store {
                        url: self.url.to_string(),
                        source,
                    })?,
            ),
            #[cfg(not(feature = "s3"))]
            "s3" => {
                return Err(LocationError::Invalid {
                    location: self.url.to_string(),
                    reason: S3_NOT_BUILT.into(),
                });
            }
            _ => Arc::new(object_store::local::LocalFileSystem::new()),
        };
        let path = Path::from_url_path(self.url.path()).map_err(|e| LocationError::Invalid {
            location: self.url.to_string(),
            reason: e.to_string(),
        })?;
        Ok((store, path))
    }

    /// The full URL of an object of this location's store.
    #[must_use]
    pub fn object_url(&self, path: &Path) -> String {
        let mut u = self.store_url();
        u.set_path(&format!("/{path}"));
        u.to_string()
    }
}

/// Retries of a remote store: `GRIDTEST_STORE_RETRIES` attempts (default 3) with exponential
/// back-off from 100 ms to 2 s, all within `GRIDTEST_STORE_RETRY_S` seconds (default 15); then
/// the request fails with the store's error, naming the URL.
#[cfg(feature = "s3")]
fn retry_config() -> object_store::RetryConfig {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    object_store::RetryConfig {
        backoff: object_store::BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: usize::try_from(env("GRIDTEST_STORE_RETRIES", 3)).unwrap_or(3),
        retry_timeout: Duration::from_secs(env("GRIDTEST_STORE_RETRY_S", 15)),
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.url.fmt(f)
    }
}

#[cfg(all(test, not(feature = "s3")))]
mod tests {
    use super::*;

    #[test]
    fn without_the_s3_feature_an_s3_location_names_the_feature() {
        let err = Location::parse("s3://bucket/ticks")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`s3` feature"), "{err}");
        assert!(Location::parse("/tmp/ticks").is_ok());
    }
}
