//! What a launch needs from the host, worked out without a device: the chunk's parameter sets
//! as lanes (packed for the device, ordered so that lanes declaring equal shared means are
//! neighbours), and for each launch the block shape, each block's distinct shared means, each
//! lane's slots into them and the shared-memory plan. The runner launches it on a GPU; the
//! host harness (tests/gpu.rs) runs the same launch through the kernel's C++ form.
//!
//! A block computes each distinct mean its lanes declare once per staged pass (one thread per
//! mean) and every lane reads it from shared memory, as the CPU engine computes each distinct
//! series once per tile. Grid lanes grow like the product of the axes and distinct means like
//! their sum, so the lanes are sorted with the slot of most distinct means as the major key:
//! a block then spans few values of it and cycles through the others (W1 on blocks of 32
//! lanes: at most 23 means per block where its lanes would keep 64 rolling sums; in the sets'
//! order, fast window first, up to 34).

use gridtest::params::ParamSet;
use gridtest::registry::{DeviceSeries, StrategyEntry};
use gridtest::strategy::Feed;
use gridtest::sweep::{CellFailure, FailureKind};
use gridtest::{Bars, DataKind, GpuCode, MAX_SHARED, MeanKey, Ticks};

use crate::runner::GpuError;
use crate::source::{LaunchPlan, MIN_BLOCK_THREADS, block_shape};

/// A chunk's runnable parameter sets, in launch order, with what the device needs of each.
#[derive(Debug)]
pub struct Lanes {
    /// Sets that cannot run, each failing alone: (index into the sets, why).
    refused: Vec<(usize, CellFailure)>,
    /// The set of each lane (index into the sets).
    sets: Vec<usize>,
    /// Each lane's parameters as the strategy's `pack` laid them out.
    packed: Vec<Vec<f64>>,
    /// Each lane's shared means, slot by slot.
    means: Vec<Vec<MeanKey>>,
    /// Events before the current one that any lane reads (at least 1).
    lookback: usize,
    /// The longest packed parameters.
    packed_len: usize,
    /// The most shared means a lane declares.
    slots: usize,
}

impl Lanes {
    /// The lanes of `sets` for `strategy`'s device code `code`.
    ///
    /// # Errors
    /// [`GpuError::Series`] when a set declares a shared series that is not a
    /// [`SharedMean`](gridtest::SharedMean): no device computes it.
    pub fn prepare(
        strategy: &StrategyEntry,
        code: &GpuCode,
        sets: &[ParamSet],
    ) -> Result<Self, GpuError> {
        let mut lanes = Self {
            refused: Vec::new(),
            sets: Vec::new(),
            packed: Vec::new(),
            means: Vec::new(),
            lookback: 1,
            packed_len: 1,
            slots: 0,
        };
        let n_cols = FeedLayout::of(strategy.kind).n_cols;
        for (i, set) in sets.iter().enumerate() {
            let refused = || {
                let why = format!("strategy refused [{set}] (new() or shared() panicked)");
                (i, CellFailure::new(FailureKind::Panic, why))
            };
            let packed = match (code.pack)(set) {
                Ok(p) => p,
                Err(e) => {
                    let failure = CellFailure::new(FailureKind::Params, e.to_string());
                    lanes.refused.push((i, failure));
                    continue;
                }
            };
            let means = match (strategy.device_series)(set) {
                DeviceSeries::Means(means) => means,
                DeviceSeries::Unsupported(series) => {
                    return Err(GpuError::Series {
                        strategy: strategy.name.to_owned(),
                        series,
                    });
                }
                DeviceSeries::Refused => {
                    lanes.refused.push(refused());
                    continue;
                }
            };
            let Some(lookback) = (strategy.lookback)(set) else {
                lanes.refused.push(refused());
                continue;
            };
            if let Some(bad) = means.iter().find(|m| m.column >= n_cols) {
                let why = format!(
                    "[{set}] declares a shared mean of column {} of a feed of {n_cols} columns",
                    bad.column
                );
                lanes
                    .refused
                    .push((i, CellFailure::new(FailureKind::Params, why)));
                continue;
            }
            if means.len() > MAX_SHARED {
                let why = format!(
                    "the strategy declares {} shared series; at most {MAX_SHARED}",
                    means.len()
                );
                lanes
                    .refused
                    .push((i, CellFailure::new(FailureKind::Params, why)));
                continue;
            }
            let longest = means.iter().map(|m| m.window).fold(lookback, usize::max);
            lanes.lookback = lanes.lookback.max(longest);
            lanes.packed_len = lanes.packed_len.max(packed.len());
            lanes.slots = lanes.slots.max(means.len());
            lanes.sets.push(i);
            lanes.packed.push(packed);
            lanes.means.push(means);
        }
        lanes.sort_by_shared_means();
        Ok(lanes)
    }

    /// Orders the lanes by their means, the slot with the most distinct means first (stable:
    /// equal lanes keep the sets' order).
    fn sort_by_shared_means(&mut self) {
        if self.slots == 0 {
            return;
        }
        let mut slot_order: Vec<(usize, usize)> = (0..self.slots)
            .map(|s| {
                let mut keys: Vec<MeanKey> = self
                    .means
                    .iter()
                    .filter_map(|m| m.get(s).copied())
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                (keys.len(), s)
            })
            .collect();
        slot_order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let key = |lane: usize| -> Vec<Option<MeanKey>> {
            slot_order
                .iter()
                .map(|&(_, s)| self.means[lane].get(s).copied())
                .collect()
        };
        let mut order: Vec<usize> = (0..self.sets.len()).collect();
        order.sort_by_cached_key(|&lane| key(lane));
        self.sets = order.iter().map(|&l| self.sets[l]).collect();
        self.packed = order
            .iter()
            .map(|&l| std::mem::take(&mut self.packed[l]))
            .collect();
        self.means = order
            .iter()
            .map(|&l| std::mem::take(&mut self.means[l]))
            .collect();
    }

    /// Runnable lanes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether no set can run.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The set lane `lane` runs (its index into the sets prepared).
    #[must_use]
    pub fn set_of(&self, lane: usize) -> usize {
        self.sets[lane]
    }

    /// The sets that cannot run, each with why: (index into the sets, failure).
    #[must_use]
    pub fn refused(&self) -> &[(usize, CellFailure)] {
        &self.refused
    }

    /// The launch of lanes `chunk` (indices of lanes, in launch order; at least one) over a
    /// feed of `n_cols` columns, on a device of `multiprocessors` multiprocessors with
    /// `shared_limit` bytes of shared memory per block: [`block_shape`], narrowed while the
    /// blocks' shared means do not fit beside the staged window.
    ///
    /// # Errors
    /// [`GpuError::Lookback`] when even one-warp blocks do not fit.
    pub fn launch(
        &self,
        chunk: &[usize],
        n_cols: usize,
        multiprocessors: u32,
        shared_limit: usize,
    ) -> Result<Launch, GpuError> {
        let (_, mut threads) = block_shape(chunk.len(), multiprocessors);
        loop {
            let tables = self.block_tables(chunk, threads as usize);
            if let Some(plan) = LaunchPlan::new(n_cols, self.lookback, tables.width, shared_limit) {
                return Ok(self.assemble(chunk, threads, plan, tables));
            }
            if threads <= MIN_BLOCK_THREADS {
                return Err(GpuError::Lookback {
                    lookback: self.lookback,
                    n_cols,
                    series: tables.width,
                });
            }
            threads /= 2;
        }
    }

    /// Each block's distinct means (first declared first) and each lane's slots into its
    /// block's list, for blocks of `threads` consecutive lanes of `chunk`.
    fn block_tables(&self, chunk: &[usize], threads: usize) -> BlockTables {
        let mut tables = BlockTables {
            blocks: Vec::new(),
            slots: Vec::with_capacity(chunk.len()),
            width: 0,
        };
        for block in chunk.chunks(threads.max(1)) {
            let mut distinct: Vec<MeanKey> = Vec::new();
            for &lane in block {
                let slots = self.means[lane]
                    .iter()
                    .map(|key| match distinct.iter().position(|d| d == key) {
                        Some(at) => at,
                        None => {
                            distinct.push(*key);
                            distinct.len() - 1
                        }
                    })
                    .collect();
                tables.slots.push(slots);
            }
            tables.width = tables.width.max(distinct.len());
            tables.blocks.push(distinct);
        }
        tables
    }

    fn assemble(&self, chunk: &[usize], threads: u32, plan: LaunchPlan, t: BlockTables) -> Launch {
        let param_len = self.packed_len + self.slots;
        let mut params = Vec::with_capacity(chunk.len() * param_len);
        for (&lane, slots) in chunk.iter().zip(&t.slots) {
            let start = params.len();
            params.extend_from_slice(&self.packed[lane]);
            params.resize(start + self.packed_len, 0.0);
            params.extend(slots.iter().map(|&s| s as f64));
            params.resize(start + param_len, 0.0);
        }
        let mut table = Vec::with_capacity((t.blocks.len() * t.width).max(1) * 2);
        for block in &t.blocks {
            for k in 0..t.width {
                let key = block.get(k);
                table.push(key.map_or(0.0, |m| m.column as f64));
                table.push(key.map_or(0.0, |m| m.window as f64));
            }
        }
        if table.is_empty() {
            table.extend([0.0, 0.0]);
        }
        Launch {
            blocks: u32::try_from(t.blocks.len()).unwrap_or(u32::MAX),
            threads,
            plan,
            lookback: self.lookback,
            n_lanes: chunk.len(),
            params,
            param_len,
            slot_at: self.packed_len,
            n_slots: self.slots,
            table,
            n_series: t.width,
        }
    }
}

/// Each block's distinct means, each lane's slots into its block's, the widest block's count.
struct BlockTables {
    blocks: Vec<Vec<MeanKey>>,
    slots: Vec<Vec<usize>>,
    width: usize,
}

/// One kernel launch, as `gt_run` takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// Blocks.
    pub blocks: u32,
    /// Threads per block (one lane each).
    pub threads: u32,
    /// Events staged per pass and the shared memory per block.
    pub plan: LaunchPlan,
    /// Events before the current one that the window holds.
    pub lookback: usize,
    /// Lanes launched.
    pub n_lanes: usize,
    /// Each lane's `param_len` doubles: the strategy's packed parameters, then, from
    /// `slot_at`, the indices of its `n_slots` slots into its block's means.
    pub params: Vec<f64>,
    /// Doubles of parameters per lane.
    pub param_len: usize,
    /// Where a lane's slot indices start in its parameters.
    pub slot_at: usize,
    /// Slot indices per lane.
    pub n_slots: usize,
    /// Per block, `n_series` entries of `[column, window]` (window 0: unused); at least one
    /// entry, so that the buffer has an address.
    pub table: Vec<f64>,
    /// Distinct means per block (the widest block's).
    pub n_series: usize,
}

/// What the kernel needs of a feed: its columns, the column fills happen at, the column
/// positions are marked at, and whether prices move inside an event (bars: open to close).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedLayout {
    /// Columns ([`Feed::COLUMNS`]).
    pub n_cols: usize,
    /// Fill column ([`Feed::FILL`]).
    pub fill: usize,
    /// Mark column ([`Feed::MARK`]).
    pub mark: usize,
    /// Whether positions also move from fill to mark within an event ([`Feed::INTRABAR`]).
    pub intrabar: bool,
}

impl FeedLayout {
    /// The layout of feed kind `kind`.
    #[must_use]
    pub fn of(kind: DataKind) -> Self {
        match kind {
            DataKind::Ticks => Self::feed::<Ticks>(),
            DataKind::Bars => Self::feed::<Bars>(),
        }
    }

    fn feed<F: Feed>() -> Self {
        Self {
            n_cols: F::COLUMNS.len(),
            fill: F::FILL,
            mark: F::MARK,
            intrabar: F::INTRABAR,
        }
    }
}
