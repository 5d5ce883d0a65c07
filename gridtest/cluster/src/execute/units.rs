//! Cutting a planned sweep into work units: per shard, the grid's sets not yet final, as runs
//! of consecutive sets of about `unit_evals` evaluations (finer when there would be too few
//! units to keep every scorer busy). The grid is walked, never collected: a unit names its
//! span of the grid, and only cells resumed from the persisted ledger are looked up by id.

use std::collections::BTreeMap;

use chrono::NaiveDate;

use super::plan::Plan;
use crate::data::{ListedFile, ShardInfo};
use crate::error::{Error, Result};
use crate::params::SetPlace;
use crate::persist::RecordedCell;
use crate::sweep::output::ORDERED_BUFFER;
use crate::sweep::{
    CellKey, FinalCell, SetSpan, SliceChain, UnitId, WorkUnit, chunk_size, cut_days,
};

/// The work left of a sweep.
pub(super) struct Planned {
    /// Units covering every cell not yet final.
    pub(super) units: Vec<WorkUnit>,
    /// Tick-parameter evaluations they cost.
    pub(super) evaluations: u64,
    /// Cells of this sweep final already (from the persisted ledger).
    pub(super) resumed: Vec<FinalCell>,
}

impl Planned {
    /// What the head's autoscaler needs of this plan: the mean evaluations of a cell still to
    /// compute, and whether GPU scorers can take its units.
    pub(super) fn snapshot(&self, plan: &Plan) -> crate::progress::PlanSnapshot {
        let cells_left: u64 = self.units.iter().map(|u| u.sets.len() as u64).sum();
        crate::progress::PlanSnapshot {
            dataset_bytes: plan.spec.dataset_bytes(),
            evals_per_cell: self.evaluations as f64 / cells_left.max(1) as f64,
            gpu_eligible: (plan.strategy.gpu)().is_some(),
        }
    }
}

/// Sets a unit holds at most so that the cells of the units in flight (two per scorer: the one
/// it runs and the one it has asked for) fit the buffer of the outputs written in grid order
/// ([`ORDERED_BUFFER`]): a unit that ends before the one ahead of it waits there whole. Never
/// below [`MIN_ORDERED_SPAN`], so that lanes still fill the vectors on a large cluster (whose
/// outputs are then partly sorted at the end).
fn ordered_span(parallelism: usize) -> usize {
    (ORDERED_BUFFER / (2 * parallelism.max(1) + 2)).max(MIN_ORDERED_SPAN)
}

/// The least [`ordered_span`].
const MIN_ORDERED_SPAN: usize = 1_024;

/// How a sweep's units are sized.
#[derive(Clone, Copy, Debug)]
pub(super) struct UnitSizing {
    /// Evaluations a unit should cost.
    pub(super) unit_evals: u64,
    /// Scorers to keep busy.
    pub(super) parallelism: usize,
    /// A node's shard cache: a shard larger than it is streamed from the store by every unit.
    pub(super) cache_bytes: u64,
}

impl UnitSizing {
    /// Whether a node streams `shard` rather than holding it: it is larger than the cache.
    fn streams(&self, shard: &ShardInfo) -> bool {
        shard.bytes_in_memory() > self.cache_bytes
    }

    /// Bytes in memory of a slice of a history read slice after slice: half the cache, so
    /// that a slice fits beside the one the node's other scorers are on.
    fn slice_budget(&self) -> u64 {
        self.cache_bytes / 2
    }

    /// Parameter sets per unit of a shard (`None`: unreadable, any size will do).
    ///
    /// A shard that fits the cache is read once per node and shared, so units are sized by
    /// time ([`chunk_size`]). A larger one is streamed by each unit in full: its sets are cut
    /// into as few units as keep the scorers busy (`parallelism` over the shards), so that the
    /// history is read about once per scorer that needs a share of it, not once per slice of
    /// the time budget. Units sized by time stay within [`ordered_span`]; a streamed shard's
    /// do not (another read of the history costs more than sorting some outputs at the end).
    fn sets_per_unit(&self, n_sets: usize, info: Option<&ShardInfo>, n_shards: usize) -> usize {
        let rows = info.map_or(0, ShardInfo::n_rows);
        let by_time = chunk_size(n_sets, rows, self.unit_evals, self.parallelism);
        let sets = if info.is_some_and(|i| self.streams(i)) {
            let units = self.parallelism.div_ceil(n_shards.max(1)).max(1);
            by_time.max(n_sets.div_ceil(units))
        } else {
            by_time.min(ordered_span(self.parallelism))
        };
        sets.max(1)
    }
}

/// Sets walked between two looks at the cancellation token: a signal stops the planning of a
/// huge grid within a fraction of a second.
pub(super) const CANCEL_CHECK_SETS: u64 = 1 << 18;

/// What cutting a plan into units gives, counted without walking the grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct UnitCount {
    /// Work units.
    pub(super) units: usize,
    /// Tick-parameter evaluations they cost.
    pub(super) evaluations: u64,
    /// Bytes of the dataset they read on one node: each shard that fits the cache once, each
    /// streamed one once per unit.
    pub(super) bytes_to_read: u64,
    /// Reads of a slice of days or of a whole shard the units do: a unit of a history read by
    /// slices counts its slices, any other unit one.
    pub(super) slices: u64,
}

/// How many units [`plan_units`] would cut `plan` into with nothing resumed, the evaluations
/// they cost and the bytes they read, without walking the grid (what a dry run reports).
pub(super) fn count_units(plan: &Plan, sizing: UnitSizing) -> UnitCount {
    let mut count = UnitCount::default();
    let n_shards = plan.infos.len();
    let sliced = slicing_refusal(plan).is_none();
    for (ordinal, info) in plan.infos.iter().enumerate() {
        let info = info.as_ref().ok();
        let rows = info.map_or(0, ShardInfo::n_rows);
        let chunk = sizing.sets_per_unit(plan.n_sets, info, n_shards);
        let units = plan.n_sets.div_ceil(chunk);
        count.units += units;
        count.evaluations = count
            .evaluations
            .saturating_add(rows.saturating_mul(plan.n_sets as u64));
        if let Some(info) = info {
            let bytes: u64 = info.files.iter().map(|f| f.size).sum();
            let reads = if sizing.streams(info) {
                units as u64
            } else {
                1
            };
            count.bytes_to_read = count.bytes_to_read.saturating_add(bytes * reads);
            let slices = if sliced && sizing.streams(info) {
                slice_chain_from(plan, ordinal, sizing).len() as u64
            } else {
                1
            };
            count.slices += units as u64 * slices;
        } else {
            count.slices += units as u64;
        }
    }
    count
}

/// The units of `plan` that `done` (cells read back from the persisted ledger) does not cover.
/// Cells of `done` that are not part of this plan are dropped.
///
/// # Errors
/// [`Error::InterruptedPlanning`] when `cancel` fires while the grid is walked (checked every
/// [`CANCEL_CHECK_SETS`] sets), [`Error::Config`] for more units than ids.
pub(super) fn plan_units(
    plan: &Plan,
    mut done: BTreeMap<CellKey, RecordedCell>,
    sizing: UnitSizing,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Planned> {
    let n_sets = plan.n_sets;
    // A grid that keeps a list of positions (a rung of successive halving) gets units that list
    // their sets: a scorer then needs no copy of the list.
    let listed = plan.spec.grid.kept().is_some();
    let mut planned = Planned {
        units: Vec::new(),
        evaluations: 0,
        resumed: Vec::new(),
    };
    // (first set index, shard ordinal, unit), ids given once all are ordered.
    let mut runs: Vec<(u64, usize, WorkUnit)> = Vec::new();
    let mut no_slices = NoSlices {
        why: slicing_refusal(plan),
        warned: false,
    };
    for (ordinal, (shard, info)) in plan.spec.shards.iter().zip(&plan.infos).enumerate() {
        let rows = info.as_ref().map_or(0, ShardInfo::n_rows);
        let digest = crate::data::files_digest(&plan.shard_files[ordinal]);
        let id = shard.id();
        let done_here = done.keys().filter(|k| k.shard == id).count();
        let todo = n_sets.saturating_sub(done_here);
        planned.evaluations += rows * todo as u64;
        let sets = sizing.sets_per_unit(todo, info.as_ref().ok(), plan.spec.shards.len());
        let streamed = info.as_ref().is_ok_and(|i| sizing.streams(i));
        let chain = chain_of(info, streamed, &mut no_slices, || {
            slice_chain_from(plan, ordinal, sizing)
        });
        let chunk = u32::try_from(sets).unwrap_or(u32::MAX);
        let whole = 0..plan.spec.grid.product_len() as u64;
        // Each set of the grid in order, with whether it is final already.
        let sets: Box<dyn Iterator<Item = (u64, bool)>> = if done_here == 0 {
            Box::new(plan.spec.grid.slice(whole).positions().map(|p| (p, false)))
        } else {
            let (done, resumed) = (&mut done, &mut planned.resumed);
            Box::new((0u64..).zip(plan.spec.grid.slice(whole)).map(
                move |(index, (position, set))| {
                    let key = CellKey {
                        shard: id.clone(),
                        param_set: set.id(),
                    };
                    let recorded = done.remove(&key);
                    let final_already = recorded.is_some();
                    if let Some(cell) = recorded {
                        resumed.push(cell.into_final(key, SetPlace { index, position }));
                    }
                    (position, final_already)
                },
            ))
        };
        for sets in UnitCutter::new(chunk, listed).cut(sets, cancel)? {
            let first = sets.index_of(0);
            let unit = WorkUnit {
                id: UnitId(0),
                shard: shard.clone(),
                sets,
                files_digest: Some(digest.clone()),
                streamed,
                chain: chain.clone(),
            };
            runs.push((first, ordinal, unit));
        }
    }
    planned.units = in_grid_order(runs)?;
    Ok(planned)
}

/// Why the plan's histories cannot be read by slices, if they cannot: its strategy does not
/// carry its lanes' state, or declares a shared series that cannot be saved (looked at on the
/// grid's first set).
fn slicing_refusal(plan: &Plan) -> Option<String> {
    let strategy = plan.strategy;
    if !strategy.carry {
        return Some(format!(
            "strategy `{}` does not carry its state: derive serde's Serialize and Deserialize \
             for it and register it with `#[gridtest::strategy(name = \"{}\", carry)]` to \
             read them by slices",
            strategy.name, strategy.name
        ));
    }
    let whole = 0..plan.spec.grid.product_len() as u64;
    let (_, first) = plan.spec.grid.slice(whole).next()?;
    (strategy.uncarried_series)(&first).map(|series| {
        format!(
            "strategy `{}` shares the series {series}, whose state cannot be carried (a \
             SharedMean's or an Indicator's can)",
            strategy.name
        )
    })
}

/// The chain of a history read by slices: one when the history streams and the strategy
/// can be sliced (`no_slices` is `None`), else none, with the reason logged once.
fn chain_of(
    info: &std::result::Result<ShardInfo, crate::data::DataError>,
    streamed: bool,
    no_slices: &mut NoSlices,
    chain: impl FnOnce() -> SliceChain,
) -> Option<Box<SliceChain>> {
    let info = info.as_ref().ok().filter(|_| streamed)?;
    let Some(why) = &no_slices.why else {
        return Some(Box::new(chain()));
    };
    if !std::mem::replace(&mut no_slices.warned, true) {
        tracing::warn!(shard = %info.shard, mib = info.bytes_in_memory() >> 20,
            "histories larger than a node's cache are read whole by each unit, and a lost \
             node loses a whole history's work: {why}");
    }
    None
}

/// Why a plan's histories are not read by slices ([`slicing_refusal`]), and whether that was
/// said already.
struct NoSlices {
    why: Option<String>,
    warned: bool,
}

/// [`slice_chain`] of the plan's shard `ordinal` (whose info is known).
fn slice_chain_from(plan: &Plan, ordinal: usize, sizing: UnitSizing) -> SliceChain {
    let info = plan.infos[ordinal].as_ref().expect("a readable shard");
    slice_chain(info, &plan.shard_files[ordinal], sizing.slice_budget())
}

/// The slices of a history (each day's bytes in memory from its rows), not started.
fn slice_chain(info: &ShardInfo, files: &[ListedFile], budget: u64) -> SliceChain {
    let per_row = info.bytes_in_memory() / info.n_rows().max(1);
    let mut days: BTreeMap<NaiveDate, u64> = BTreeMap::new();
    for file in &info.files {
        *days.entry(file.date).or_default() += file.rows * per_row;
    }
    let days: Vec<_> = days.into_iter().collect();
    SliceChain::new(cut_days(&days, files, budget), info.n_days())
}

/// Cuts a shard's sets, in grid order, into units of at most `chunk` consecutive sets: runs
/// of the grid, or lists of their places when `listed`.
struct UnitCutter {
    chunk: u32,
    listed: bool,
    current: Vec<SetPlace>,
    run: Option<(SetPlace, u32)>,
    done: Vec<SetSpan>,
}

impl UnitCutter {
    fn new(chunk: u32, listed: bool) -> Self {
        Self {
            chunk,
            listed,
            current: Vec::new(),
            run: None,
            done: Vec::new(),
        }
    }

    /// The next set to compute.
    fn push(&mut self, place: SetPlace) {
        let full = self.run.is_some_and(|(_, count)| count >= self.chunk);
        if full || self.run.is_none() {
            self.close();
            self.run = Some((place, 0));
        }
        if let Some((_, count)) = &mut self.run {
            *count += 1;
        }
        if self.listed {
            self.current.push(place);
        }
    }

    /// Ends the current unit (the next set is not adjacent: one in between is final already).
    fn close(&mut self) {
        if let Some((first, count)) = self.run.take() {
            self.done.push(if self.listed {
                SetSpan::Listed(std::mem::take(&mut self.current))
            } else {
                SetSpan::Run { first, count }
            });
        }
    }

    /// Cuts the grid's sets, each with whether it is final already, into spans; checks
    /// `cancel` every [`CANCEL_CHECK_SETS`] sets.
    fn cut(
        mut self,
        sets: impl Iterator<Item = (u64, bool)>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Vec<SetSpan>> {
        for (index, (position, final_already)) in (0u64..).zip(sets) {
            if index % CANCEL_CHECK_SETS == 0 && cancel.is_cancelled() {
                return Err(Error::InterruptedPlanning);
            }
            if final_already {
                self.close();
            } else {
                self.push(SetPlace { index, position });
            }
        }
        Ok(self.finish())
    }

    fn finish(mut self) -> Vec<SetSpan> {
        self.close();
        self.done
    }
}

/// The units queued in grid order across shards (by first set, then shard), so that cells
/// become final roughly in the order of the output files, which are then written while the
/// sweep computes; numbered in that order.
fn in_grid_order(mut runs: Vec<(u64, usize, WorkUnit)>) -> Result<Vec<WorkUnit>> {
    runs.sort_by_key(|(first, ordinal, _)| (*first, *ordinal));
    (0u64..)
        .zip(runs)
        .map(|(i, (_, _, mut unit))| {
            unit.id = UnitId(u32::try_from(i).map_err(|_| Error::Config {
                problems: vec![
                    "the sweep needs more than 2^32 work units: raise --unit-evals".to_owned(),
                ],
            })?);
            Ok(unit)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{FileInfo, Shard};
    use crate::strategy::DataKind;

    /// A tick shard of `rows` events in one file.
    fn shard_of(rows: u64) -> ShardInfo {
        let date = "2024-01-02".parse().unwrap();
        ShardInfo {
            shard: Shard::new("S", date, date),
            kind: DataKind::Ticks,
            files: vec![FileInfo {
                url: "file:///d/symbol=S/date=2024-01-02/part-0.parquet".to_owned(),
                size: 1,
                e_tag: None,
                date,
                rows,
                location: object_store::path::Path::from("symbol=S/date=2024-01-02/part-0.parquet"),
            }],
        }
    }

    #[test]
    fn a_shard_that_fits_the_cache_gets_units_sized_by_time() {
        let sizing = UnitSizing {
            unit_evals: 250_000_000,
            parallelism: 2,
            cache_bytes: 512 << 20,
        };
        // 1 M ticks (24 MB): 250 sets make a unit's 2.5e8 evaluations.
        assert_eq!(
            sizing.sets_per_unit(955, Some(&shard_of(1_000_000)), 4),
            250
        );
        assert_eq!(sizing.sets_per_unit(955, None, 4), 478, "by parallelism");
    }

    #[test]
    fn a_streamed_shard_gets_as_few_units_as_keep_the_scorers_busy() {
        let streamed = UnitSizing {
            unit_evals: 250_000_000,
            parallelism: 2,
            cache_bytes: 32 << 20,
        };
        // 10 M ticks (240 MB) over a 32 MiB cache: by time 25 sets, streamed each unit reads
        // the whole history, so four shards on two scorers get one unit each,
        let history = shard_of(10_000_000);
        assert_eq!(streamed.sets_per_unit(955, Some(&history), 4), 955);
        // and one shard two units, one per scorer.
        assert_eq!(streamed.sets_per_unit(955, Some(&history), 1), 478);
        let cached = UnitSizing {
            cache_bytes: 1 << 30,
            ..streamed
        };
        assert_eq!(cached.sets_per_unit(955, Some(&history), 4), 25);
        // Many sets: the history is still read once per scorer, whatever the outputs' buffer.
        assert_eq!(
            streamed.sets_per_unit(1_000_000, Some(&history), 1),
            500_000
        );
    }

    #[test]
    fn units_fit_the_buffer_of_ordered_outputs() {
        let sizing = UnitSizing {
            unit_evals: 250_000_000,
            parallelism: 2,
            cache_bytes: 512 << 20,
        };
        // 10 M sets on a shard of 6 000 ticks: 41 666 sets by time, three units in flight
        // would overflow the buffer.
        let sets = sizing.sets_per_unit(10_000_000, Some(&shard_of(6_000)), 1);
        assert_eq!(sets, ORDERED_BUFFER / 6);
        assert!(sets * 2 * 2 < ORDERED_BUFFER);
        let cluster = UnitSizing {
            parallelism: 16_000,
            ..sizing
        };
        // On 16 000 scorers 10⁸ sets would make units of 6 250 sets: they keep 1 024, and the
        // outputs are partly sorted at the end rather than units too thin to fill the lanes.
        assert_eq!(
            cluster.sets_per_unit(100_000_000, Some(&shard_of(6_000)), 1),
            MIN_ORDERED_SPAN
        );
    }
}
