//! Progress of a running sweep, published by its supervisor for whoever shows it (the sweep
//! binary's bar, an embedding program): the latest [`SweepProgress`] in a `tokio::sync::watch`
//! channel, so that publishing never waits and a slow reader only skips states.
//!
//! ```
//! use gridtest::progress::{ProgressFeed, SweepProgress};
//! let feed = ProgressFeed::default();
//! let seen = feed.subscribe();
//! feed.publish(SweepProgress { done: 3, total: 10, ..SweepProgress::default() });
//! assert_eq!(seen.borrow().done, 3);
//! ```

use std::sync::Arc;

use tokio::sync::watch;

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

/// The publishing end, cheap to clone; readers [`subscribe`](Self::subscribe).
#[derive(Clone, Debug)]
pub struct ProgressFeed {
    progress: Arc<watch::Sender<SweepProgress>>,
    fleet: Arc<watch::Sender<Arc<FleetSnapshot>>>,
}

impl Default for ProgressFeed {
    fn default() -> Self {
        Self {
            progress: Arc::new(watch::Sender::new(SweepProgress::default())),
            fleet: Arc::new(watch::Sender::new(Arc::default())),
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
}
