//! The supervisor's state and its policy calls: leasing, reports, liveness and progress. The
//! rules themselves are pure ([`Fleet`], [`Ledger`]); this is where the actor applies them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ractor::ActorRef;
use tokio::sync::oneshot;

use super::parked::{LeaseReply, ParkedLeases, Refusal};
use super::{SupervisorOutcome, SupervisorTiming};
use crate::actors::ledger_writer::LedgerWriterMsg;
use crate::actors::messages::{
    Incompatible, Lease, LeaseRequest, SliceReport, SweepContext, UnitReport,
};
use crate::actors::wire::{EncodedOnce, Wire};
use crate::data::{ListedFile, ShardId};
use crate::progress::{FleetSnapshot, LatencyRecorder, ProgressFeed, SweepProgress};
use crate::status::{StatusEvent, StatusLog};
use crate::sweep::{Completion, Fleet, Gate, Ledger, WorkerId};

/// State of the [`Supervisor`](super::Supervisor).
pub struct SupervisorState {
    pub(super) ledger: Option<Ledger>,
    pub(super) fleet: Fleet,
    /// Encoded once: every scorer's first lease of the sweep carries it.
    pub(super) context: EncodedOnce<SweepContext>,
    pub(super) progress: ProgressFeed,
    /// Units put back in the queue.
    pub(super) requeued: usize,
    /// Persists final cells beside this actor (never in its mailbox).
    pub(super) writer: Option<ActorRef<LedgerWriterMsg>>,
    pub(super) timing: SupervisorTiming,
    pub(super) done: Option<oneshot::Sender<SupervisorOutcome>>,
    pub(super) status: StatusLog,
    /// Agent actor id (as shown by this node) → node name.
    pub(super) agents: HashMap<String, String>,
    /// Cells this run made final.
    pub(super) computed: usize,
    pub(super) last_progress: Instant,
    /// Whether the sweep's strategy has device code (GPU scorers may take its units).
    pub(super) gpu_capable: bool,
    /// Lease requests held until a unit frees up.
    pub(super) parked: ParkedLeases,
    /// How long lease requests took from their scorer to this actor (see
    /// [`LeaseRequest::in_flight`]).
    pub(super) arrivals: LatencyRecorder,
    /// How long messages waited in this actor's mailbox (its probes).
    pub(super) queue_delay: LatencyRecorder,
    /// The slice of node agents pinged last.
    pub(super) ping_slice: u64,
    /// The process-group scope it serves.
    pub(super) scope: String,
    /// Each shard's files as the manifest records them.
    pub(super) shard_files: HashMap<ShardId, Vec<ListedFile>>,
    /// Per shard, the nodes that do not see its data as recorded, and what each saw.
    pub(super) data_faults: HashMap<ShardId, std::collections::BTreeMap<String, String>>,
}

impl SupervisorState {
    /// Any message from a node proves it is alive.
    pub(super) fn seen(&mut self, name: &str) {
        if self.fleet.seen(name, Instant::now()) {
            tracing::warn!(node = name, "node is back; its late results count once");
            self.status.emit(StatusEvent::NodeBack {
                node: name.to_owned(),
            });
        }
    }

    /// A scorer handed its lease back (it stopped): the unit goes back to the queue.
    pub(super) fn release_worker(&mut self, worker: &WorkerId) {
        let n = self
            .ledger
            .as_mut()
            .map_or(0, |l| l.release_worker(worker).len());
        self.fleet.requeued(&worker.node, n, Instant::now());
        self.requeued += n;
        self.serve_parked_if_pending();
    }

    /// A scorer of `node` refused the sweep (its node runs other code): everything the node
    /// holds goes back to the queue, and it takes no more units of the sweep.
    pub(super) fn incompatible(&mut self, refusal: &Incompatible) {
        if refusal.sweep_id != self.context.sweep_id {
            return; // a refusal of an earlier sweep, arriving late
        }
        let node = &refusal.worker.node;
        let now = Instant::now();
        let first = self.fleet.incompatible(node, &refusal.reason, now);
        let released = self
            .ledger
            .as_mut()
            .map(|l| l.release_node(node))
            .unwrap_or_default();
        self.fleet.requeued(node, released.len(), now);
        self.requeued += released.len();
        if first {
            tracing::error!(node = %node, reason = %refusal.reason,
                "node runs other code than the sweep needs: it gets no more of its units");
            self.status.emit(StatusEvent::NodeIncompatible {
                node: node.clone(),
                reason: refusal.reason.clone(),
                requeued: released.len(),
            });
        }
        self.serve_parked_if_pending();
    }

    pub(super) fn lose(&mut self, name: &str, why: &str) {
        let released = self
            .ledger
            .as_mut()
            .map(|l| l.release_node(name))
            .unwrap_or_default();
        self.fleet.lost(name, released.len(), Instant::now());
        if released.is_empty() {
            tracing::info!(node = name, reason = why, "node lost (it held no units)");
        } else {
            tracing::warn!(
                node = name,
                reason = why,
                units = released.len(),
                "node lost: its units go back to the queue"
            );
            self.requeued += released.len();
        }
        self.status.emit(StatusEvent::NodeLost {
            node: name.to_owned(),
            reason: why.to_owned(),
            requeued: released.len(),
        });
        self.serve_parked_if_pending();
    }

    pub(super) fn flag_slow_nodes(&mut self) {
        for slow in self.fleet.flag_slow() {
            tracing::warn!(node = %slow.node, speed = format!("{:.3e}", slow.speed),
                median = format!("{:.3e}", slow.median),
                "node is slow (throttled card or noisy neighbour?)");
            self.status.emit(StatusEvent::NodeSlow {
                node: slow.node,
                speed: slow.speed,
                median: slow.median,
            });
        }
    }

    pub(super) fn log_progress(&self) {
        let Some(ledger) = &self.ledger else { return };
        let elapsed = self.fleet.compute_wall(Instant::now()).as_secs_f64();
        let nodes = nodes_line(&self.fleet, elapsed);
        let stats = ledger.stats();
        let gpus: Vec<String> = self
            .fleet
            .gpu_slots()
            .iter()
            .map(|(slot, s)| format!("{slot}:{:.3e}evals/s", s.speed()))
            .collect();
        let slices = ledger.slices();
        self.status.emit(StatusEvent::Progress {
            done: ledger.recorded(),
            total: ledger.expected(),
            failed: ledger.failed(),
            slices: (slices.1 > 0).then_some(slices),
        });
        let (fleet_nodes, gpu_slots) = self.fleet.snapshot();
        let pending = ledger.pending();
        self.progress.publish_fleet(FleetSnapshot {
            units_pending: pending,
            units_leased: ledger.units_left().saturating_sub(pending),
            requeued: stats.requeued,
            speculative: stats.speculative,
            duplicate_cells: stats.duplicate_cells,
            nodes: fleet_nodes,
            gpu_slots,
            lease_latency: self.fleet.lease_latency(),
            first_lease_latency: self.fleet.first_lease_latency(),
            lease_arrival: self.arrivals.histogram(),
            supervisor_queue: self.queue_delay.histogram(),
            bytes_read: self.fleet.bytes_read(),
        });
        tracing::info!(
            done = ledger.recorded(),
            total = ledger.expected(),
            failed = ledger.failed(),
            requeued = stats.requeued,
            speculative = stats.speculative,
            duplicates = stats.duplicate_cells,
            nodes = nodes,
            gpu_scorers = gpus.join(" "),
            "progress"
        );
    }

    /// A scorer asks for work: a unit now, or the request held until one frees up (see
    /// [`ParkedLeases`]), or no unit.
    pub(super) fn on_lease(&mut self, request: LeaseRequest, reply: LeaseReply) {
        let now = Instant::now();
        if let Some(in_flight) = request.in_flight() {
            self.arrivals.record(in_flight);
        }
        if let Some(reads) = request.reads {
            self.fleet.read(reads);
        }
        self.seen(&request.worker.node);
        let gated = !self.fleet.leasing();
        match self.try_lease(&request, now) {
            Ok(lease) => {
                let _ = reply.send(Wire(Some(lease)));
                if gated {
                    // This request opened the wait-for-nodes gate: the ones held behind it
                    // start now, not at the next tick (half a heartbeat of every node idle).
                    self.serve_parked();
                }
            }
            Err(refusal) if ParkedLeases::holds(&request, refusal) => {
                self.parked.park(request, reply, now);
            }
            Err(_) => {
                let _ = reply.send(Wire(None));
            }
        }
    }

    /// Offers the held lease requests what the ledger has now.
    pub(super) fn serve_parked(&mut self) {
        if self.parked.len() == 0 {
            return;
        }
        let now = Instant::now();
        let mut parked = std::mem::take(&mut self.parked);
        parked.serve(now, |request| self.try_lease(request, now));
        self.parked = parked;
    }

    /// Offers the held requests only when the queue has a unit (after a report, which may
    /// retry a failed unit): cheap enough to do on every report.
    pub(super) fn serve_parked_if_pending(&mut self) {
        if self.parked.len() > 0 && self.ledger.as_ref().is_some_and(Ledger::has_pending) {
            self.serve_parked();
        }
    }

    /// Leases a unit to the scorer of `request`, if there is one it may take.
    fn try_lease(&mut self, request: &LeaseRequest, now: Instant) -> Result<Lease, Refusal> {
        // A request held while its node was declared lost gets nothing: a lease now would sit
        // with a node the heartbeat no longer watches. If the node is alive, it asks again
        // (and any message marks it back).
        if !self.fleet.is_alive(&request.worker.node) {
            return Err(Refusal::Never);
        }
        if self.fleet.is_incompatible(&request.worker.node) {
            return Err(Refusal::Incompatible);
        }
        if !self.fleet.may_lease(
            &request.worker.node,
            request.worker.is_gpu(),
            self.gpu_capable,
        ) {
            return Err(Refusal::Never);
        }
        if self.fleet.gate(&request.worker.node, now) == Gate::Wait {
            return Err(Refusal::Wait);
        }
        let ledger = self.ledger.as_mut().ok_or(Refusal::Never)?;
        let unit = if request.pending_only {
            ledger.lease_pending(&request.worker, &request.cached)
        } else {
            ledger.lease(&request.worker, &request.cached)
        }
        .ok_or(Refusal::Empty)?;
        // The unit to run next, preferring the same shard (already loaded by then), while
        // more units wait than are out: in the sweep's tail each scorer takes one at a time
        // (asking for the next as it starts), so the last units go to scorers with none.
        let queue_deep = ledger.pending() > ledger.leased();
        let next = (request.with_next && queue_deep)
            .then(|| {
                let first = unit.shard.id();
                let mut prefer = Vec::with_capacity(request.cached.len() + 1);
                prefer.push(first.clone());
                prefer.extend(request.cached.iter().filter(|s| **s != first).cloned());
                ledger.lease_pending(&request.worker, &prefer)
            })
            .flatten();
        self.fleet.leased(now);
        let sweep_id = &self.context.sweep_id;
        Ok(Lease {
            sweep_id: sweep_id.clone(),
            context: (request.holds_context.as_ref() != Some(sweep_id))
                .then(|| self.context.clone()),
            unit,
            next,
            queue_deep,
            held_us: 0,
        })
    }

    /// A scorer reports a unit: its cells go to the ledger, the new final ones to the writer.
    pub(super) fn on_report(&mut self, report: UnitReport) {
        if report.sweep_id != self.context.sweep_id {
            tracing::debug!(sweep = %report.sweep_id, "report for another sweep ignored");
            return;
        }
        self.seen(&report.worker.node);
        if let Some(reads) = report.reads {
            self.fleet.read(reads);
        }
        let UnitReport {
            worker,
            unit,
            shard,
            results,
            evaluations,
            busy_ms,
            node_fault,
            parts_after,
            ..
        } = report;
        if let Some(fault) = node_fault {
            self.node_data_fault(&worker, &shard, fault);
            self.flush_journal();
            return;
        }
        let Some(ledger) = self.ledger.as_mut() else {
            return;
        };
        let completion = match results {
            Ok(results) => {
                ledger.computed(results.len(), Duration::from_millis(busy_ms));
                ledger.report(Some(unit), &shard, results)
            }
            Err(failure) => {
                tracing::warn!(%unit, %worker, error = %failure, "unit failed");
                ledger.fail_unit(unit, &failure)
            }
        };
        self.flush_journal();
        let new = match completion {
            Completion::Accepted { new, .. } => new,
            Completion::Duplicate => 0,
        };
        let busy = Duration::from_millis(busy_ms);
        if parts_after == 0 {
            self.fleet
                .reported(&worker, new, evaluations, busy, Instant::now());
        } else {
            self.fleet
                .worked_on(&worker, new, evaluations, busy, Instant::now());
        }
    }

    /// A scorer finished a slice of a chained unit: the ledger keeps its checkpoint.
    pub(super) fn on_slice(&mut self, report: SliceReport) {
        if report.sweep_id != self.context.sweep_id {
            return;
        }
        self.seen(&report.worker.node);
        if let Some(reads) = report.reads {
            self.fleet.read(reads);
        }
        let Some(ledger) = self.ledger.as_mut() else {
            return;
        };
        let bytes = report.checkpoint.0.len() as u64;
        let slices = ledger.chain_len(report.unit);
        // An empty checkpoint was too large to send: the work counts, the chain stays where
        // the last checkpoint left it.
        if bytes > 0 && ledger.slice_done(report.unit, report.slice, report.checkpoint) {
            if let (Some(writer), Some(unit)) = (&self.writer, ledger.unit(report.unit)) {
                let _ = writer.cast(LedgerWriterMsg::Chain(Box::new(unit.clone())));
            }
            self.status.emit(StatusEvent::SliceDone {
                node: report.worker.node.clone(),
                unit: report.unit.0,
                slice: report.slice,
                slices,
                checkpoint_bytes: bytes,
            });
        }
        let busy = Duration::from_millis(report.busy_ms);
        self.fleet
            .worked_on(&report.worker, 0, report.evaluations, busy, Instant::now());
    }

    /// Hands the cells made final since the last call to the writer, and publishes progress.
    pub(super) fn flush_journal(&mut self) {
        let Some(ledger) = self.ledger.as_mut() else {
            return;
        };
        let journal = ledger.take_journal();
        self.computed += journal.len();
        if let Some(writer) = &self.writer
            && !journal.is_empty()
        {
            let _ = writer.cast(LedgerWriterMsg::Append(journal));
        }
        self.progress.publish(SweepProgress {
            done: ledger.recorded(),
            total: ledger.expected(),
            failed: ledger.failed(),
            requeued: self.requeued,
            slices: ledger.slices(),
            ended: false,
        });
    }

    /// The heartbeat: nodes silent too long lose their leases; progress is logged.
    pub(super) fn on_tick(&mut self) {
        for name in self.fleet.silent(Instant::now()) {
            self.lose(&name, "silent past the heartbeat deadline");
        }
        // Held requests past their time are answered; a straggler may now be worth a copy.
        self.serve_parked();
        if self.last_progress.elapsed() >= self.timing.progress_every {
            self.last_progress = Instant::now();
            self.flag_slow_nodes();
            self.log_progress();
        }
    }
}

/// Nodes listed one by one in a progress line up to this many; past it, summarised.
pub(super) const NODES_LISTED: usize = 8;

/// The progress line's account of the nodes: each one (`name:N cells/s`, lost, slow, its GPU
/// readings) for a few nodes; for more, how many are up, lost and slow, the median and 95th
/// percentile of their speeds and the three slowest, so that a line stays short at any size.
fn nodes_line(fleet: &Fleet, elapsed: f64) -> String {
    let nodes = fleet.nodes();
    let speed = |n: &crate::sweep::NodeView| n.stats.cells as f64 / elapsed.max(1e-9);
    if nodes.len() <= NODES_LISTED {
        return nodes
            .iter()
            .map(|(name, n)| {
                let telemetry = if n.telemetry.is_empty() {
                    String::new()
                } else {
                    let readings: Vec<String> =
                        n.telemetry.iter().map(ToString::to_string).collect();
                    format!("[{}]", readings.join(", "))
                };
                format!(
                    "{name}:{:.0}cells/s{}{}{telemetry}",
                    speed(n),
                    if n.alive { "" } else { "(lost)" },
                    if n.stats.slow { "(slow)" } else { "" },
                )
            })
            .collect::<Vec<_>>()
            .join(" ");
    }
    let mut up: Vec<(f64, &str)> = nodes
        .iter()
        .filter(|(_, n)| n.alive)
        .map(|(name, n)| (speed(n), name.as_str()))
        .collect();
    up.sort_by(|a, b| a.0.total_cmp(&b.0));
    let lost = nodes.len() - up.len();
    let slow = nodes.values().filter(|n| n.alive && n.stats.slow).count();
    let quantile = |q: f64| {
        up.get(((up.len() as f64 - 1.0) * q).round() as usize)
            .map_or(0.0, |s| s.0)
    };
    let slowest: Vec<String> = up
        .iter()
        .take(3)
        .map(|(s, name)| format!("{name}:{s:.0}"))
        .collect();
    format!(
        "{} up, {lost} lost, {slow} slow; cells/s per node p50 {:.0}, p95 {:.0}; slowest {}",
        up.len(),
        quantile(0.5),
        quantile(0.95),
        slowest.join(" ")
    )
}

mod data_faults;
#[cfg(test)]
mod tests;
