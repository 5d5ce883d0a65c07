//! What a sweep will cost, before it runs (`--dry-run`): the dataset listed and every shard's
//! footers read as for a run, the grid counted, the units the work would be cut into counted
//! (without walking the grid: a dry run of 10¹⁰ sets answers at once) with the bytes they
//! would read, and the engine timed on the first days of the smallest shard with a few of the
//! grid's sets to extrapolate the time.

use std::time::Instant;

use serde::Serialize;

use super::RunOptions;
use super::plan::plan;
use super::units::{UnitSizing, count_units};
use crate::data::{Shard, ShardInfo, ShardReader};
use crate::error::Result;
use crate::sweep::{CellOutcome, Sweep, SweepId};

/// Parameter sets timed on one shard to estimate the engine's speed: about a unit's worth, so
/// that the lanes fill their vectors and share their indicators as a unit's do (16 sets ran
/// at less than half a unit's speed per evaluation).
pub const CALIBRATION_SETS: usize = 256;

/// Events the calibration reads at most: the first days of the smallest shard that hold no
/// more (at least one day), so that a long history is not loaded to time the engine.
pub const CALIBRATION_EVENTS: u64 = 1 << 16;

/// A sweep planned but not run.
#[derive(Clone, Debug, Serialize)]
pub struct SweepEstimate {
    /// The sweep's id (what a run of it would persist under).
    pub sweep_id: SweepId,
    /// Registered strategy name.
    pub strategy: String,
    /// Dataset root.
    pub dataset: String,
    /// Parameter sets of the grid (constraints and sampling applied).
    pub param_sets: u64,
    /// Shards (one per symbol or universe).
    pub shards: usize,
    /// Their names (`SYMBOL:FIRST..LAST`).
    pub shard_names: Vec<String>,
    /// Shards whose files cannot be read, with why: their cells would fail.
    pub unreadable_shards: Vec<String>,
    /// Cells: parameter sets × shards.
    pub cells: u64,
    /// Work units the cells are cut into (cells persisted already are not looked up).
    pub units: usize,
    /// Tick-parameter evaluations (events of each shard × its sets).
    pub evaluations: u64,
    /// Bytes of the dataset's files the sweep covers.
    pub dataset_bytes: u64,
    /// Bytes the run will read from the dataset on this node: each shard that fits the cache
    /// once, each larger one (streamed) once per unit.
    pub bytes_to_read: u64,
    /// Reads of a slice of days or a whole shard the units do: a unit of a history larger
    /// than the cache, whose strategy carries its state, reads it slice after slice (each
    /// slice counts), any other unit reads its shard once.
    pub slices: u64,
    /// Events over all shards.
    pub events: u64,
    /// Scorer threads of this node.
    pub threads: usize,
    /// The timing the estimate extrapolates (none when no shard could be read).
    pub calibration: Option<Calibration>,
    /// Estimated compute time on this node's threads, seconds (none without a calibration).
    pub estimated_seconds: Option<f64>,
    /// Memory the run will need.
    pub memory: MemoryEstimate,
}

/// The engine timed on one shard.
#[derive(Clone, Debug, Serialize)]
pub struct Calibration {
    /// The shard it ran on.
    pub shard: String,
    /// Parameter sets it ran.
    pub sets: usize,
    /// Evaluations of one run.
    pub evaluations: u64,
    /// Seconds of the fastest run (loading excluded).
    pub seconds: f64,
    /// Evaluations per second of one thread.
    pub evaluations_per_second: f64,
}

/// Bytes a run needs beyond the binary.
#[derive(Clone, Debug, Serialize)]
pub struct MemoryEstimate {
    /// Shards held in memory at once: the largest ones that fit the cache budget.
    pub shard_cache_bytes: u64,
    /// The largest shard in memory (larger than the budget: streamed instead).
    pub largest_shard_bytes: u64,
    /// The cells' metrics.
    pub results_bytes: u64,
    /// The sets' daily returns (when recorded; capped by `--returns-mb`).
    pub returns_bytes: u64,
    /// All of the above.
    pub total_bytes: u64,
}

/// Plans `sweep` as [`run_sweep`](super::run_sweep) would, times the engine on a few of its
/// sets, and says what the whole would cost on `opts.threads` threads. Computes no cell.
///
/// # Errors
/// As the planning of [`run_sweep`](super::run_sweep): an invalid sweep, an unreadable
/// dataset listing.
pub async fn estimate(sweep: &Sweep, opts: &RunOptions) -> Result<SweepEstimate> {
    let plan = plan(sweep).await?;
    let threads = opts.threads.max(1);
    let sizing = UnitSizing {
        unit_evals: opts.unit_evals,
        parallelism: threads,
        cache_bytes: opts.cache_bytes,
    };
    let count = count_units(&plan, sizing);
    let (units, evaluations) = (count.units, count.evaluations);
    let dataset_bytes = plan.spec.dataset_bytes();
    let readable: Vec<&ShardInfo> = plan.infos.iter().filter_map(|i| i.as_ref().ok()).collect();
    let unreadable_shards = plan
        .spec
        .shards
        .iter()
        .zip(&plan.infos)
        .filter_map(|(s, i)| i.as_ref().err().map(|e| format!("{s}: {e}")))
        .collect();
    let mut sizes: Vec<u64> = readable.iter().map(|i| i.bytes_in_memory()).collect();
    sizes.sort_unstable();
    let shard_cache_bytes = sizes
        .iter()
        .scan(0u64, |held, b| {
            *held += b;
            Some(*held)
        })
        .take_while(|held| *held <= opts.cache_bytes)
        .last()
        .unwrap_or(0);
    let param_sets = plan.n_sets as u64;
    let cells = param_sets * plan.spec.shards.len() as u64;
    let days = plan.dates.len() as u64;
    let returns_bytes = match opts.returns.record {
        super::Recording::Never => 0,
        _ => (param_sets * days * 8).min(opts.returns.memory_bytes),
    };
    let results_bytes = cells * std::mem::size_of::<(crate::sweep::CellKey, CellOutcome)>() as u64;
    let calibration = calibrate(&plan, &readable).await;
    let estimated_seconds = calibration
        .as_ref()
        .map(|c| evaluations as f64 / c.evaluations_per_second.max(1.0) / threads as f64);
    Ok(SweepEstimate {
        sweep_id: plan.spec.id(),
        strategy: plan.strategy.name.to_owned(),
        dataset: plan.dataset.url().to_string(),
        param_sets,
        shards: plan.spec.shards.len(),
        shard_names: plan.spec.shards.iter().map(ToString::to_string).collect(),
        unreadable_shards,
        cells,
        units,
        evaluations,
        dataset_bytes,
        bytes_to_read: count.bytes_to_read,
        slices: count.slices,
        events: readable.iter().map(|i| i.n_rows()).sum(),
        threads,
        calibration,
        estimated_seconds,
        memory: MemoryEstimate {
            shard_cache_bytes,
            largest_shard_bytes: sizes.last().copied().unwrap_or(0),
            results_bytes,
            returns_bytes,
            total_bytes: shard_cache_bytes + results_bytes + returns_bytes,
        },
    })
}

/// The first days of `info`'s shard holding at most `events` events (at least its first day);
/// a universe whole.
fn leading_days(info: &ShardInfo, events: u64) -> Shard {
    let shard = &info.shard;
    if shard.is_universe() {
        return shard.clone();
    }
    let mut last = shard.first();
    let mut held = 0u64;
    for file in &info.files {
        held += file.rows;
        if held > events && file.date > shard.first() {
            break;
        }
        last = file.date;
    }
    Shard::new(shard.symbol(), shard.first(), last.min(shard.last()))
}

/// Times the engine on the first days of the smallest readable shard (at most
/// [`CALIBRATION_EVENTS`] events) with the grid's first [`CALIBRATION_SETS`] sets: the fastest
/// of at least two runs (more while under 0.3 s).
async fn calibrate(plan: &super::plan::Plan, readable: &[&ShardInfo]) -> Option<Calibration> {
    let smallest = readable.iter().min_by_key(|i| i.n_rows())?;
    let shard = &leading_days(smallest, CALIBRATION_EVENTS);
    // A shard whose footers failed is already among the unreadable ones; one that fails only
    // now (its rows) is said here, since the estimate then has no speed.
    let loaded = match ShardReader::try_new(&plan.dataset) {
        Ok(reader) => reader.load(shard).await,
        Err(e) => Err(e),
    };
    let data = match loaded {
        Ok(data) => data,
        Err(e) => {
            tracing::warn!(shard = %shard, error = %e, "no calibration: the shard does not load");
            return None;
        }
    };
    let sets: Vec<_> = plan.spec.grid.iter().take(CALIBRATION_SETS).collect();
    let (n_sets, rows) = (sets.len(), data.n_rows());
    if n_sets == 0 || rows == 0 {
        return None;
    }
    let run = plan.strategy.run;
    let exec = plan.spec.exec.clone();
    // The fastest of a few runs: the first pays for what a sweep pays once per unit or not at
    // all (page faults, the allocator's first requests).
    let seconds = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let mut fastest = f64::INFINITY;
        let mut repeats = 0;
        while repeats < 2 || (repeats < 10 && started.elapsed().as_secs_f64() < 0.3) {
            let run_started = Instant::now();
            std::hint::black_box(run(&data, &sets, &exec));
            fastest = fastest.min(run_started.elapsed().as_secs_f64());
            repeats += 1;
        }
        fastest
    })
    .await
    .ok()?;
    let evaluations = rows * n_sets as u64;
    Some(Calibration {
        shard: shard.to_string(),
        sets: n_sets,
        evaluations,
        seconds,
        evaluations_per_second: evaluations as f64 / seconds.max(1e-9),
    })
}
