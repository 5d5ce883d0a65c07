//! `LedgerLog`: the final cells of a sweep, persisted as they come, readable after a crash.
//!
//! Object stores cannot append, so the log is a series of immutable JSON-lines segments
//! `ledger/<run>-<seq>.jsonl`, one per flush; `<run>` is unique per head process, so a restarted
//! head never overwrites its predecessor's segments. Reading takes every segment, first record
//! of a cell wins.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use super::{ChainLog, FileManifest, PersistError};
use crate::engine::Trade;
use crate::params::SetPlace;
use crate::storage::Location;
use crate::sweep::{CellKey, CellOutcome, FinalCell, SweepId};

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    /// The cell.
    pub key: CellKey,
    /// Its final outcome.
    pub outcome: CellOutcome,
    /// Where its set sits in the sweep's grid (absent in logs written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<SetPlace>,
    /// Its return per day, when the sweep records them (so that a resumed sweep's research
    /// statistics cover the cells of its earlier runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub day_returns: Vec<f64>,
    /// Its round trips, when the sweep writes them (`--trades`: a resumed sweep's
    /// `trades.parquet` lists the cells of its earlier runs too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trades: Vec<Trade>,
}

/// A cell read back from the log: its outcome, its daily returns and its trades (each empty
/// when not recorded).
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCell {
    /// Its final outcome.
    pub outcome: CellOutcome,
    /// Its return per day of its shard with data, when recorded.
    pub day_returns: Vec<f64>,
    /// Its round trips, when recorded.
    pub trades: Vec<Trade>,
}

impl RecordedCell {
    /// The cell `key`, of the set at `place`, final as recorded.
    #[must_use]
    pub fn into_final(self, key: CellKey, place: SetPlace) -> FinalCell {
        FinalCell {
            key,
            place,
            outcome: self.outcome,
            day_returns: self.day_returns,
            trades: self.trades,
        }
    }
}

/// The persisted ledger of one sweep.
pub struct LedgerLog {
    store: Arc<dyn ObjectStore>,
    location: Location,
    dir: Path,
    run: String,
    seq: u32,
    buffer: Vec<u8>,
    pending: usize,
    written: usize,
    chains: ChainLog,
}

impl std::fmt::Debug for LedgerLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerLog")
            .field("dir", &self.location.object_url(&self.dir))
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl LedgerLog {
    /// Opens the log of sweep `sweep_id` under the results root `root` (writing `spec_json` as
    /// `spec.json` and `manifest` as [`FileManifest::NAME`] beside it), and reads back every
    /// cell already recorded, with its daily returns.
    ///
    /// # Errors
    /// [`PersistError`] if the store fails or a segment is corrupt.
    pub async fn open(
        root: &Location,
        sweep_id: &SweepId,
        spec_json: &[u8],
        manifest: &[u8],
    ) -> Result<(Self, BTreeMap<CellKey, RecordedCell>), PersistError> {
        let (store, root_path) = root.store()?;
        let sweep_dir = root_path.clone().join("sweeps").join(sweep_id.as_str());
        for (name, bytes) in [("spec.json", spec_json), (FileManifest::NAME, manifest)] {
            let path = sweep_dir.clone().join(name);
            store
                .put(&path, PutPayload::from(bytes.to_vec()))
                .await
                .map_err(|source| PersistError::Store {
                    url: root.object_url(&path),
                    source,
                })?;
        }
        let dir = sweep_dir.join("ledger");
        let done = read_segments(&*store, root, &dir).await?;
        let chains = ChainLog::open(root, sweep_id)?;
        let run = format!(
            "{}-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f"),
            std::process::id()
        );
        Ok((
            Self {
                store,
                location: root.clone(),
                dir,
                run,
                seq: 0,
                buffer: Vec::new(),
                pending: 0,
                written: 0,
                chains,
            },
            done,
        ))
    }

    /// Reads the outcomes of the cells recorded for sweep `sweep_id` under `root` (nothing is
    /// written).
    ///
    /// # Errors
    /// [`PersistError`] if the store fails or a segment is corrupt.
    pub async fn read(
        root: &Location,
        sweep_id: &SweepId,
    ) -> Result<BTreeMap<CellKey, CellOutcome>, PersistError> {
        let (store, root_path) = root.store()?;
        let dir = root_path
            .join("sweeps")
            .join(sweep_id.as_str())
            .join("ledger");
        let cells = read_segments(&*store, root, &dir).await?;
        Ok(cells.into_iter().map(|(k, c)| (k, c.outcome)).collect())
    }

    /// The checkpoints of the sweep's histories read by slices, saved beside its cells.
    #[must_use]
    pub fn chains(&self) -> &ChainLog {
        &self.chains
    }

    /// Buffers a final cell.
    pub fn push(&mut self, cell: &FinalCell) {
        let rec = LogRecord {
            key: cell.key.clone(),
            outcome: cell.outcome.clone(),
            place: Some(cell.place),
            day_returns: cell.day_returns.clone(),
            trades: cell.trades.clone(),
        };
        serde_json::to_writer(&mut self.buffer, &rec).expect("records serialise");
        self.buffer.push(b'\n');
        self.pending += 1;
    }

    /// Records buffered and not yet written.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Records this log has written (in this run).
    #[must_use]
    pub fn written(&self) -> usize {
        self.written
    }

    /// Writes the buffered records as a new segment.
    ///
    /// # Errors
    /// [`PersistError::Store`]; the records stay buffered for the next attempt.
    pub async fn flush(&mut self) -> Result<(), PersistError> {
        if self.pending == 0 {
            return Ok(());
        }
        let path = self
            .dir
            .clone()
            .join(format!("{}-{:06}.jsonl", self.run, self.seq));
        self.store
            .put(&path, PutPayload::from(self.buffer.clone()))
            .await
            .map_err(|source| PersistError::Store {
                url: self.location.object_url(&path),
                source,
            })?;
        self.seq += 1;
        self.buffer.clear();
        self.written += self.pending;
        self.pending = 0;
        Ok(())
    }
}

async fn read_segments(
    store: &dyn ObjectStore,
    root: &Location,
    dir: &Path,
) -> Result<BTreeMap<CellKey, RecordedCell>, PersistError> {
    let mut objects: Vec<_> = store
        .list(Some(dir))
        .try_collect()
        .await
        .map_err(|source| PersistError::Store {
            url: root.object_url(dir),
            source,
        })?;
    objects.sort_by(|a, b| a.location.cmp(&b.location));
    let mut done = BTreeMap::new();
    for meta in objects {
        let url = root.object_url(&meta.location);
        let store_error = |source| PersistError::Store {
            url: url.clone(),
            source,
        };
        let got = store.get(&meta.location).await.map_err(store_error)?;
        let bytes = got.bytes().await.map_err(store_error)?;
        for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.is_empty() {
                continue;
            }
            let rec: LogRecord =
                serde_json::from_slice(line).map_err(|e| PersistError::Corrupt {
                    url: url.clone(),
                    line: i + 1,
                    reason: e.to_string(),
                })?;
            done.entry(rec.key).or_insert(RecordedCell {
                outcome: rec.outcome,
                day_returns: rec.day_returns,
                trades: rec.trades,
            });
        }
    }
    Ok(done)
}
