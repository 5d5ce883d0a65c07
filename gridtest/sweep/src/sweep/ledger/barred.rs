//! Nodes barred from shards: a node that does not see the data the sweep recorded for a shard
//! (another copy at the same path, a missing mount) runs none of its units; the shard goes to
//! the other nodes, and when none is left its cells fail at once, saying why.

use std::collections::{HashMap, HashSet};

use super::Ledger;
use super::unit_entry::UnitState;
use crate::data::ShardId;
use crate::engine::CellFailure;
use crate::sweep::{UnitId, WorkUnit, WorkerId};

/// Which nodes may not run which shards.
#[derive(Debug, Default)]
pub(super) struct Barred {
    by_node: HashMap<String, HashSet<ShardId>>,
}

impl Barred {
    /// Whether `node` is barred from any shard (the lease's fast path when not).
    pub(super) fn any(&self, node: &str) -> bool {
        self.by_node.contains_key(node)
    }

    pub(super) fn contains(&self, node: &str, shard: &ShardId) -> bool {
        self.by_node.get(node).is_some_and(|s| s.contains(shard))
    }
}

impl Ledger {
    /// Bars `node` from the units of `shard` and takes back its leases of them (they go back to
    /// the front of the queue, without counting as an attempt of their cells). Returns the units
    /// taken back.
    pub fn bar(&mut self, node: &str, shard: &ShardId) -> Vec<UnitId> {
        self.barred
            .by_node
            .entry(node.to_owned())
            .or_default()
            .insert(shard.clone());
        self.release_where(|w| w.node == node, |u| u.shard.id() == *shard)
    }

    /// Whether `node` is barred from `shard`'s units.
    #[must_use]
    pub fn is_barred(&self, node: &str, shard: &ShardId) -> bool {
        self.barred.contains(node, shard)
    }

    /// Whether `worker` may take `unit` (its node is not barred from its shard).
    pub(super) fn may_take(&self, worker: &WorkerId, unit: &WorkUnit) -> bool {
        !self.barred.any(&worker.node) || !self.barred.contains(&worker.node, &unit.shard.id())
    }

    /// Fails every open cell of `shard` with `failure`, final at once (no node can read it);
    /// returns how many cells it failed.
    pub fn fail_shard(&mut self, shard: &ShardId, failure: &CellFailure) -> usize {
        let open: Vec<UnitId> = self
            .units
            .iter()
            .filter(|(_, e)| e.state != UnitState::Done && e.unit.shard.id() == *shard)
            .map(|(id, _)| *id)
            .collect();
        let before = self.recorded;
        for id in open {
            self.fail_open_cells(id, failure, false);
        }
        self.recorded - before
    }
}
