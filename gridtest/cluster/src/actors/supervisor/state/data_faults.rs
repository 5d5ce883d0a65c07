//! A node that does not see the data the sweep recorded for a shard: the unit goes back, the
//! node runs no more of that shard, and once no node is left that may, the shard's open cells
//! fail, naming each node and the files it saw differ.

use std::time::Instant;

use super::SupervisorState;
use crate::actors::messages::NodeDataFault;
use crate::data::{Shard, listing_differences};
use crate::engine::{CellFailure, FailureKind};
use crate::status::StatusEvent;
use crate::sweep::WorkerId;

/// Files named per node in a reason; the rest are counted.
const FILES_NAMED: usize = 5;

impl SupervisorState {
    /// `worker`'s node reports that it does not see `shard`'s data as the manifest records it.
    pub(in crate::actors::supervisor) fn node_data_fault(
        &mut self,
        worker: &WorkerId,
        shard: &Shard,
        fault: NodeDataFault,
    ) {
        let node = worker.node.clone();
        let shard_id = shard.id();
        let differences = self
            .shard_files
            .get(&shard_id)
            .filter(|_| !fault.listing.is_empty())
            .map(|recorded| listing_differences(recorded, &fault.listing, FILES_NAMED))
            .filter(|d| !d.is_empty());
        let reason = differences.unwrap_or(fault.reason);
        let Some(ledger) = self.ledger.as_mut() else {
            return;
        };
        let first = !ledger.is_barred(&node, &shard_id);
        let released = ledger.bar(&node, &shard_id);
        self.fleet.requeued(&node, released.len(), Instant::now());
        self.requeued += released.len();
        if first {
            tracing::error!(node = %node, shard = %shard, reason = %reason,
                "node does not see the data the sweep recorded: other nodes get the shard");
            self.status.emit(StatusEvent::NodeDataMismatch {
                node: node.clone(),
                shard: shard.to_string(),
                reason: reason.clone(),
                requeued: released.len(),
            });
            self.data_faults
                .entry(shard_id.clone())
                .or_default()
                .insert(node, reason);
        }
        let fleet = &self.fleet;
        let someone_may = fleet.nodes().iter().any(|(name, n)| {
            n.alive && !fleet.is_incompatible(name) && !ledger.is_barred(name, &shard_id)
        });
        if !someone_may {
            let seen: Vec<String> = self
                .data_faults
                .get(&shard_id)
                .into_iter()
                .flatten()
                .map(|(node, reason)| format!("node {node}: {reason}"))
                .collect();
            let reason = format!(
                "no node sees the files the sweep recorded for shard {shard}: {}",
                seen.join("; ")
            );
            let failure = CellFailure::new(FailureKind::Data, reason.clone());
            let cells = ledger.fail_shard(&shard_id, &failure);
            // A later report of a unit that was in flight finds nothing left open.
            if cells > 0 {
                tracing::error!(shard = %shard, cells, reason = %reason, "shard unreadable");
                self.status.emit(StatusEvent::ShardUnreadable {
                    shard: shard.to_string(),
                    reason,
                    cells,
                });
            }
        }
        self.serve_parked_if_pending();
    }
}
