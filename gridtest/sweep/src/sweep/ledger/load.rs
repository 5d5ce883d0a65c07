//! `Load`: how much work waits and how much is out, and how many scorers hold it, kept up to
//! date at every change of a unit's state (so that a lease reads it in constant time, whatever
//! the grid's size).

use std::collections::HashMap;

use super::unit_entry::UnitState;
use crate::sweep::WorkerId;

/// Units and sets by state, over a ledger's units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Load {
    /// Units waiting for a scorer.
    pub(super) pending_units: usize,
    /// Sets of those units.
    pub(super) pending_sets: u64,
    /// Units held by at least one scorer.
    pub(super) leased_units: usize,
    /// The units each scorer holds (a scorer with a prefetched unit holds two; a speculative
    /// copy counts for its holder too).
    holders: HashMap<WorkerId, u32>,
}

impl Load {
    /// A unit of `sets` sets entered `state`.
    pub(super) fn enter(&mut self, state: &UnitState, sets: usize) {
        match state {
            UnitState::Pending => {
                self.pending_units += 1;
                self.pending_sets += sets as u64;
            }
            UnitState::Leased(holders) => {
                self.leased_units += 1;
                for (worker, _) in holders {
                    *self.holders.entry(worker.clone()).or_default() += 1;
                }
            }
            UnitState::Done => {}
        }
    }

    /// A unit of `sets` sets left `state`.
    pub(super) fn leave(&mut self, state: &UnitState, sets: usize) {
        match state {
            UnitState::Pending => {
                self.pending_units -= 1;
                self.pending_sets -= sets as u64;
            }
            UnitState::Leased(holders) => {
                self.leased_units -= 1;
                for (worker, _) in holders {
                    if let Some(n) = self.holders.get_mut(worker) {
                        *n -= 1;
                        if *n == 0 {
                            self.holders.remove(worker);
                        }
                    }
                }
            }
            UnitState::Done => {}
        }
    }

    /// Distinct scorers holding at least one unit.
    pub(super) fn scorers(&self) -> usize {
        self.holders.len()
    }
}
