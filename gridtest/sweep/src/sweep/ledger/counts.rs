//! What a [`Ledger`] counts: cells, units by state, leases.

use super::unit_entry::UnitState;
use super::{Ledger, LedgerStats, UnitId};

impl Ledger {
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
        self.recorded
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
        self.load.pending_units
    }

    /// How many units scorers hold (a unit held by two, a speculative copy, counts once).
    #[must_use]
    pub fn leased(&self) -> usize {
        self.load.leased_units
    }

    /// Whether a unit waits for a scorer.
    #[must_use]
    pub fn has_pending(&self) -> bool {
        self.load.pending_units > 0
    }

    /// Whether every cell is final.
    #[must_use]
    pub fn is_finished(&self) -> bool {
        self.units_left() == 0 && self.recorded >= self.expected
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> LedgerStats {
        self.stats
    }
}
