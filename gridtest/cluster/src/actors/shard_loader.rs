//! `ShardLoader`: loads each shard once per node and shares it by `Arc`, within a byte budget.
//!
//! One loader serves every dataset the node is asked to read (one `ShardReader` per dataset).
//! Concurrent requests for one shard are coalesced into one read. Shards are kept in an LRU
//! cache bounded by `budget_bytes`; a shard larger than the whole budget is not cached: the
//! requester gets [`ShardHandle::Stream`] and streams it batch by batch, so memory stays bounded
//! whatever the length of the history. Data errors (a bad file) are remembered for the life of
//! the loader; store errors are not, so a later request retries.
//!
//! A request names the digest of the shard's files as the sweep's manifest records them: the
//! loader reads the shard only once its own listing agrees (see
//! [`ShardReader::inspect_as_recorded`]), and keeps what it read under that digest, so a
//! shard changed between two sweeps is read again, never served from the cache.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::data::{DataError, Dataset, Shard, ShardData, ShardId, ShardInfo, ShardReader};

/// How long a requester waits for a shard: reading one from a remote store can take minutes,
/// but a loader that never answers must not hold a scorer (or a prefetch) forever.
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// How long a requester waits for the loader's list of cached shards (answered at once).
pub const CACHED_TIMEOUT: Duration = Duration::from_secs(5);

/// A data error shared between everyone who asked for the shard.
pub type SharedDataError = Arc<DataError>;

/// What a scorer gets for a shard.
#[derive(Clone, Debug)]
pub enum ShardHandle {
    /// Loaded and checked, shared.
    Loaded(Arc<ShardData>),
    /// Larger than the cache: stream it with this reader.
    Stream(Arc<ShardInfo>, Arc<ShardReader>),
}

/// Loader statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoaderStats {
    /// Shards read from storage.
    pub loads: u64,
    /// Requests served from the cache or coalesced with a running read.
    pub shared: u64,
    /// Wall time spent reading (summed over reads).
    pub load_time: Duration,
    /// Bytes cached now.
    pub cached_bytes: u64,
}

type Reply = RpcReplyPort<Result<ShardHandle, SharedDataError>>;
/// Dataset URL, shard, and the digest of its files the requester expects.
type CacheKey = (String, ShardId, Option<String>);

/// A shard wanted from the loader.
#[derive(Clone, Debug)]
pub struct ShardRequest {
    /// The dataset.
    pub dataset: Dataset,
    /// The shard.
    pub shard: Shard,
    /// The digest of its files as the sweep's manifest records them
    /// ([`crate::data::files_digest`]); `None`: read whatever is there.
    pub files_digest: Option<String>,
}

/// Messages of the [`ShardLoader`] (local to a node).
pub enum ShardLoaderMsg {
    /// Get a shard of a dataset (loading it if needed).
    Get(ShardRequest, Reply),
    /// The ids of the shards in memory.
    Cached(RpcReplyPort<Vec<ShardId>>),
    /// A read finished (internal).
    Loaded(CacheKey, Result<ShardHandle, DataError>, Duration),
    /// Statistics.
    Stats(RpcReplyPort<LoaderStats>),
}

// Local only, never crosses the wire (with the `cluster` feature; without it ractor implements
// `Message` for every sendable type).
#[cfg(feature = "cluster")]
impl ractor::Message for ShardLoaderMsg {}

/// Arguments of the [`ShardLoader`].
#[derive(Clone, Copy, Debug)]
pub struct ShardLoaderArgs {
    /// Cache budget in bytes.
    pub budget_bytes: u64,
}

/// State of the [`ShardLoader`].
pub struct ShardLoaderState {
    budget: u64,
    readers: HashMap<String, Arc<ShardReader>>,
    cache: HashMap<CacheKey, Arc<ShardData>>,
    lru: VecDeque<CacheKey>,
    waiting: HashMap<CacheKey, Vec<Reply>>,
    failed: HashMap<CacheKey, SharedDataError>,
    stats: LoaderStats,
}

impl ShardLoaderState {
    fn touch(&mut self, key: &CacheKey) {
        if let Some(pos) = self.lru.iter().position(|x| x == key) {
            let key = self.lru.remove(pos).expect("position is valid");
            self.lru.push_back(key);
        }
    }

    fn insert(&mut self, key: CacheKey, data: Arc<ShardData>) {
        self.stats.cached_bytes += data.bytes();
        self.cache.insert(key.clone(), data);
        self.lru.push_back(key);
        while self.stats.cached_bytes > self.budget && self.lru.len() > 1 {
            let Some(old) = self.lru.pop_front() else {
                break;
            };
            if let Some(d) = self.cache.remove(&old) {
                self.stats.cached_bytes -= d.bytes();
                tracing::debug!(shard = %old.1, "evicted from the shard cache");
            }
        }
    }

    /// Answers a request: from the cache, with a remembered error, with a read running for it,
    /// or with a read started now.
    fn get(&mut self, myself: &ActorRef<ShardLoaderMsg>, request: ShardRequest, reply: Reply) {
        let ShardRequest {
            dataset,
            shard,
            files_digest,
        } = request;
        let key = (dataset.url().to_string(), shard.id(), files_digest.clone());
        if let Some(data) = self.cache.get(&key).cloned() {
            self.stats.shared += 1;
            self.touch(&key);
            let _ = reply.send(Ok(ShardHandle::Loaded(data)));
            return;
        }
        if let Some(err) = self.failed.get(&key) {
            let _ = reply.send(Err(Arc::clone(err)));
            return;
        }
        if let Some(waiters) = self.waiting.get_mut(&key) {
            self.stats.shared += 1;
            waiters.push(reply);
            return;
        }
        let reader = match self.reader(&dataset) {
            Ok(r) => r,
            Err(e) => {
                let _ = reply.send(Err(Arc::new(e)));
                return;
            }
        };
        self.waiting.insert(key.clone(), vec![reply]);
        let (budget, myself) = (self.budget, myself.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            // A panic in a reader must not leave the waiters hanging.
            let read = read(reader, &shard, files_digest.as_deref(), budget);
            let result = std::panic::AssertUnwindSafe(read)
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    Err(DataError::Unreadable {
                        file: shard.to_string(),
                        reason: "the reader panicked".to_owned(),
                    })
                });
            let _ = myself.cast(ShardLoaderMsg::Loaded(key, result, started.elapsed()));
        });
    }

    fn reader(&mut self, dataset: &Dataset) -> Result<Arc<ShardReader>, DataError> {
        let url = dataset.url().to_string();
        if let Some(r) = self.readers.get(&url) {
            return Ok(Arc::clone(r));
        }
        let reader = Arc::new(ShardReader::try_new(dataset)?);
        self.readers.insert(url, Arc::clone(&reader));
        Ok(reader)
    }
}

/// The shard loader actor (one per node).
#[derive(Debug, Default)]
pub struct ShardLoader;

impl Actor for ShardLoader {
    type Msg = ShardLoaderMsg;
    type State = ShardLoaderState;
    type Arguments = ShardLoaderArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: ShardLoaderArgs,
    ) -> Result<Self::State, ActorProcessingErr> {
        Ok(ShardLoaderState {
            budget: args.budget_bytes,
            readers: HashMap::new(),
            cache: HashMap::new(),
            lru: VecDeque::new(),
            waiting: HashMap::new(),
            failed: HashMap::new(),
            stats: LoaderStats::default(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ShardLoaderMsg::Get(request, reply) => state.get(&myself, request, reply),
            ShardLoaderMsg::Cached(reply) => {
                let _ = reply.send(state.lru.iter().map(|k| k.1.clone()).collect());
            }
            ShardLoaderMsg::Loaded(key, result, took) => {
                state.stats.load_time += took;
                let waiters = state.waiting.remove(&key).unwrap_or_default();
                let result = match result {
                    Ok(handle) => {
                        if let ShardHandle::Loaded(data) = &handle {
                            state.stats.loads += 1;
                            tracing::info!(shard = %key.1, rows = data.n_rows(),
                                ms = took.as_millis() as u64, "shard loaded");
                            state.insert(key, Arc::clone(data));
                        }
                        Ok(handle)
                    }
                    Err(e) => {
                        let e = Arc::new(e);
                        // A store error may pass, and a node's view of the data may be mended
                        // (a mount restored): only errors of the data themselves are kept.
                        if !matches!(
                            *e,
                            DataError::Store { .. } | DataError::NotAsRecorded { .. }
                        ) {
                            state.failed.insert(key, Arc::clone(&e));
                        }
                        Err(e)
                    }
                };
                for w in waiters {
                    let _ = w.send(result.clone());
                }
            }
            ShardLoaderMsg::Stats(reply) => {
                let _ = reply.send(state.stats);
            }
        }
        Ok(())
    }
}

async fn read(
    reader: Arc<ShardReader>,
    shard: &Shard,
    files_digest: Option<&str>,
    budget: u64,
) -> Result<ShardHandle, DataError> {
    let info = Arc::new(reader.inspect_as_recorded(shard, files_digest).await?);
    if info.bytes_in_memory() > budget {
        tracing::info!(shard = %shard, bytes = info.bytes_in_memory(), budget,
            "shard exceeds the cache budget: scorers will stream it");
        return Ok(ShardHandle::Stream(info, reader));
    }
    let mut stream = reader.open_inspected(Arc::clone(&info)).await?;
    let mut batches = Vec::new();
    while let Some(b) = stream.next_batch().await {
        batches.push(b?);
    }
    Ok(ShardHandle::Loaded(Arc::new(ShardData::from_parts(
        Arc::unwrap_or_clone(info),
        batches,
    ))))
}
