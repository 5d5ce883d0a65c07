//! The supervisor's state and its policy calls: leasing, reports, liveness and progress. The
//! rules themselves are pure ([`Fleet`], [`Ledger`]); this is where the actor applies them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ractor::ActorRef;
use tokio::sync::oneshot;

use super::{SupervisorOutcome, SupervisorTiming};
use crate::actors::ledger_writer::LedgerWriterMsg;
use crate::actors::messages::{Lease, LeaseRequest, SweepContext, UnitReport};
use crate::progress::{FleetSnapshot, ProgressFeed, SweepProgress};
use crate::status::{StatusEvent, StatusLog};
use crate::sweep::{Completion, Fleet, Gate, Ledger};

/// State of the [`Supervisor`].
pub struct SupervisorState {
    pub(super) ledger: Option<Ledger>,
    pub(super) fleet: Fleet,
    pub(super) context: SweepContext,
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
        let nodes: Vec<String> = self
            .fleet
            .nodes()
            .iter()
            .map(|(name, n)| {
                format!(
                    "{name}:{:.0}cells/s{}{}{}",
                    n.stats.cells as f64 / elapsed.max(1e-9),
                    if n.alive { "" } else { "(lost)" },
                    if n.stats.slow { "(slow)" } else { "" },
                    if n.telemetry.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "[{}]",
                            n.telemetry
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                )
            })
            .collect();
        let stats = ledger.stats();
        let gpus: Vec<String> = self
            .fleet
            .gpu_slots()
            .iter()
            .map(|(slot, s)| format!("{slot}:{:.3e}evals/s", s.speed()))
            .collect();
        self.status.emit(StatusEvent::Progress {
            done: ledger.recorded(),
            total: ledger.expected(),
            failed: ledger.failed(),
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
        });
        tracing::info!(
            done = ledger.recorded(),
            total = ledger.expected(),
            failed = ledger.failed(),
            requeued = stats.requeued,
            speculative = stats.speculative,
            duplicates = stats.duplicate_cells,
            nodes = nodes.join(" "),
            gpu_scorers = gpus.join(" "),
            "progress"
        );
    }

    /// A scorer asks for work.
    pub(super) fn on_lease(&mut self, request: &LeaseRequest) -> Option<Lease> {
        let now = Instant::now();
        self.seen(&request.worker.node);
        if self.fleet.gate(&request.worker.node, now) == Gate::Wait
            || !self.fleet.may_lease(
                &request.worker.node,
                request.worker.is_gpu(),
                self.gpu_capable,
            )
        {
            return None;
        }
        let ledger = self.ledger.as_mut()?;
        let unit = if request.pending_only {
            ledger.lease_pending(&request.worker, &request.cached)
        } else {
            ledger.lease(&request.worker, &request.cached)
        }?;
        self.fleet.leased(now);
        Some(Lease {
            context: self.context.clone(),
            unit,
        })
    }

    /// A scorer reports a unit: its cells go to the ledger, the new final ones to the writer.
    pub(super) fn on_report(&mut self, report: UnitReport) {
        if report.sweep_id != self.context.sweep_id {
            tracing::debug!(sweep = %report.sweep_id, "report for another sweep ignored");
            return;
        }
        self.seen(&report.worker.node);
        let UnitReport {
            worker,
            unit,
            shard,
            results,
            evaluations,
            busy_ms,
            ..
        } = report;
        let Some(ledger) = self.ledger.as_mut() else {
            return;
        };
        let completion = match results {
            Ok(results) => ledger.report(Some(unit), &shard, results),
            Err(failure) => {
                tracing::warn!(%unit, %worker, error = %failure, "unit failed");
                ledger.fail_unit(unit, &failure)
            }
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
            ended: false,
        });
        let new = match completion {
            Completion::Accepted { new, .. } => new,
            Completion::Duplicate => 0,
        };
        let busy = Duration::from_millis(busy_ms);
        self.fleet
            .reported(&worker, new, evaluations, busy, Instant::now());
    }

    /// The heartbeat: nodes silent too long lose their leases; progress is logged.
    pub(super) fn on_tick(&mut self) {
        for name in self.fleet.silent(Instant::now()) {
            self.lose(&name, "silent past the heartbeat deadline");
        }
        if self.last_progress.elapsed() >= self.timing.progress_every {
            self.last_progress = Instant::now();
            self.flag_slow_nodes();
            self.log_progress();
        }
    }
}
