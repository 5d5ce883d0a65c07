//! Progress of a running sweep, published by its supervisor for whoever shows it (the sweep
//! binary's bar, an embedding program): the latest [`SweepProgress`] in a `tokio::sync::watch`
//! channel, so that publishing never waits and a slow reader only skips states.
//!
//! ```
//! # extern crate gridtest_core as gridtest;
//! use gridtest::progress::{ProgressFeed, SweepProgress};
//! let feed = ProgressFeed::default();
//! let seen = feed.subscribe();
//! feed.publish(SweepProgress { done: 3, total: 10, ..SweepProgress::default() });
//! assert_eq!(seen.borrow().done, 3);
//! ```

mod latency;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

pub use latency::{LatencyHistogram, LatencyRecorder};

/// Where a sweep stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepProgress {
    /// Cells final.
    pub done: usize,
    /// Cells in all.
    pub total: usize,
    /// Cells failed.
    pub failed: usize,
    /// Units put back in the queue (their node was lost).
    pub requeued: usize,
    /// Slices of the histories read by slices passed so far (their cells become final only
    /// with their unit's last slice), and in all; zeros when no history is read by slices.
    pub slices: (u64, u64),
    /// The sweep has ended (every cell final, or cancelled).
    pub ended: bool,
}

/// The fleet as the supervisor saw it at its latest progress period: the queue, and per node
/// what it did and how fast (what `/metrics` exposes).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FleetSnapshot {
    /// Units waiting for a scorer.
    pub units_pending: usize,
    /// Units leased to scorers.
    pub units_leased: usize,
    /// Units put back in the queue (their node was lost, or it drained).
    pub requeued: u64,
    /// Speculative second leases of straggling units.
    pub speculative: u64,
    /// Cell results ignored because the cell was already final.
    pub duplicate_cells: u64,
    /// Every node that took part, by name.
    pub nodes: Vec<NodeSnapshot>,
    /// Every GPU scorer (`node/gpuD-K`) and its evaluations per second of scorer time.
    pub gpu_slots: Vec<(String, f64)>,
    /// How long scorers waited for their leases of this sweep, merged over the nodes (as of
    /// their latest heartbeat), but for each scorer's first lease of the sweep: the steady
    /// state. (A node counts each sweep apart: a pool's earlier sweeps are not in it.)
    pub lease_latency: LatencyHistogram,
    /// How long scorers waited for their first lease of the sweep, which carries the sweep's
    /// context and comes in one burst as the sweep starts.
    pub first_lease_latency: LatencyHistogram,
    /// The head's share of it: how long lease requests took from the scorer's send to the
    /// supervisor's handling (network, session and mailbox), by the two machines' wall clocks,
    /// so meaningful only where they agree (one machine).
    pub lease_arrival: LatencyHistogram,
    /// How long a message waits in the supervisor's mailbox before it is handled (timed by
    /// probes it sends itself every 20 ms): the head's own queue, one clock.
    pub supervisor_queue: LatencyHistogram,
    /// Bytes the sweep's scorers have read from its dataset so far (as their processes
    /// reported with their lease requests and units).
    pub bytes_read: u64,
}

/// One node in a [`FleetSnapshot`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeSnapshot {
    /// Its name.
    pub name: String,
    /// Whether it counts as alive.
    pub alive: bool,
    /// Whether it is draining (stops taking work).
    pub draining: bool,
    /// Whether it was flagged slow.
    pub slow: bool,
    /// Whether it runs other code than the sweep needs (it takes none of its units).
    pub incompatible: bool,
    /// Whether it runs GPU scorers.
    pub gpu: bool,
    /// Cells it made final.
    pub cells: u64,
    /// Evaluations of the units it reported.
    pub evaluations: u64,
    /// Units taken back from it.
    pub requeued: u64,
    /// Evaluations per second of scorer time.
    pub evals_per_second: f64,
    /// Its devices' latest readings (GPU nodes with NVML).
    pub devices: Vec<DeviceSnapshot>,
}

/// One device's latest NVML reading.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceSnapshot {
    /// The device on its node (`gpu0`).
    pub device: String,
    /// SM clock now, MHz.
    pub sm_clock_mhz: u32,
    /// Maximum SM clock, MHz.
    pub max_sm_clock_mhz: u32,
    /// Temperature, °C.
    pub temperature_c: u32,
    /// Whether it reports a thermal or power slowdown.
    pub throttled: bool,
}

/// What the running sweep's plan says about its work, published once it is planned: what the
/// head's autoscaler needs to turn cells left into evaluations left.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlanSnapshot {
    /// Mean tick-parameter evaluations of a cell still to compute (events of its shard).
    pub evals_per_cell: f64,
    /// Whether GPU scorers can run the sweep's units (its strategy has device code).
    pub gpu_eligible: bool,
    /// Bytes of the files the sweep's manifest holds.
    pub dataset_bytes: u64,
}

/// A worker pool as the head's autoscaler left it at its latest step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolSnapshot {
    /// The pool (its StatefulSet).
    pub pool: String,
    /// Replicas it has.
    pub current: u32,
    /// Replicas the work calls for now (the signal for KEDA or an HPA).
    pub desired: u32,
}

/// The head's ledger flushes so far (each writes the cells made final since the previous one to
/// the results root): how many, how many failed (and were retried), and how long they took.
#[derive(Debug, Default)]
pub struct LedgerFlushes {
    ok: AtomicU64,
    failed: AtomicU64,
    last_us: AtomicU64,
    max_us: AtomicU64,
    total_us: AtomicU64,
}

/// A reading of [`LedgerFlushes`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LedgerFlushReading {
    /// Flushes that wrote their segment.
    pub ok: u64,
    /// Flushes that failed (retried at the next period).
    pub failed: u64,
    /// Seconds the latest flush took.
    pub last_s: f64,
    /// Seconds the slowest flush took.
    pub max_s: f64,
    /// Seconds all flushes took together.
    pub total_s: f64,
}

impl LedgerFlushes {
    /// Counts a flush that took `took`.
    pub fn record(&self, took: std::time::Duration, ok: bool) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let counter = if ok { &self.ok } else { &self.failed };
        counter.fetch_add(1, Ordering::Relaxed);
        self.last_us.store(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
        self.total_us.fetch_add(us, Ordering::Relaxed);
    }

    /// The counts and times so far.
    #[must_use]
    pub fn reading(&self) -> LedgerFlushReading {
        let s = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e6;
        LedgerFlushReading {
            ok: self.ok.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            last_s: s(&self.last_us),
            max_s: s(&self.max_us),
            total_s: s(&self.total_us),
        }
    }
}

/// The publishing end, cheap to clone; readers [`subscribe`](Self::subscribe).
#[derive(Clone, Debug)]
pub struct ProgressFeed {
    progress: Arc<watch::Sender<SweepProgress>>,
    fleet: Arc<watch::Sender<Arc<FleetSnapshot>>>,
    plan: Arc<watch::Sender<PlanSnapshot>>,
    pools: Arc<watch::Sender<Arc<Vec<PoolSnapshot>>>>,
    ledger: Arc<LedgerFlushes>,
}

impl Default for ProgressFeed {
    fn default() -> Self {
        Self {
            progress: Arc::new(watch::Sender::new(SweepProgress::default())),
            fleet: Arc::new(watch::Sender::new(Arc::default())),
            plan: Arc::new(watch::Sender::new(PlanSnapshot::default())),
            pools: Arc::new(watch::Sender::new(Arc::default())),
            ledger: Arc::default(),
        }
    }
}

impl ProgressFeed {
    /// A reader of the latest progress.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<SweepProgress> {
        self.progress.subscribe()
    }

    /// Replaces the latest progress (whether or not anyone reads it).
    pub fn publish(&self, progress: SweepProgress) {
        self.progress.send_replace(progress);
    }

    /// The latest progress.
    #[must_use]
    pub fn latest(&self) -> SweepProgress {
        *self.progress.borrow()
    }

    /// Replaces the latest fleet snapshot.
    pub fn publish_fleet(&self, fleet: FleetSnapshot) {
        self.fleet.send_replace(Arc::new(fleet));
    }

    /// The latest fleet snapshot (empty before the first progress period).
    #[must_use]
    pub fn fleet(&self) -> Arc<FleetSnapshot> {
        Arc::clone(&self.fleet.borrow())
    }

    /// Replaces the running sweep's plan figures.
    pub fn publish_plan(&self, plan: PlanSnapshot) {
        self.plan.send_replace(plan);
    }

    /// The latest plan figures.
    #[must_use]
    pub fn plan(&self) -> PlanSnapshot {
        *self.plan.borrow()
    }

    /// The ledger flushes of the sweeps this feed follows.
    #[must_use]
    pub fn ledger_flushes(&self) -> &LedgerFlushes {
        &self.ledger
    }

    /// Replaces the pools' latest state.
    pub fn publish_pools(&self, pools: Vec<PoolSnapshot>) {
        self.pools.send_replace(Arc::new(pools));
    }

    /// The pools' latest state (empty without an autoscaler).
    #[must_use]
    pub fn pools(&self) -> Arc<Vec<PoolSnapshot>> {
        Arc::clone(&self.pools.borrow())
    }
}
