//! `ChainLog`: the latest checkpoint of each chained unit of a sweep (a history read by slices,
//! see [`SliceChain`]), persisted beside its ledger, so that a restarted head resumes its
//! chains after their last slice done instead of from their first.
//!
//! One object per chain, `chains/<key>.bin`, overwritten after each slice; the key digests the
//! unit's shard and sets, which the restarted head's plan cuts again the same way for cells
//! that are not final. A saved chain is used only where its slices are the plan's; the lanes'
//! checkpoint itself names its strategy, sets and execution model, checked when it resumes.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::PersistError;
use crate::data::ShardId;
use crate::storage::Location;
use crate::sweep::{SetSpan, SliceChain, SweepId, WorkUnit};

/// A chained unit as persisted: what identifies it and how far it came.
#[derive(Debug, Serialize, Deserialize)]
struct SavedChain {
    shard: ShardId,
    sets: SetSpan,
    chain: SliceChain,
}

/// The persisted chain checkpoints of one sweep.
pub struct ChainLog {
    store: Arc<dyn ObjectStore>,
    location: Location,
    dir: Path,
}

impl std::fmt::Debug for ChainLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainLog")
            .field("dir", &self.location.object_url(&self.dir))
            .finish_non_exhaustive()
    }
}

impl ChainLog {
    /// The chain checkpoints of sweep `sweep_id` under the results root `root`.
    ///
    /// # Errors
    /// [`PersistError::Location`] when the root is not usable.
    pub fn open(root: &Location, sweep_id: &SweepId) -> Result<Self, PersistError> {
        let (store, root_path) = root.store()?;
        let dir = root_path
            .join("sweeps")
            .join(sweep_id.as_str())
            .join("chains");
        Ok(Self {
            store,
            location: root.clone(),
            dir,
        })
    }

    /// Saves how far `unit`'s chain came (nothing for a unit not chained or not started).
    ///
    /// # Errors
    /// [`PersistError::Store`].
    pub async fn save(&self, unit: &WorkUnit) -> Result<(), PersistError> {
        let Some(chain) = unit.chain.as_deref().filter(|c| c.checkpoint.is_some()) else {
            return Ok(());
        };
        let saved = SavedChain {
            shard: unit.shard.id(),
            sets: unit.sets.clone(),
            chain: chain.clone(),
        };
        let bytes = postcard::to_stdvec(&saved).expect("chains serialise");
        let path = self
            .dir
            .clone()
            .join(format!("{}.bin", chain_key(&saved.shard, &saved.sets)));
        self.store
            .put(&path, PutPayload::from(bytes))
            .await
            .map_err(|source| PersistError::Store {
                url: self.location.object_url(&path),
                source,
            })?;
        Ok(())
    }

    /// Every chain saved, by key. A file that does not decode is skipped with a warning (its
    /// chain starts over; nothing else is lost).
    ///
    /// # Errors
    /// [`PersistError::Store`] when the store cannot be listed or read.
    pub async fn read(&self) -> Result<SavedChains, PersistError> {
        let store_error = |url: String| move |source| PersistError::Store { url, source };
        let objects: Vec<_> = self
            .store
            .list(Some(&self.dir))
            .try_collect()
            .await
            .map_err(store_error(self.location.object_url(&self.dir)))?;
        let mut saved = BTreeMap::new();
        for meta in objects {
            let url = self.location.object_url(&meta.location);
            let got = self
                .store
                .get(&meta.location)
                .await
                .map_err(store_error(url.clone()))?;
            let bytes = got.bytes().await.map_err(store_error(url.clone()))?;
            match postcard::from_bytes::<SavedChain>(&bytes) {
                Ok(chain) => {
                    saved.insert(chain_key(&chain.shard, &chain.sets), chain.chain);
                }
                Err(e) => tracing::warn!(%url, error = %e,
                    "a saved chain does not decode: its history starts over"),
            }
        }
        Ok(SavedChains(saved))
    }
}

/// The chains a sweep saved, by unit.
#[derive(Debug, Default)]
pub struct SavedChains(BTreeMap<String, SliceChain>);

impl SavedChains {
    /// Puts each chained unit of `units` where its saved chain left it, if one was saved over
    /// the same slices; returns how many units resume.
    pub fn resume(&self, units: &mut [WorkUnit]) -> usize {
        let mut resumed = 0;
        for unit in units {
            let key = chain_key(&unit.shard.id(), &unit.sets);
            if let (Some(chain), Some(saved)) = (unit.chain.as_deref_mut(), self.0.get(&key))
                && saved.slices == chain.slices
                && saved.checkpoint.is_some()
            {
                chain.done = saved.done;
                chain.checkpoint.clone_from(&saved.checkpoint);
                resumed += 1;
            }
        }
        resumed
    }

    /// How many chains were saved.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether none was.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The name of a chain's object: 16 hex digits of SHA-256 over its shard and sets.
fn chain_key(shard: &ShardId, sets: &SetSpan) -> String {
    let bytes = postcard::to_stdvec(&(shard, sets)).expect("keys serialise");
    Sha256::digest(bytes)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Shard;
    use crate::params::SetPlace;
    use crate::sweep::{CheckpointBytes, DaySlice, UnitId};

    fn unit(first: u64) -> WorkUnit {
        let day = |d: &str| d.parse().unwrap();
        let slices = ["2024-01-02", "2024-01-03", "2024-01-04"].map(|d| DaySlice {
            last: day(d),
            files_digest: format!("digest-{d}"),
        });
        WorkUnit {
            id: UnitId(0),
            shard: Shard::new("S", day("2024-01-02"), day("2024-01-04")),
            sets: SetSpan::Run {
                first: SetPlace {
                    index: first,
                    position: first,
                },
                count: 10,
            },
            files_digest: None,
            streamed: true,
            chain: Some(Box::new(SliceChain::new(slices.to_vec(), 3))),
        }
    }

    #[tokio::test]
    async fn a_saved_chain_puts_the_same_unit_of_a_new_plan_where_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::parse(&dir.path().display().to_string()).unwrap();
        let id: SweepId = "0123456789abcdef".parse().unwrap();
        let log = ChainLog::open(&root, &id).unwrap();
        let mut ran = unit(0);
        log.save(&ran).await.unwrap(); // not started: nothing saved
        assert!(log.read().await.unwrap().is_empty());
        let chain = ran.chain.as_deref_mut().unwrap();
        assert!(chain.advance(0, CheckpointBytes(vec![1, 2, 3])));
        log.save(&ran).await.unwrap();
        assert!(
            ran.chain
                .as_deref_mut()
                .unwrap()
                .advance(1, CheckpointBytes(vec![4]))
        );
        log.save(&ran).await.unwrap(); // overwrites
        // A new plan: the same unit, another with other sets, and one whose slices differ.
        let mut other_slices = unit(0);
        other_slices.chain.as_deref_mut().unwrap().slices.pop();
        let mut planned = vec![unit(0), unit(10), other_slices];
        let saved = ChainLog::open(&root, &id).unwrap().read().await.unwrap();
        assert_eq!(saved.len(), 1);
        assert_eq!(saved.resume(&mut planned), 1);
        let chain = planned[0].chain.as_deref().unwrap();
        assert_eq!(
            (chain.done, chain.checkpoint.clone()),
            (2, Some(CheckpointBytes(vec![4])))
        );
        for fresh in &planned[1..] {
            assert_eq!(fresh.chain.as_deref().unwrap().done, 0);
        }
        // A file that does not decode is skipped.
        std::fs::write(
            dir.path().join("sweeps/0123456789abcdef/chains/junk.bin"),
            b"\xff\xff",
        )
        .unwrap();
        assert_eq!(log.read().await.unwrap().len(), 1);
    }
}
