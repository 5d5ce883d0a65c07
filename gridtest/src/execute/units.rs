//! Cutting a planned sweep into work units: per shard, the grid's sets not yet final, as runs
//! of consecutive sets of about `unit_evals` evaluations (finer when there would be too few
//! units to keep every scorer busy). The grid is walked, never collected: a unit names its
//! span of the grid, and only cells resumed from the persisted ledger are looked up by id.

use std::collections::BTreeMap;

use super::plan::Plan;
use crate::data::ShardInfo;
use crate::error::{Error, Result};
use crate::params::SetPlace;
use crate::sweep::{CellKey, CellOutcome, FinalCell, SetSpan, UnitId, WorkUnit, chunk_size};

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
            dataset_bytes: plan.spec.manifest.iter().map(|f| f.size).sum(),
            evals_per_cell: self.evaluations as f64 / cells_left.max(1) as f64,
            gpu_eligible: (plan.strategy.gpu)().is_some(),
        }
    }
}

/// Sets walked between two looks at the cancellation token: a signal stops the planning of a
/// huge grid within a fraction of a second.
pub(super) const CANCEL_CHECK_SETS: u64 = 1 << 18;

/// How many units [`plan_units`] would cut `plan` into with nothing resumed, and the
/// evaluations they cost, without walking the grid (what a dry run reports).
pub(super) fn count_units(plan: &Plan, unit_evals: u64, parallelism: usize) -> (usize, u64) {
    let mut units = 0;
    let mut evaluations = 0u64;
    for info in &plan.infos {
        let rows = info.as_ref().map_or(0, ShardInfo::n_rows);
        let chunk = chunk_size(plan.n_sets, rows, unit_evals, parallelism).max(1);
        units += plan.n_sets.div_ceil(chunk);
        evaluations = evaluations.saturating_add(rows.saturating_mul(plan.n_sets as u64));
    }
    (units, evaluations)
}

/// The units of `plan` that `done` (cells read back from the persisted ledger) does not cover.
/// Cells of `done` that are not part of this plan are dropped.
///
/// # Errors
/// [`Error::InterruptedPlanning`] when `cancel` fires while the grid is walked (checked every
/// [`CANCEL_CHECK_SETS`] sets), [`Error::Config`] for more units than ids.
pub(super) fn plan_units(
    plan: &Plan,
    mut done: BTreeMap<CellKey, CellOutcome>,
    (unit_evals, parallelism): (u64, usize),
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
    for (ordinal, (shard, info)) in plan.spec.shards.iter().zip(&plan.infos).enumerate() {
        let rows = info.as_ref().map_or(0, ShardInfo::n_rows);
        let digest = crate::data::files_digest(&plan.shard_files[ordinal]);
        let id = shard.id();
        let done_here = done.keys().filter(|k| k.shard == id).count();
        let todo = n_sets.saturating_sub(done_here);
        planned.evaluations += rows * todo as u64;
        let chunk = u32::try_from(chunk_size(todo, rows, unit_evals, parallelism).max(1))
            .unwrap_or(u32::MAX);
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
                    let outcome = done.remove(&key);
                    let final_already = outcome.is_some();
                    if let Some(outcome) = outcome {
                        resumed.push(FinalCell {
                            key,
                            place: SetPlace { index, position },
                            outcome,
                            day_returns: Vec::new(),
                        });
                    }
                    (position, final_already)
                },
            ))
        };
        let mut cut = UnitCutter::new(chunk, listed);
        for (index, (position, final_already)) in (0u64..).zip(sets) {
            if index % CANCEL_CHECK_SETS == 0 && cancel.is_cancelled() {
                return Err(Error::InterruptedPlanning);
            }
            if final_already {
                cut.close();
            } else {
                cut.push(SetPlace { index, position });
            }
        }
        for sets in cut.finish() {
            let first = sets.index_of(0);
            let unit = WorkUnit {
                id: UnitId(0),
                shard: shard.clone(),
                sets,
                files_digest: Some(digest.clone()),
            };
            runs.push((first, ordinal, unit));
        }
    }
    planned.units = in_grid_order(runs)?;
    Ok(planned)
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
