//! `Load`: how much work waits and how much is out, kept up to date at every change of a
//! unit's state (so that a lease reads it in constant time, whatever the grid's size).

use super::unit_entry::UnitState;

/// Units and sets by state, over a ledger's units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Load {
    /// Units waiting for a scorer.
    pub(super) pending_units: usize,
    /// Sets of those units.
    pub(super) pending_sets: u64,
    /// Units held by at least one scorer.
    pub(super) leased_units: usize,
}

impl Load {
    /// A unit of `sets` sets entered `state`.
    pub(super) fn enter(&mut self, state: &UnitState, sets: usize) {
        match state {
            UnitState::Pending => {
                self.pending_units += 1;
                self.pending_sets += sets as u64;
            }
            UnitState::Leased(_) => self.leased_units += 1,
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
            UnitState::Leased(_) => self.leased_units -= 1,
            UnitState::Done => {}
        }
    }
}
