//! `Ledger`: the state of every work unit and cell of a sweep. Pure (no actors, no I/O), so the
//! scheduling rules are tested on their own.
//!
//! Invariants: every cell ends in exactly one final state; a result is accepted once per cell
//! key, so a late or duplicated result never double-counts; a unit whose worker is lost goes back
//! to the queue.

use std::collections::{BTreeMap, VecDeque};

use super::cell::{CellFailure, CellKey, CellOutcome};
use super::work_unit::{UnitId, WorkUnit};

#[derive(Clone, Debug, PartialEq, Eq)]
enum UnitState {
    Pending,
    Leased { worker: String },
    Done,
}

#[derive(Debug)]
struct UnitEntry {
    unit: WorkUnit,
    state: UnitState,
    leases: u32,
}

/// What [`Ledger::complete`] did with a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Recorded; this many cells were new.
    Accepted(usize),
    /// The unit was already complete: ignored.
    Duplicate,
    /// No such unit.
    Unknown,
}

/// Units, leases and cells of one sweep.
#[derive(Debug)]
pub struct Ledger {
    units: BTreeMap<UnitId, UnitEntry>,
    queue: VecDeque<UnitId>,
    cells: BTreeMap<CellKey, CellOutcome>,
    expected: usize,
    failed: usize,
    units_done: usize,
}

impl Ledger {
    /// A ledger with every unit pending, queued in the given order.
    #[must_use]
    pub fn new(units: Vec<WorkUnit>) -> Self {
        let expected = units.iter().map(|u| u.sets.len()).sum();
        let queue = units.iter().map(|u| u.id).collect();
        let units = units
            .into_iter()
            .map(|unit| {
                (
                    unit.id,
                    UnitEntry {
                        unit,
                        state: UnitState::Pending,
                        leases: 0,
                    },
                )
            })
            .collect();
        Self {
            units,
            queue,
            cells: BTreeMap::new(),
            expected,
            failed: 0,
            units_done: 0,
        }
    }

    /// Leases the next pending unit to `worker`.
    pub fn lease(&mut self, worker: &str) -> Option<WorkUnit> {
        while let Some(id) = self.queue.pop_front() {
            let entry = self.units.get_mut(&id).expect("queued units exist");
            if entry.state == UnitState::Pending {
                entry.state = UnitState::Leased {
                    worker: worker.to_owned(),
                };
                entry.leases += 1;
                return Some(entry.unit.clone());
            }
        }
        None
    }

    /// Records a unit's outcomes (one per parameter set, in the unit's order). Cells already
    /// recorded keep their first result.
    pub fn complete(&mut self, id: UnitId, outcomes: Vec<CellOutcome>) -> Completion {
        let Some(entry) = self.units.get_mut(&id) else {
            return Completion::Unknown;
        };
        if entry.state == UnitState::Done {
            return Completion::Duplicate;
        }
        entry.state = UnitState::Done;
        self.units_done += 1;
        let shard = entry.unit.shard.id();
        let mut new = 0;
        for (set, outcome) in entry.unit.sets.iter().zip(outcomes) {
            let key = CellKey {
                shard: shard.clone(),
                param_set: set.id(),
            };
            if let std::collections::btree_map::Entry::Vacant(slot) = self.cells.entry(key) {
                self.failed += usize::from(outcome.is_err());
                slot.insert(outcome);
                new += 1;
            }
        }
        Completion::Accepted(new)
    }

    /// Fails every cell of a unit with the same failure (e.g. its shard cannot be read).
    pub fn fail_unit(&mut self, id: UnitId, failure: &CellFailure) -> Completion {
        let n = self.units.get(&id).map_or(0, |e| e.unit.sets.len());
        let attempts = self.units.get(&id).map_or(1, |e| e.leases);
        let failure = CellFailure {
            attempts,
            ..failure.clone()
        };
        self.complete(id, vec![Err(failure); n])
    }

    /// Puts back in the queue (at the front) every unit leased to `worker`; returns them.
    pub fn release(&mut self, worker: &str) -> Vec<UnitId> {
        let mut released = Vec::new();
        for (id, entry) in &mut self.units {
            if matches!(&entry.state, UnitState::Leased { worker: w } if w == worker) {
                entry.state = UnitState::Pending;
                released.push(*id);
            }
        }
        for id in released.iter().rev() {
            self.queue.push_front(*id);
        }
        released
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

    /// Cells recorded so far.
    #[must_use]
    pub fn recorded(&self) -> usize {
        self.cells.len()
    }

    /// Cells recorded as failed so far.
    #[must_use]
    pub fn failed(&self) -> usize {
        self.failed
    }

    /// Units not yet complete.
    #[must_use]
    pub fn units_left(&self) -> usize {
        self.units.len() - self.units_done
    }

    /// Whether every unit is complete.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.units_left() == 0
    }

    /// The recorded cells.
    #[must_use]
    pub fn cells(&self) -> &BTreeMap<CellKey, CellOutcome> {
        &self.cells
    }

    /// Takes the recorded cells.
    #[must_use]
    pub fn into_cells(self) -> BTreeMap<CellKey, CellOutcome> {
        self.cells
    }
}

#[cfg(test)]
mod tests;
