//! How many bytes this process read from datasets: every object store a [`Dataset`] opens is
//! metered (the bytes each `GET` serves: footers, column chunks, whole objects), and so is the
//! hashing of local files for their content tags. A sweep reports the growth of this count on
//! each node against its dataset's size: reads that follow the data stay near 1×.
//!
//! [`Dataset`]: super::Dataset

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

static BYTES_READ: AtomicU64 = AtomicU64::new(0);

/// A reading of a process's count, as a node sends it to the head: the process (several nodes
/// of one process share its count) and the bytes it had read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessReads {
    /// This process, drawn at random when it first reads its count.
    pub process: u64,
    /// Bytes read from datasets so far ([`bytes_read`]).
    pub bytes: u64,
}

impl ProcessReads {
    /// This process's count now.
    #[must_use]
    pub fn now() -> Self {
        static PROCESS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        Self {
            process: *PROCESS.get_or_init(rand::random),
            bytes: bytes_read(),
        }
    }
}

/// What a sweep read: the bytes its nodes read from the dataset while it ran (planning
/// included), and the bytes of the files its manifest holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataReads {
    /// Bytes read from the dataset by every process of the sweep while it ran.
    pub bytes_read: u64,
    /// Bytes of the files the sweep's manifest holds.
    pub dataset_bytes: u64,
}

impl DataReads {
    /// Bytes read per byte of the dataset (0 for an empty dataset).
    #[must_use]
    pub fn ratio(&self) -> f64 {
        if self.dataset_bytes == 0 {
            0.0
        } else {
            self.bytes_read as f64 / self.dataset_bytes as f64
        }
    }
}

/// Bytes this process has read from datasets since it started.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// let before = gridtest::data::bytes_read();
/// assert!(gridtest::data::bytes_read() >= before);
/// ```
#[must_use]
pub fn bytes_read() -> u64 {
    BYTES_READ.load(Ordering::Relaxed)
}

/// Counts `n` bytes read.
pub(crate) fn count(n: u64) {
    BYTES_READ.fetch_add(n, Ordering::Relaxed);
}

/// An object store whose reads are counted in [`bytes_read`].
#[derive(Debug)]
pub(crate) struct MeteredStore {
    inner: Arc<dyn ObjectStore>,
}

impl MeteredStore {
    pub(crate) fn wrap(inner: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
        Arc::new(Self { inner })
    }
}

impl std::fmt::Display for MeteredStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Metered({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for MeteredStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let head = options.head;
        let got = self.inner.get_opts(location, options).await?;
        if !head {
            count(got.range.end.saturating_sub(got.range.start));
        }
        Ok(got)
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> Result<Vec<bytes::Bytes>> {
        let got = self.inner.get_ranges(location, ranges).await?;
        count(got.iter().map(|b| b.len() as u64).sum());
        Ok(got)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await
    }
}

#[cfg(test)]
mod tests {
    use object_store::ObjectStoreExt;

    use super::*;

    #[tokio::test]
    async fn the_bytes_each_read_serves_are_counted_and_listing_is_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bin"), vec![7u8; 1000]).unwrap();
        let local = object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap();
        let store = MeteredStore::wrap(Arc::new(local));
        let path = Path::from("a.bin");
        // Other tests read datasets in this process at the same time: each step is checked
        // as a lower bound, the exact sum against a store of one's own below.
        let before = bytes_read();
        let _ = store.list_with_delimiter(None).await.unwrap();
        assert_eq!(store.get_range(&path, 10..110).await.unwrap().len(), 100);
        let ranges = store.get_ranges(&path, &[0..5, 500..520]).await.unwrap();
        assert_eq!(ranges.iter().map(|b| b.len()).sum::<usize>(), 25);
        let whole = store.get(&path).await.unwrap().bytes().await.unwrap();
        assert_eq!(whole.len(), 1000);
        let _ = store.head(&path).await.unwrap();
        assert!(bytes_read() - before >= 1125);
    }
}
