//! Exact replay: re-executes a persisted sweep (or one of its cells) from its `spec.json` and
//! checks that every metric is identical, bit for bit, to what the sweep recorded.
//!
//! Before anything runs, the data are checked against the spec (each shard's digest of the size
//! and content tag of every file, so no file added, missing or changed): a replay on changed
//! data says which files changed (from the sweep's `manifest.jsonl`) and refuses, unless forced.

use std::collections::BTreeMap;

use object_store::ObjectStoreExt;

use crate::data::{Dataset, ListedFile, Shard, ShardReader};
use crate::error::{Error, Result};
use crate::params::{ParamSet, ParamSetId};
use crate::persist::{FileManifest, LedgerLog, ShardFiles, SweepSpec};
use crate::registry::find_strategy;
use crate::storage::Location;
use crate::sweep::{CellKey, CellOutcome, SweepId};

mod difference;
pub use difference::describe_difference;

/// Which cells to replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayScope {
    /// Every cell of the sweep.
    All,
    /// One cell: a parameter set on the shard of a symbol.
    Cell {
        /// The parameter set.
        param_set: ParamSetId,
        /// The shard's symbol.
        symbol: String,
    },
}

impl std::str::FromStr for ReplayScope {
    type Err = String;

    /// `PARAM_SET_ID@SYMBOL`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (id, symbol) = s
            .split_once('@')
            .ok_or_else(|| format!("`{s}`: expected PARAM_SET_ID@SYMBOL"))?;
        Ok(Self::Cell {
            param_set: id.parse().map_err(|e| format!("`{id}`: {e}"))?,
            symbol: symbol.to_owned(),
        })
    }
}

/// Parameter sets replayed at a time.
const REPLAY_CHUNK: usize = 16_384;

/// A file whose current state differs from the manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestChange {
    /// The file.
    pub url: String,
    /// What changed.
    pub change: String,
}

/// What a replay found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayReport {
    /// Cells recomputed.
    pub cells: usize,
    /// Cells identical to the record.
    pub identical: usize,
    /// Cells that differ: key, recorded, recomputed.
    pub differences: Vec<(CellKey, Option<CellOutcome>, CellOutcome)>,
    /// Data files that changed since the sweep (only when forced).
    pub changed_files: Vec<ManifestChange>,
}

impl ReplayReport {
    /// Compares the recomputed `outcomes` of `sets` on `shard` with the record.
    fn compare(
        &mut self,
        shard: &Shard,
        sets: &[ParamSet],
        outcomes: Vec<CellOutcome>,
        recorded: &BTreeMap<CellKey, CellOutcome>,
    ) {
        for (set, outcome) in sets.iter().zip(outcomes) {
            let key = CellKey {
                shard: shard.id(),
                param_set: set.id(),
            };
            self.cells += 1;
            match recorded.get(&key) {
                Some(before) if identical(before, &outcome) => self.identical += 1,
                before => self.differences.push((key, before.cloned(), outcome)),
            }
        }
    }
}

/// Bitwise equality of two outcomes (NaN equals NaN; failures compare kind and message).
#[must_use]
pub fn identical(a: &CellOutcome, b: &CellOutcome) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => crate::metrics::bitwise_equal(x, y),
        (Err(x), Err(y)) => x.kind == y.kind && x.message == y.message,
        _ => false,
    }
}

/// How the files of `shards` differ from what sweep `sweep_id` under `root` read: each shard's
/// files listed now against its digest in the spec, and a changed shard's files named from the
/// sweep's [`FileManifest`] (the shard named alone when that file is missing).
async fn data_changes(
    (root, sweep_id): (&Location, &SweepId),
    spec: &SweepSpec,
    reader: &ShardReader,
    shards: &[Shard],
) -> Result<Vec<ManifestChange>> {
    let mut changes = Vec::new();
    let mut manifest: Option<Option<Vec<ListedFile>>> = None;
    for shard in shards {
        let now = reader.list(shard).await?;
        let recorded = spec
            .shards
            .iter()
            .position(|s| s == shard)
            .and_then(|i| spec.data.get(i));
        let listed = ShardFiles::of(&now);
        if recorded.is_some_and(|r| r.digest == listed.digest) {
            continue;
        }
        if manifest.is_none() {
            manifest = Some(read_manifest(root, sweep_id).await?);
        }
        match manifest.as_ref().and_then(Option::as_ref) {
            Some(files) => {
                let recorded: Vec<ListedFile> = files
                    .iter()
                    .filter(|f| {
                        shard
                            .symbols()
                            .iter()
                            .any(|s| f.url.contains(&format!("/symbol={s}/")))
                            && f.date >= shard.first()
                            && f.date <= shard.last()
                    })
                    .cloned()
                    .collect();
                changes.extend(manifest_changes(&recorded, &now));
            }
            None => changes.push(ManifestChange {
                url: shard.to_string(),
                change: format!(
                    "its files differ from those the sweep read ({}; now {} files, {} bytes; \
                     {} is missing, so the files cannot be named)",
                    recorded.map_or_else(
                        || "not recorded".to_owned(),
                        |r| format!("{} files, {} bytes", r.files, r.bytes)
                    ),
                    listed.files,
                    listed.bytes,
                    FileManifest::NAME
                ),
            }),
        }
    }
    Ok(changes)
}

/// The files sweep `sweep_id` listed, from its [`FileManifest`]; `None` when there is none.
async fn read_manifest(root: &Location, sweep_id: &SweepId) -> Result<Option<Vec<ListedFile>>> {
    let (store, path) = root.store()?;
    let manifest_path = path
        .join("sweeps")
        .join(sweep_id.as_str())
        .join(FileManifest::NAME);
    let url = root.object_url(&manifest_path);
    let bytes = match async { store.get(&manifest_path).await?.bytes().await }.await {
        Ok(bytes) => bytes,
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => {
            return Err(Error::Read {
                path: url,
                reason: e.to_string(),
            });
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    FileManifest::parse(&text)
        .map(Some)
        .map_err(|(line, reason)| Error::Read {
            path: url,
            reason: format!("line {line}: {reason}"),
        })
}

/// [`Error::InvalidSweep`] naming every changed file, unless there is none or `force` is on.
fn refuse_changed(
    spec: &SweepSpec,
    sweep_id: &SweepId,
    changes: &[ManifestChange],
    force: bool,
) -> Result<()> {
    if changes.is_empty() || force {
        return Ok(());
    }
    Err(Error::InvalidSweep {
        strategy: spec.strategy.clone(),
        problems: std::iter::once(format!(
            "the data of sweep {sweep_id} changed since it ran; refusing to replay (force to override):"
        ))
        .chain(changes.iter().map(|c| format!("{}: {}", c.url, c.change)))
        .collect(),
    })
}

pub(crate) async fn read_spec(root: &Location, sweep_id: &SweepId) -> Result<SweepSpec> {
    let (store, path) = root.store()?;
    let spec_path = path
        .join("sweeps")
        .join(sweep_id.as_str())
        .join("spec.json");
    let url = root.object_url(&spec_path);
    let bytes = match async { store.get(&spec_path).await?.bytes().await }.await {
        Ok(bytes) => bytes,
        Err(object_store::Error::NotFound { .. }) => {
            return Err(Error::UnknownSweep {
                sweep: sweep_id.clone(),
                root: root.to_string(),
            });
        }
        Err(e) => {
            return Err(Error::Read {
                path: url,
                reason: e.to_string(),
            });
        }
    };
    serde_json::from_slice(&bytes).map_err(|e| Error::Read {
        path: url,
        reason: format!("not a sweep spec: {e}"),
    })
}

/// Compares the files a shard has now with the manifest.
fn manifest_changes(recorded: &[ListedFile], now: &[ListedFile]) -> Vec<ManifestChange> {
    let before: BTreeMap<&str, &ListedFile> =
        recorded.iter().map(|f| (f.url.as_str(), f)).collect();
    let after: BTreeMap<&str, &ListedFile> = now.iter().map(|f| (f.url.as_str(), f)).collect();
    let mut changes = Vec::new();
    for (url, old) in &before {
        match after.get(url) {
            None => changes.push(ManifestChange {
                url: (*url).to_owned(),
                change: "removed".to_owned(),
            }),
            Some(new) if new.size != old.size || new.e_tag != old.e_tag => {
                changes.push(ManifestChange {
                    url: (*url).to_owned(),
                    change: format!(
                        "changed (size {} → {}, etag {} → {})",
                        old.size,
                        new.size,
                        old.e_tag.as_deref().unwrap_or("-"),
                        new.e_tag.as_deref().unwrap_or("-")
                    ),
                });
            }
            Some(_) => {}
        }
    }
    for url in after.keys().filter(|u| !before.contains_key(*u)) {
        changes.push(ManifestChange {
            url: (*url).to_owned(),
            change: "added".to_owned(),
        });
    }
    changes
}

/// Replays sweep `sweep_id` persisted under `root` (see the module docs).
///
/// # Errors
/// [`Error::Read`] or [`Error::Persist`] if the spec or ledger cannot be read, [`Error::Strategy`] if the strategy is
/// not in this binary, [`Error::InvalidSweep`] listing the changed files when the data changed
/// and `force` is off.
pub async fn replay(
    root: &Location,
    sweep_id: &SweepId,
    scope: &ReplayScope,
    force: bool,
) -> Result<ReplayReport> {
    let spec = read_spec(root, sweep_id).await?;
    let strategy = *find_strategy(&spec.strategy)?;
    if strategy.version != spec.strategy_version {
        tracing::warn!(recorded = %spec.strategy_version, now = strategy.version,
            "the strategy's version differs from the recorded one");
    }
    let dataset = Dataset::try_new(&spec.dataset, spec.kind)?;
    let reader = ShardReader::try_new(&dataset)?;
    let shards: Vec<_> = spec
        .shards
        .iter()
        .filter(|s| match scope {
            ReplayScope::All => true,
            ReplayScope::Cell { symbol, .. } => s.symbol() == symbol,
        })
        .cloned()
        .collect();
    if shards.is_empty() {
        return Err(Error::InvalidSweep {
            strategy: spec.strategy.clone(),
            problems: vec![format!("sweep {sweep_id} has no shard for {scope:?}")],
        });
    }
    // The data must be what the sweep read.
    let changes = data_changes((root, sweep_id), &spec, &reader, &shards).await?;
    refuse_changed(&spec, sweep_id, &changes, force)?;
    let recorded = LedgerLog::read(root, sweep_id).await?;
    let mut report = ReplayReport {
        changed_files: changes,
        ..ReplayReport::default()
    };
    for shard in &shards {
        let data = std::sync::Arc::new(reader.load(shard).await?);
        let mut sets = spec.grid.iter().filter(|s| match scope {
            ReplayScope::All => true,
            ReplayScope::Cell { param_set, .. } => s.id() == *param_set,
        });
        // The grid in chunks, so that a replay of a large sweep never holds all its sets.
        loop {
            let chunk: Vec<ParamSet> = sets.by_ref().take(REPLAY_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            let data = std::sync::Arc::clone(&data);
            let exec = spec.exec.clone();
            let run = strategy.run;
            let (chunk, outcomes) = tokio::task::spawn_blocking(move || {
                let outcomes = run(&data, &chunk, &exec);
                (chunk, outcomes)
            })
            .await
            .map_err(|e| Error::actors("replaying a shard", e))?;
            report.compare(shard, &chunk, outcomes, &recorded);
        }
    }
    if let (0, ReplayScope::Cell { param_set, .. }) = (report.cells, scope) {
        return Err(Error::InvalidSweep {
            strategy: spec.strategy.clone(),
            problems: vec![format!("sweep {sweep_id} has no parameter set {param_set}")],
        });
    }
    Ok(report)
}

/// One cell re-executed with its fills and equity recorded ([`trace`]).
#[derive(Clone, Debug)]
pub struct TracedCell {
    /// The cell.
    pub key: CellKey,
    /// Its outcome now (checked against the record: see `identical`).
    pub outcome: CellOutcome,
    /// Whether it is identical to the recorded one, bit for bit.
    pub identical: bool,
    /// Its fills and equity curve.
    pub trace: crate::engine::CellTrace,
    /// The last mark price of the shard (to value the position left open at the end).
    pub last_price: f64,
}

/// Re-executes one cell of sweep `sweep_id` (parameter set `param_set` on `symbol`'s shard)
/// with every fill and the equity after every event recorded, after the same data check as
/// [`replay`].
///
/// # Errors
/// As [`replay`]; [`Error::InvalidSweep`] when the sweep has no such cell.
pub async fn trace(
    root: &Location,
    sweep_id: &SweepId,
    (param_set, symbol): (ParamSetId, &str),
    force: bool,
) -> Result<TracedCell> {
    let spec = read_spec(root, sweep_id).await?;
    let strategy = *find_strategy(&spec.strategy)?;
    let missing = |what: String| Error::InvalidSweep {
        strategy: spec.strategy.clone(),
        problems: vec![format!("sweep {sweep_id} has no {what}")],
    };
    let shard = spec
        .shards
        .iter()
        .find(|s| s.symbol() == symbol)
        .cloned()
        .ok_or_else(|| missing(format!("shard for symbol {symbol}")))?;
    let set = spec
        .grid
        .iter()
        .find(|s| s.id() == param_set)
        .ok_or_else(|| missing(format!("parameter set {param_set}")))?;
    let dataset = Dataset::try_new(&spec.dataset, spec.kind)?;
    let reader = ShardReader::try_new(&dataset)?;
    let changes = data_changes(
        (root, sweep_id),
        &spec,
        &reader,
        std::slice::from_ref(&shard),
    )
    .await?;
    refuse_changed(&spec, sweep_id, &changes, force)?;
    let data = reader.load(&shard).await?;
    let mark = data.kind().mark_column();
    let last_price = data
        .batches()
        .iter()
        .rev()
        .find(|b| !b.is_empty())
        .and_then(|b| b.columns()[mark].last().copied())
        .unwrap_or(f64::NAN);
    let exec = spec.exec.clone();
    let (outcome, trace) =
        tokio::task::spawn_blocking(move || (strategy.trace)(&data, &set, &exec))
            .await
            .map_err(|e| Error::actors("tracing a cell", e))?;
    let key = CellKey {
        shard: shard.id(),
        param_set,
    };
    let recorded = LedgerLog::read(root, sweep_id).await?;
    let identical = recorded.get(&key).is_some_and(|r| identical(r, &outcome));
    Ok(TracedCell {
        key,
        outcome,
        identical,
        trace,
        last_price,
    })
}
