//! `Ledger`: the state of every work unit and cell of a sweep. Pure (no actors, no I/O; the time
//! comes from its [`Clock`]).
//!
//! Its memory does not grow with the grid's cells: a unit names a span of the grid (see
//! [`SetSpan`]) and keeps one bit per open cell; final cells are handed out through
//! [`Ledger::take_journal`] (to be persisted and aggregated), not kept; per-cell entries exist
//! only for cells that failed and wait for another attempt.
//!
//! Invariants:
//! * every cell ends in exactly one final state (metrics, or a failure with its attempts);
//! * results are accepted **by cell** (shard and set), whoever sends them and whichever unit
//!   they came from: a late, duplicated or speculative result never double-counts, and results
//!   of a unit leased by an earlier incarnation of the head are still usable;
//! * a unit whose holder is lost goes back to the front of the queue, without counting as an
//!   attempt of its cells; a cell that fails by itself is retried (in a new unit) until it has
//!   failed `max_attempts` times.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use self::held_alone::HeldAlone;
use self::load::Load;
use self::pace::Pace;
use self::unit_entry::{UnitEntry, UnitState};
use super::clock::{Clock, SystemClock};
use super::slice_chain::{CheckpointBytes, SliceChain};
use super::work_unit::{SetSpan, UnitId, WorkUnit};
pub use super::worker_id::WorkerId;
use crate::data::ShardId;
use crate::engine::{CellKey, CellOutcome, Trade};
use crate::params::{Grid, ParamSetId, SetPlace};

/// Attempts a failing cell gets by default.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// The most attempts a failing cell may be given: past a few, a cell that keeps failing is
/// failing for a reason, and each attempt is a unit's worth of work.
pub const MAX_ATTEMPTS: u32 = 100;

/// How far down the queue a lease looks for a unit whose shard the worker's node holds.
const LOCALITY_WINDOW: usize = 256;

/// How many of the longest-held units a speculative lease looks at for one running late.
const LATE_WINDOW: usize = 64;

/// One result of a scorer: a cell of the unit's shard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetResult {
    /// Where the set sits in the grid.
    pub place: SetPlace,
    /// The set's id.
    pub param_set: ParamSetId,
    /// Its outcome.
    pub outcome: CellOutcome,
    /// Its return per day of the shard with data, when recorded (else empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub day_returns: Vec<f64>,
    /// Its round trips, when recorded (`--trades`; else empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trades: Vec<Trade>,
}

/// A cell that became final, as [`Ledger::take_journal`] hands it out.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalCell {
    /// The cell.
    pub key: CellKey,
    /// Where its set sits in the grid.
    pub place: SetPlace,
    /// Its final outcome.
    pub outcome: CellOutcome,
    /// Its return per day, when recorded ([`SetResult::day_returns`]).
    pub day_returns: Vec<f64>,
    /// Its round trips, when recorded ([`SetResult::trades`]).
    pub trades: Vec<Trade>,
}

/// What [`Ledger::report`] did with a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Some cells were new: this many became final, this many were queued for another attempt.
    Accepted {
        /// Cells that became final.
        new: usize,
        /// Failed cells queued for a retry.
        retried: usize,
    },
    /// Every cell was already final: ignored.
    Duplicate,
}

/// Counters of what the ledger has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerStats {
    /// Units put back in the queue because their holder was lost.
    pub requeued: u64,
    /// Speculative second leases of straggling units.
    pub speculative: u64,
    /// Cell results ignored because the cell was already final.
    pub duplicate_cells: u64,
    /// Failed cells queued for another attempt.
    pub retried_cells: u64,
    /// Cell results for cells this sweep does not expect (ignored).
    pub foreign_cells: u64,
    /// Units cut at the end of the sweep (guided self-scheduling, see
    /// [`Ledger::with_tail_splitting`]).
    #[serde(default)]
    pub split: u64,
    /// Slices of chained histories done, their checkpoints kept (see [`Ledger::slice_done`]).
    #[serde(default)]
    pub slices: u64,
    /// Leases of a chained unit that resume from a checkpoint (its holder was lost after
    /// some of its slices).
    #[serde(default)]
    pub resumed_chains: u64,
}

/// Units, leases and open cells of one sweep.
#[derive(Debug)]
pub struct Ledger {
    grid: Grid,
    units: BTreeMap<UnitId, UnitEntry>,
    queue: VecDeque<UnitId>,
    /// Per shard, its run units by the index of their first set.
    runs: HashMap<ShardId, BTreeMap<u64, UnitId>>,
    /// Cells waiting in listed (retry) units.
    listed: HashMap<(ShardId, u64), UnitId>,
    /// Failed attempts of cells waiting for another one.
    attempts: HashMap<(ShardId, u64), u32>,
    /// Each shard's files digest, as its units carry it (for the retry units made here).
    files_digests: HashMap<ShardId, String>,
    /// Each history read by slices, its chain not started (for the retry units made here).
    chains: HashMap<ShardId, SliceChain>,
    /// Slices of chained units passed (done, or their unit is), and in all.
    slices: (u64, u64),
    /// Nodes that may not run some shards (they see other data).
    barred: barred::Barred,
    expected: usize,
    recorded: usize,
    failed: usize,
    units_done: usize,
    next_id: u32,
    max_attempts: u32,
    speculate: bool,
    split_tail: bool,
    load: Load,
    held_alone: HeldAlone,
    pace: Pace,
    stats: LedgerStats,
    journal: Vec<FinalCell>,
    clock: Arc<dyn Clock>,
}

impl Ledger {
    /// A ledger of the sweep over `grid` with every unit pending, queued in the given order.
    #[must_use]
    pub fn new(grid: Grid, units: Vec<WorkUnit>) -> Self {
        let mut ledger = Self {
            grid,
            units: BTreeMap::new(),
            queue: VecDeque::new(),
            runs: HashMap::new(),
            listed: HashMap::new(),
            attempts: HashMap::new(),
            files_digests: HashMap::new(),
            chains: HashMap::new(),
            slices: (0, 0),
            barred: barred::Barred::default(),
            expected: 0,
            recorded: 0,
            failed: 0,
            units_done: 0,
            next_id: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            speculate: true,
            split_tail: false,
            load: Load::default(),
            held_alone: HeldAlone::default(),
            pace: Pace::default(),
            stats: LedgerStats::default(),
            journal: Vec::new(),
            clock: Arc::new(SystemClock),
        };
        for unit in units {
            ledger.next_id = ledger.next_id.max(unit.id.0 + 1);
            ledger.expected += unit.sets.len();
            ledger.add(unit, false);
        }
        ledger
    }

    /// Counts `done` cells (of which `failed` failed) as final already: a resumed sweep whose
    /// units cover only the rest.
    #[must_use]
    pub fn with_resumed(mut self, done: usize, failed: usize) -> Self {
        self.expected += done;
        self.recorded += done;
        self.failed += failed;
        self
    }

    /// Sets how many times a failing cell is attempted before its failure is final.
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Reads the time from `clock` (the system's monotonic clock by default).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Enables or disables speculative re-runs of the last running units.
    #[must_use]
    pub fn with_speculation(mut self, on: bool) -> Self {
        self.speculate = on;
        self
    }

    fn add(&mut self, unit: WorkUnit, front: bool) {
        let (id, shard) = (unit.id, unit.shard.id());
        if let Some(digest) = &unit.files_digest
            && !self.files_digests.contains_key(&shard)
        {
            self.files_digests.insert(shard.clone(), digest.clone());
        }
        if let Some(chain) = &unit.chain {
            self.slices.0 += u64::from(chain.done);
            self.slices.1 += chain.len() as u64;
        }
        if let Some(chain) = &unit.chain
            && !self.chains.contains_key(&shard)
        {
            let fresh = SliceChain::new(chain.slices.clone(), chain.n_days);
            self.chains.insert(shard.clone(), fresh);
        }
        match &unit.sets {
            SetSpan::Run { first, .. } => {
                self.runs.entry(shard).or_default().insert(first.index, id);
            }
            SetSpan::Listed(places) => {
                for p in places {
                    self.listed.insert((shard.clone(), p.index), id);
                }
            }
        }
        let entry = UnitEntry::new(unit);
        self.load.enter(&entry.state, entry.unit.sets.len());
        let empty = entry.open_count == 0;
        self.units.insert(id, entry);
        if empty {
            self.finish_unit(id);
        } else if front {
            self.queue.push_front(id);
        } else {
            self.queue.push_back(id);
        }
    }

    fn finish_unit(&mut self, id: UnitId) {
        if let Some(entry) = self.units.get_mut(&id)
            && entry.state != UnitState::Done
        {
            self.load.leave(&entry.state, entry.unit.sets.len());
            self.held_alone.leave(id, &entry.state);
            if let UnitState::Leased(holders) = &entry.state
                && let [(_, since)] = holders.as_slice()
            {
                let held = self.clock.now().saturating_duration_since(*since);
                self.pace.finished(entry.unit.sets.len(), held);
            }
            entry.state = UnitState::Done;
            self.units_done += 1;
            if let Some(chain) = &entry.unit.chain {
                self.slices.0 += (chain.len() as u64).saturating_sub(u64::from(chain.done));
            }
        }
    }

    /// The unit that holds the cell of set `index` on `shard`, and its offset there.
    fn locate(&self, shard: &ShardId, index: u64) -> Option<(UnitId, usize)> {
        let id = match self.listed.get(&(shard.clone(), index)) {
            Some(id) => *id,
            None => *self.runs.get(shard)?.range(..=index).next_back()?.1,
        };
        let offset = self.units.get(&id)?.unit.sets.offset_of(index)?;
        Some((id, offset))
    }

    /// Closes a cell in its unit (final, or moved to a retry unit).
    fn close_cell(&mut self, shard: &ShardId, index: u64, owner: UnitId, offset: usize) {
        let entry = self.units.get_mut(&owner).expect("located units exist");
        if matches!(entry.unit.sets, SetSpan::Listed(_)) {
            self.listed.remove(&(shard.clone(), index));
        }
        if entry.close(offset) {
            self.finish_unit(owner);
        }
    }

    /// Leases a unit to `worker`: the first pending unit whose shard is in `cached` (the worker's
    /// node holds it), else the first pending unit, else (when speculation is on and the queue
    /// is empty) a second copy of the longest-running unit held by someone else, once it runs
    /// late: held 1.5 times as long as its sets usually take (the module `pace`).
    pub fn lease(&mut self, worker: &WorkerId, cached: &[ShardId]) -> Option<WorkUnit> {
        if let Some(unit) = self.lease_pending(worker, cached) {
            return Some(unit);
        }
        if !self.speculate {
            return None;
        }
        let now = self.clock.now();
        // The longest held first; a smaller unit held less long may be late where a larger
        // one is not, so a few are looked at.
        let straggler = self
            .held_alone
            .longest_first()
            .take(LATE_WINDOW)
            .find(|id| {
                let entry = &self.units[id];
                matches!(&entry.state, UnitState::Leased(h)
                    if h[0].0 != *worker
                        && self.pace.late(entry.unit.sets.len(), now.duration_since(h[0].1)))
                    && self.may_take(worker, &entry.unit)
            })?;
        let entry = self.units.get_mut(&straggler).expect("exists");
        let sets = entry.unit.sets.len();
        self.held_alone.leave(straggler, &entry.state);
        self.load.leave(&entry.state, sets);
        if let UnitState::Leased(holders) = &mut entry.state {
            holders.push((worker.clone(), now));
        }
        self.load.enter(&entry.state, sets);
        entry.leases += 1;
        self.stats.speculative += 1;
        Some(entry.unit.clone())
    }

    /// Leases a pending unit to `worker` (one whose shard is in `cached` first), never a
    /// speculative copy; `None` when nothing is pending.
    pub fn lease_pending(&mut self, worker: &WorkerId, cached: &[ShardId]) -> Option<WorkUnit> {
        let now = self.clock.now();
        // Entries of units no longer pending are dropped lazily, from the front.
        while self.queue.front().is_some_and(|id| {
            self.units
                .get(id)
                .is_none_or(|e| e.state != UnitState::Pending)
        }) {
            self.queue.pop_front();
        }
        let local = (!cached.is_empty())
            .then(|| {
                self.queue.iter().take(LOCALITY_WINDOW).position(|id| {
                    let e = &self.units[id];
                    e.state == UnitState::Pending
                        && cached.contains(&e.unit.shard.id())
                        && self.may_take(worker, &e.unit)
                })
            })
            .flatten();
        // The front is pending (see above); a node barred from some shards looks further.
        let first = if self.barred.any(&worker.node) {
            self.queue.iter().position(|id| {
                let e = &self.units[id];
                e.state == UnitState::Pending && self.may_take(worker, &e.unit)
            })
        } else {
            (!self.queue.is_empty()).then_some(0)
        };
        if let Some(pos) = local.or(first) {
            let id = self.queue.remove(pos).expect("position is valid");
            self.cut_to_share(id);
            let entry = self.units.get_mut(&id).expect("queued units exist");
            self.load.leave(&entry.state, entry.unit.sets.len());
            entry.state = UnitState::Leased(vec![(worker.clone(), now)]);
            self.load.enter(&entry.state, entry.unit.sets.len());
            self.held_alone.enter(id, &entry.state);
            entry.leases += 1;
            if entry.unit.chain.as_ref().is_some_and(|c| c.done > 0) {
                self.stats.resumed_chains += 1;
            }
            return Some(entry.unit.clone());
        }
        None
    }

    /// Takes back the leases of `lost` holders, of the units `of` selects.
    fn release_where(
        &mut self,
        lost: impl Fn(&WorkerId) -> bool,
        of: impl Fn(&WorkUnit) -> bool,
    ) -> Vec<UnitId> {
        let mut released = Vec::new();
        for (id, entry) in &mut self.units {
            let touched =
                matches!(&entry.state, UnitState::Leased(h) if h.iter().any(|(w, _)| lost(w)));
            if !touched || !of(&entry.unit) {
                continue;
            }
            let sets = entry.unit.sets.len();
            self.held_alone.leave(*id, &entry.state);
            self.load.leave(&entry.state, sets);
            if let UnitState::Leased(holders) = &mut entry.state {
                holders.retain(|(w, _)| !lost(w));
                if holders.is_empty() {
                    entry.state = UnitState::Pending;
                    released.push(*id);
                }
            }
            self.load.enter(&entry.state, sets);
            self.held_alone.enter(*id, &entry.state);
        }
        for id in released.iter().rev() {
            self.queue.push_front(*id);
        }
        self.stats.requeued += released.len() as u64;
        released
    }

    /// Takes back every lease held by `worker`; units nobody else holds go back to the front of
    /// the queue. Returns those units.
    pub fn release_worker(&mut self, worker: &WorkerId) -> Vec<UnitId> {
        self.release_where(|w| w == worker, |_| true)
    }

    /// Takes back every lease held on `node` (it disconnected or went silent).
    pub fn release_node(&mut self, node: &str) -> Vec<UnitId> {
        self.release_where(|w| w.node == node, |_| true)
    }

    /// Slice `slice` of chained unit `id` is done and left the lanes' state `checkpoint`: a
    /// later lease of the unit (its holder lost) resumes after it. False (ignored) for a unit
    /// that is done or not chained, or a slice the unit is past already.
    pub fn slice_done(&mut self, id: UnitId, slice: u32, checkpoint: CheckpointBytes) -> bool {
        let Some(entry) = self.units.get_mut(&id) else {
            return false;
        };
        let Some(chain) = entry.unit.chain.as_mut() else {
            return false;
        };
        let before = chain.done;
        let advanced = entry.state != UnitState::Done && chain.advance(slice, checkpoint);
        self.slices.0 += u64::from(chain.done - before);
        self.stats.slices += u64::from(advanced);
        advanced
    }

    /// Unit `id` as it stands (a chained unit with its last checkpoint).
    #[must_use]
    pub fn unit(&self, id: UnitId) -> Option<&WorkUnit> {
        self.units.get(&id).map(|e| &e.unit)
    }

    /// Slices of the histories read by slices that are passed (done, or their unit is), and
    /// in all.
    #[must_use]
    pub fn slices(&self) -> (u64, u64) {
        self.slices
    }

    /// Slices in the chain of unit `id` (0: no such unit, or not chained).
    #[must_use]
    pub fn chain_len(&self, id: UnitId) -> u32 {
        self.units
            .get(&id)
            .and_then(|e| e.unit.chain.as_ref())
            .map_or(0, |c| u32::try_from(c.len()).unwrap_or(u32::MAX))
    }

    /// Takes the cells that became final since the last call (to persist and aggregate them).
    pub fn take_journal(&mut self) -> Vec<FinalCell> {
        std::mem::take(&mut self.journal)
    }
}

mod barred;
mod counts;
mod held_alone;
mod load;
mod pace;
mod results;
mod tail_split;
#[cfg(test)]
mod tests;
mod unit_entry;
