//! `HeldAlone`: the units exactly one scorer holds, ordered by when it took them, kept up to
//! date at every change of a unit's state. A speculative copy goes to the unit held longest:
//! the first one here, found without a scan of every unit (at the end of a sweep a thousand
//! idle scorers ask at once, and the sweep has tens of thousands of units).

use std::collections::BTreeSet;
use std::time::Instant;

use super::unit_entry::UnitState;
use crate::sweep::UnitId;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct HeldAlone(BTreeSet<(Instant, UnitId)>);

impl HeldAlone {
    /// Unit `id` entered `state`.
    pub(super) fn enter(&mut self, id: UnitId, state: &UnitState) {
        if let Some(since) = alone_since(state) {
            self.0.insert((since, id));
        }
    }

    /// Unit `id` left `state`.
    pub(super) fn leave(&mut self, id: UnitId, state: &UnitState) {
        if let Some(since) = alone_since(state) {
            self.0.remove(&(since, id));
        }
    }

    /// The units one scorer holds, the longest held first.
    pub(super) fn longest_first(&self) -> impl Iterator<Item = UnitId> + '_ {
        self.0.iter().map(|(_, id)| *id)
    }
}

fn alone_since(state: &UnitState) -> Option<Instant> {
    match state {
        UnitState::Leased(holders) if holders.len() == 1 => Some(holders[0].1),
        _ => None,
    }
}
