//! `Ledger`: the state of every work unit and cell of a sweep. Pure (no actors, no I/O), so the
//! scheduling rules are tested on their own.
//!
//! Invariants:
//! * every cell ends in exactly one final state (metrics, or a failure with its attempts);
//! * results are accepted **by cell key**, whoever sends them and whichever unit they came from:
//!   a late, duplicated or speculative result never double-counts, and results of a unit leased
//!   by an earlier incarnation of the head are still usable;
//! * a unit whose holder is lost goes back to the front of the queue, without counting as an
//!   attempt of its cells; a cell that fails by itself is retried (in a new unit) until it has
//!   failed `max_attempts` times.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::work_unit::{UnitId, WorkUnit};
use crate::data::{Shard, ShardId};
use crate::engine::{CellFailure, CellKey, CellOutcome, FailureKind};
use crate::params::ParamSetId;

/// Attempts a failing cell gets by default.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// How far down the queue a lease looks for a unit whose shard the worker's node holds.
const LOCALITY_WINDOW: usize = 256;

/// Who holds a lease: a scorer slot on a node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct WorkerId {
    /// Node name (stable across restarts of the same pod).
    pub node: String,
    /// Scorer slot on the node.
    pub slot: String,
}

impl WorkerId {
    /// A worker id.
    #[must_use]
    pub fn new(node: impl Into<String>, slot: impl Into<String>) -> Self {
        Self {
            node: node.into(),
            slot: slot.into(),
        }
    }

    /// Whether the slot is a GPU scorer (`gpuD-K`).
    #[must_use]
    pub fn is_gpu(&self) -> bool {
        self.slot.starts_with("gpu")
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.node, self.slot)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum UnitState {
    Pending,
    Leased(Vec<(WorkerId, Instant)>),
    Done,
}

#[derive(Debug)]
struct UnitEntry {
    unit: WorkUnit,
    state: UnitState,
    leases: u32,
    /// Cells of this unit not yet final (nor moved to a retry unit).
    open: usize,
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
    /// Cell results for keys this sweep does not expect (ignored).
    pub foreign_cells: u64,
}

/// Units, leases and cells of one sweep.
#[derive(Debug)]
pub struct Ledger {
    units: BTreeMap<UnitId, UnitEntry>,
    queue: VecDeque<UnitId>,
    cells: BTreeMap<CellKey, CellOutcome>,
    attempts: HashMap<CellKey, u32>,
    owner: HashMap<CellKey, UnitId>,
    expected: usize,
    failed: usize,
    units_done: usize,
    next_id: u32,
    max_attempts: u32,
    speculate: bool,
    stats: LedgerStats,
    journal: Vec<(CellKey, CellOutcome)>,
}

impl Ledger {
    /// A ledger with every unit pending, queued in the given order.
    #[must_use]
    pub fn new(units: Vec<WorkUnit>) -> Self {
        Self::resume(units, BTreeMap::new())
    }

    /// A ledger for a resumed sweep: `done` cells are final already, `units` cover the rest.
    #[must_use]
    pub fn resume(units: Vec<WorkUnit>, done: BTreeMap<CellKey, CellOutcome>) -> Self {
        let mut ledger = Self {
            units: BTreeMap::new(),
            queue: VecDeque::new(),
            failed: done.values().filter(|c| c.is_err()).count(),
            expected: done.len(),
            cells: done,
            attempts: HashMap::new(),
            owner: HashMap::new(),
            units_done: 0,
            next_id: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            speculate: true,
            stats: LedgerStats::default(),
            journal: Vec::new(),
        };
        for unit in units {
            ledger.next_id = ledger.next_id.max(unit.id.0 + 1);
            ledger.add(unit, false);
        }
        ledger
    }

    /// Sets how many times a failing cell is attempted before its failure is final.
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Enables or disables speculative re-runs of the last running units.
    #[must_use]
    pub fn with_speculation(mut self, on: bool) -> Self {
        self.speculate = on;
        self
    }

    fn add(&mut self, unit: WorkUnit, front: bool) {
        let shard = unit.shard.id();
        let mut open = 0;
        for set in &unit.sets {
            let key = CellKey {
                shard: shard.clone(),
                param_set: set.id(),
            };
            if !self.cells.contains_key(&key) && !self.owner.contains_key(&key) {
                self.expected += usize::from(!self.attempts.contains_key(&key));
                self.owner.insert(key, unit.id);
                open += 1;
            }
        }
        let id = unit.id;
        self.units.insert(
            id,
            UnitEntry {
                unit,
                state: UnitState::Pending,
                leases: 0,
                open,
            },
        );
        if open == 0 {
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
            entry.state = UnitState::Done;
            self.units_done += 1;
        }
    }

    /// Leases a unit to `worker`: the first pending unit whose shard is in `cached` (the worker's
    /// node holds it), else the first pending unit, else (when speculation is on and the queue
    /// is empty) a second copy of the longest-running unit held by someone else.
    pub fn lease(&mut self, worker: &WorkerId, cached: &[ShardId]) -> Option<WorkUnit> {
        if let Some(unit) = self.lease_pending(worker, cached) {
            return Some(unit);
        }
        if !self.speculate {
            return None;
        }
        let now = Instant::now();
        let straggler = self
            .units
            .iter()
            .filter_map(|(id, e)| match &e.state {
                UnitState::Leased(holders) if holders.len() == 1 && holders[0].0 != *worker => {
                    Some((holders[0].1, *id))
                }
                _ => None,
            })
            .min()
            .map(|(_, id)| id)?;
        let entry = self.units.get_mut(&straggler).expect("exists");
        if let UnitState::Leased(holders) = &mut entry.state {
            holders.push((worker.clone(), now));
        }
        entry.leases += 1;
        self.stats.speculative += 1;
        Some(entry.unit.clone())
    }

    /// Leases a pending unit to `worker` (one whose shard is in `cached` first), never a
    /// speculative copy; `None` when nothing is pending.
    pub fn lease_pending(&mut self, worker: &WorkerId, cached: &[ShardId]) -> Option<WorkUnit> {
        let now = Instant::now();
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
                    e.state == UnitState::Pending && cached.contains(&e.unit.shard.id())
                })
            })
            .flatten();
        if let Some(pos) = local.or((!self.queue.is_empty()).then_some(0)) {
            let id = self.queue.remove(pos).expect("position is valid");
            let entry = self.units.get_mut(&id).expect("queued units exist");
            entry.state = UnitState::Leased(vec![(worker.clone(), now)]);
            entry.leases += 1;
            return Some(entry.unit.clone());
        }
        None
    }

    /// Records results for cells of `shard` (one per parameter set). `unit`, when known, is the
    /// unit they were leased as; results are matched by cell key either way. Cells already final
    /// keep their first result. A failed cell is retried in a new unit until it has failed
    /// `max_attempts` times (failures of kind `Params` are final at once).
    pub fn report(
        &mut self,
        unit: Option<UnitId>,
        shard: &Shard,
        results: Vec<(ParamSetId, CellOutcome)>,
    ) -> Completion {
        let shard_id = shard.id();
        let (mut new, mut duplicates) = (0usize, 0u64);
        let mut retry = Vec::new();
        for (param_set, outcome) in results {
            let key = CellKey {
                shard: shard_id.clone(),
                param_set,
            };
            if self.cells.contains_key(&key) {
                duplicates += 1;
                continue;
            }
            let Some(owner) = self.owner.remove(&key) else {
                // Not a cell of this sweep (or of what is left of it): ignore.
                self.stats.foreign_cells += 1;
                continue;
            };
            let owner = Some(owner);
            let outcome = match outcome {
                Ok(m) => Ok(m),
                Err(f) => {
                    let tried = self.attempts.get(&key).copied().unwrap_or(0) + 1;
                    if f.kind != FailureKind::Params && tried < self.max_attempts {
                        self.attempts.insert(key.clone(), tried);
                        retry.push((key.clone(), owner));
                        continue;
                    }
                    Err(CellFailure {
                        attempts: tried,
                        ..f
                    })
                }
            };
            self.attempts.remove(&key);
            self.failed += usize::from(outcome.is_err());
            self.journal.push((key.clone(), outcome.clone()));
            self.cells.insert(key, outcome);
            new += 1;
            if let Some(owner) = owner {
                self.close_cell(owner);
            }
        }
        self.stats.duplicate_cells += duplicates;
        let retried = retry.len();
        if !retry.is_empty() {
            self.stats.retried_cells += retried as u64;
            let mut sets = Vec::with_capacity(retried);
            for (key, owner) in retry {
                let set = owner
                    .and_then(|o| self.units.get(&o))
                    .or_else(|| unit.and_then(|u| self.units.get(&u)))
                    .and_then(|e| e.unit.sets.iter().find(|s| s.id() == key.param_set))
                    .cloned();
                if let Some(o) = owner {
                    self.close_cell(o);
                }
                if let Some(set) = set {
                    sets.push(set);
                }
            }
            let id = UnitId(self.next_id);
            self.next_id += 1;
            self.add(
                WorkUnit {
                    id,
                    shard: shard.clone(),
                    sets,
                },
                false,
            );
        }
        if let Some(id) = unit
            && let Some(entry) = self.units.get(&id)
            && entry.open == 0
        {
            self.finish_unit(id);
        }
        if new == 0 && retried == 0 {
            Completion::Duplicate
        } else {
            Completion::Accepted { new, retried }
        }
    }

    fn close_cell(&mut self, owner: UnitId) {
        let finished = match self.units.get_mut(&owner) {
            Some(e) => {
                e.open = e.open.saturating_sub(1);
                e.open == 0
            }
            None => false,
        };
        if finished {
            self.finish_unit(owner);
        }
    }

    /// Fails every open cell of a unit with the same failure (e.g. its shard cannot be read);
    /// subject to retries like any failure.
    pub fn fail_unit(&mut self, id: UnitId, failure: &CellFailure) -> Completion {
        let Some(entry) = self.units.get(&id) else {
            return Completion::Duplicate;
        };
        let shard = entry.unit.shard.clone();
        let results = entry
            .unit
            .sets
            .iter()
            .map(|s| (s.id(), Err(failure.clone())))
            .collect();
        self.report(Some(id), &shard, results)
    }

    fn release_where(&mut self, lost: impl Fn(&WorkerId) -> bool) -> Vec<UnitId> {
        let mut released = Vec::new();
        for (id, entry) in &mut self.units {
            if let UnitState::Leased(holders) = &mut entry.state {
                holders.retain(|(w, _)| !lost(w));
                if holders.is_empty() {
                    entry.state = UnitState::Pending;
                    released.push(*id);
                }
            }
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
        self.release_where(|w| w == worker)
    }

    /// Takes back every lease held on `node` (it disconnected or went silent).
    pub fn release_node(&mut self, node: &str) -> Vec<UnitId> {
        self.release_where(|w| w.node == node)
    }

    /// Units currently leased to `node`.
    #[must_use]
    pub fn leased_to(&self, node: &str) -> usize {
        self.units
            .values()
            .filter(|e| matches!(&e.state, UnitState::Leased(h) if h.iter().any(|(w, _)| w.node == node)))
            .count()
    }

    /// How many times a unit has been leased.
    #[must_use]
    pub fn leases(&self, id: UnitId) -> u32 {
        self.units.get(&id).map_or(0, |e| e.leases)
    }

    /// Cells expected in all.
    #[must_use]
    pub fn expected(&self) -> usize {
        self.expected
    }

    /// Cells final so far.
    #[must_use]
    pub fn recorded(&self) -> usize {
        self.cells.len()
    }

    /// Cells final as failed so far.
    #[must_use]
    pub fn failed(&self) -> usize {
        self.failed
    }

    /// Units not yet complete.
    #[must_use]
    pub fn units_left(&self) -> usize {
        self.units.len() - self.units_done
    }

    /// Units waiting for a scorer.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.units
            .values()
            .filter(|e| e.state == UnitState::Pending)
            .count()
    }

    /// Whether every cell is final.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.units_left() == 0 && self.cells.len() >= self.expected
    }

    /// Takes the cells that became final since the last call (to persist them).
    pub fn take_journal(&mut self) -> Vec<(CellKey, CellOutcome)> {
        std::mem::take(&mut self.journal)
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> LedgerStats {
        self.stats
    }

    /// The final cells.
    #[must_use]
    pub fn cells(&self) -> &BTreeMap<CellKey, CellOutcome> {
        &self.cells
    }

    /// Takes the final cells.
    #[must_use]
    pub fn into_cells(self) -> BTreeMap<CellKey, CellOutcome> {
        self.cells
    }
}

#[cfg(test)]
mod tests;
