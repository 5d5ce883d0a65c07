//! A unit as the ledger tracks it: its lease state and one bit per open cell.

use std::time::Instant;

use crate::sweep::WorkUnit;
use crate::sweep::WorkerId;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum UnitState {
    Pending,
    Leased(Vec<(WorkerId, Instant)>),
    Done,
}

#[derive(Debug)]
pub(super) struct UnitEntry {
    pub(super) unit: WorkUnit,
    pub(super) state: UnitState,
    pub(super) leases: u32,
    /// One bit per set of the span: the cell is neither final nor moved to a retry unit.
    open: Vec<u64>,
    /// Bits set in `open`.
    pub(super) open_count: usize,
    /// The fewest sets a piece of it may have when it is cut at the end of the sweep.
    pub(super) floor: usize,
}

impl UnitEntry {
    pub(super) fn new(unit: WorkUnit) -> Self {
        let n = unit.sets.len();
        let mut open = vec![u64::MAX; n.div_ceil(64)];
        if !n.is_multiple_of(64)
            && let Some(last) = open.last_mut()
        {
            *last = (1u64 << (n % 64)) - 1;
        }
        Self {
            unit,
            state: UnitState::Pending,
            leases: 0,
            open,
            open_count: n,
            floor: n.div_ceil(super::tail_split::MAX_PIECES).max(1),
        }
    }

    pub(super) fn is_open(&self, offset: usize) -> bool {
        self.open[offset / 64] & (1 << (offset % 64)) != 0
    }

    /// Closes the cell at `offset`; true when it was the unit's last open cell.
    pub(super) fn close(&mut self, offset: usize) -> bool {
        self.open[offset / 64] &= !(1 << (offset % 64));
        self.open_count -= 1;
        self.open_count == 0
    }

    pub(super) fn open_offsets(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.unit.sets.len()).filter(|o| self.is_open(*o))
    }
}
