//! `ShardLoader`: loads each shard once per node and shares it by `Arc`, within a byte budget.
//!
//! Concurrent requests for one shard are coalesced into one read. Shards are kept in an LRU
//! cache bounded by `budget_bytes`; a shard larger than the whole budget is not cached: the
//! requester gets [`ShardHandle::Stream`] and streams it batch by batch, so memory stays bounded
//! whatever the length of the history. Data errors (a bad file) are remembered for the life of
//! the loader; store errors are not, so a later request retries.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::data::{DataError, Shard, ShardData, ShardId, ShardInfo, ShardReader};

/// A data error shared between everyone who asked for the shard.
pub type SharedDataError = Arc<DataError>;

/// What a scorer gets for a shard.
#[derive(Clone, Debug)]
pub enum ShardHandle {
    /// Loaded and checked, shared.
    Loaded(Arc<ShardData>),
    /// Larger than the cache: stream it with the reader.
    Stream(Arc<ShardInfo>),
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

/// Messages of the [`ShardLoader`].
pub enum ShardLoaderMsg {
    /// Get a shard (loading it if needed).
    Get(Shard, RpcReplyPort<Result<ShardHandle, SharedDataError>>),
    /// A read finished (internal).
    Loaded(ShardId, Result<ShardHandle, DataError>, Duration),
    /// Statistics.
    Stats(RpcReplyPort<LoaderStats>),
}

impl ractor::Message for ShardLoaderMsg {}

/// Arguments of the [`ShardLoader`].
pub struct ShardLoaderArgs {
    /// The reader.
    pub reader: Arc<ShardReader>,
    /// Cache budget in bytes.
    pub budget_bytes: u64,
}

/// State of the [`ShardLoader`].
pub struct ShardLoaderState {
    reader: Arc<ShardReader>,
    budget: u64,
    cache: HashMap<ShardId, Arc<ShardData>>,
    lru: VecDeque<ShardId>,
    waiting: HashMap<ShardId, Vec<RpcReplyPort<Result<ShardHandle, SharedDataError>>>>,
    failed: HashMap<ShardId, SharedDataError>,
    stats: LoaderStats,
}

impl ShardLoaderState {
    fn touch(&mut self, id: &ShardId) {
        if let Some(pos) = self.lru.iter().position(|x| x == id) {
            let id = self.lru.remove(pos).expect("position is valid");
            self.lru.push_back(id);
        }
    }

    fn insert(&mut self, id: ShardId, data: Arc<ShardData>) {
        self.stats.cached_bytes += data.bytes();
        self.cache.insert(id.clone(), data);
        self.lru.push_back(id);
        while self.stats.cached_bytes > self.budget && self.lru.len() > 1 {
            let Some(old) = self.lru.pop_front() else {
                break;
            };
            if let Some(d) = self.cache.remove(&old) {
                self.stats.cached_bytes -= d.bytes();
                tracing::debug!(shard = %old, "evicted from the shard cache");
            }
        }
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
            reader: args.reader,
            budget: args.budget_bytes,
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
            ShardLoaderMsg::Get(shard, reply) => {
                let id = shard.id();
                if let Some(data) = state.cache.get(&id).cloned() {
                    state.stats.shared += 1;
                    state.touch(&id);
                    let _ = reply.send(Ok(ShardHandle::Loaded(data)));
                } else if let Some(err) = state.failed.get(&id) {
                    let _ = reply.send(Err(Arc::clone(err)));
                } else if let Some(waiters) = state.waiting.get_mut(&id) {
                    state.stats.shared += 1;
                    waiters.push(reply);
                } else {
                    state.waiting.insert(id.clone(), vec![reply]);
                    let reader = Arc::clone(&state.reader);
                    let budget = state.budget;
                    tokio::spawn(async move {
                        let started = Instant::now();
                        // A panic in a reader must not leave the waiters hanging.
                        let result = std::panic::AssertUnwindSafe(read(&reader, &shard, budget))
                            .catch_unwind()
                            .await
                            .unwrap_or_else(|_| {
                                Err(DataError::Unreadable {
                                    file: shard.to_string(),
                                    reason: "the reader panicked".to_owned(),
                                })
                            });
                        let _ = myself.cast(ShardLoaderMsg::Loaded(id, result, started.elapsed()));
                    });
                }
            }
            ShardLoaderMsg::Loaded(id, result, took) => {
                state.stats.load_time += took;
                let waiters = state.waiting.remove(&id).unwrap_or_default();
                let result = match result {
                    Ok(handle) => {
                        if let ShardHandle::Loaded(data) = &handle {
                            state.stats.loads += 1;
                            tracing::info!(shard = %id, rows = data.n_rows(),
                                ms = took.as_millis() as u64, "shard loaded");
                            state.insert(id, Arc::clone(data));
                        }
                        Ok(handle)
                    }
                    Err(e) => {
                        let e = Arc::new(e);
                        if !matches!(*e, DataError::Store { .. }) {
                            state.failed.insert(id, Arc::clone(&e));
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

async fn read(reader: &ShardReader, shard: &Shard, budget: u64) -> Result<ShardHandle, DataError> {
    let info = Arc::new(reader.inspect(shard).await?);
    if info.bytes_in_memory() > budget {
        tracing::info!(shard = %shard, bytes = info.bytes_in_memory(), budget,
            "shard exceeds the cache budget: scorers will stream it");
        return Ok(ShardHandle::Stream(info));
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
