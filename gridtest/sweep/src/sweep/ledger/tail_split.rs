//! Guided self-scheduling at the end of a sweep: a unit about to be leased is cut so that the
//! lease carries no more than its holder's share of the work still waiting.
//!
//! Units are planned at a size that keeps the lease traffic low. At the end of a sweep that
//! size is what everyone waits for: once the queue holds fewer units than there are scorers,
//! the scorers that find it empty idle until the last whole units are done (half a unit each,
//! on average). With guided self-scheduling (Polychronopoulos and Kuck, 1987) a lease takes
//! `⌈pending sets / scorers⌉` sets at most, so the leases shrink as the queue runs dry and the
//! scorers finish together, within about one small unit of each other. The scorers are
//! counted as the units out plus the one asking (a scorer holding a prefetched unit counts
//! twice, which only makes the pieces smaller sooner).
//!
//! A piece is never smaller than an eighth of the unit as planned ([`MAX_PIECES`]), so the
//! lease traffic grows by a bounded factor, and only at the end; nor shorter than
//! `scorers / TAIL_LEASES_PER_SECOND` seconds of the scorers' reported time per set, so that
//! the end of a sweep on a thousand scorers asks the head for about as many leases a second as
//! [`TAIL_LEASES_PER_SECOND`], not several times as many (measured: with pieces of a quarter
//! of a second, a thousand scorers raised the leases of the last seconds by half and pushed
//! their latency past 50 ms; `docs/decisions.md`, record 23). Only units with
//! every cell open are cut (no late result of an earlier lease in them); the first piece keeps
//! the unit's id, the rest becomes a new unit at the front of the queue (same shard: the next
//! lease on that node finds it cached).

use super::unit_entry::{UnitEntry, UnitState};
use super::{Ledger, UnitId, WorkUnit};
use crate::params::SetPlace;
use crate::sweep::SetSpan;

/// A planned unit is cut into at most this many pieces (the smallest piece is this fraction of
/// it, at least one set).
pub(super) const MAX_PIECES: usize = 8;

/// The leases a second that the pieces of a sweep's end may ask of the head, at most: a piece
/// is no shorter than the distinct scorers holding units over this, in seconds of compute (by
/// the scorers' reported busy time per set). Well below what a head serves (5 000–6 800 a
/// second measured at 1 000 nodes), and a few milliseconds for a small cluster, where the
/// planned size's eighth decides.
pub(super) const TAIL_LEASES_PER_SECOND: f64 = 2_000.0;

impl Ledger {
    /// Enables or disables cutting the last units to the leasing scorer's share of what is
    /// pending (guided self-scheduling; off by default in a bare ledger, on in a sweep).
    #[must_use]
    pub fn with_tail_splitting(mut self, on: bool) -> Self {
        self.split_tail = on;
        self
    }

    /// A scorer reported `sets` sets computed in `busy` (its own time, not the lease's): the
    /// time per set from which the smallest piece at the end of the sweep is sized.
    pub fn computed(&mut self, sets: usize, busy: std::time::Duration) {
        self.pace.computed(sets, busy);
    }

    /// The scorers' busy time per set as reported so far, in seconds (none before a report).
    #[must_use]
    pub fn busy_per_set(&self) -> Option<f64> {
        self.pace.busy_per_set()
    }

    /// The fewest sets a piece may have for the tail's leases to stay within
    /// [`TAIL_LEASES_PER_SECOND`]: one until a scorer has reported its time.
    fn budget_floor(&self) -> usize {
        let Some(per_set) = self.pace.busy_per_set() else {
            return 1;
        };
        let seconds = self.load.scorers() as f64 / TAIL_LEASES_PER_SECOND;
        // Busy time comes in whole milliseconds: units quicker than that read as a microsecond
        // a set (and are not cut: their pieces would be all lease). `as` saturates.
        ((seconds / per_set.max(1e-6)).ceil() as usize).max(1)
    }

    /// How many sets a lease may take now: the pending sets shared among the scorers (the
    /// units out, plus the one asking).
    fn share(&self) -> usize {
        let scorers = self.load.leased_units as u64 + 1;
        usize::try_from(self.load.pending_sets.div_ceil(scorers)).unwrap_or(usize::MAX)
    }

    /// Cuts pending unit `id` down to the leasing scorer's share, if splitting is on and it is
    /// larger; the rest goes to the front of the queue as a new unit.
    pub(super) fn cut_to_share(&mut self, id: UnitId) {
        if !self.split_tail {
            return;
        }
        let share = self.share();
        let Some(entry) = self.units.get(&id) else {
            return;
        };
        let len = entry.unit.sets.len();
        let floor = entry.floor;
        let pending = entry.open_count == len && entry.state == UnitState::Pending;
        if share >= len || !pending || entry.unit.streamed {
            return;
        }
        let smallest = floor.max(self.budget_floor());
        let keep = share.max(smallest);
        if keep >= len || len - keep < smallest {
            return;
        }
        let Some((head, tail)) = self.cut(&entry.unit.sets, keep) else {
            return;
        };
        let shard = entry.unit.shard.clone();
        let files_digest = entry.unit.files_digest.clone();
        let entry = self.units.get_mut(&id).expect("looked up above");
        let mut unit = entry.unit.clone();
        unit.sets = head;
        let mut cut = UnitEntry::new(unit);
        (cut.leases, cut.floor) = (entry.leases, floor);
        *entry = cut;
        self.load.pending_sets -= (len - keep) as u64;
        let rest = UnitId(self.next_id);
        self.next_id += 1;
        let unit = WorkUnit {
            id: rest,
            shard,
            sets: tail,
            files_digest,
            streamed: false,
            chain: None,
        };
        self.add(unit, true);
        if let Some(entry) = self.units.get_mut(&rest) {
            entry.floor = floor;
        }
        self.stats.split += 1;
    }

    /// `sets` as its first `keep` sets and the rest.
    fn cut(&self, sets: &SetSpan, keep: usize) -> Option<(SetSpan, SetSpan)> {
        match sets {
            SetSpan::Run { first, count } => {
                // Every position of a grid without constraints or sampling is a set: no walk.
                let grid = &self.grid;
                let dense = grid.constraints().is_empty()
                    && grid.sampled().is_none()
                    && grid.kept().is_none();
                let position = if dense {
                    first.position + keep as u64
                } else {
                    let whole = self.grid.product_len() as u64;
                    self.grid
                        .slice(first.position..whole)
                        .positions()
                        .nth(keep)?
                };
                let keep = u32::try_from(keep).ok()?;
                let rest = SetPlace {
                    index: first.index + u64::from(keep),
                    position,
                };
                Some((
                    SetSpan::Run {
                        first: *first,
                        count: keep,
                    },
                    SetSpan::Run {
                        first: rest,
                        count: count - keep,
                    },
                ))
            }
            SetSpan::Listed(places) => Some((
                SetSpan::Listed(places[..keep].to_vec()),
                SetSpan::Listed(places[keep..].to_vec()),
            )),
        }
    }
}

#[cfg(test)]
mod tests;
