//! `SweepLeaseLatency`: how long a node's scorers waited for their leases, counted per sweep,
//! so that the head of a sweep merges only that sweep's leases — a worker of a pool serves
//! sweep after sweep, and a node's whole life in one histogram would report a long sweep's
//! quiet steady state with the burst of the sweep before it.

use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::progress::{LatencyHistogram, LatencyRecorder};
use crate::sweep::SweepId;

/// A node's lease latencies in the sweep it last leased from (one per node, shared by its
/// scorers as an `Arc`). A lease of another sweep starts them afresh; a late one of the sweep
/// before is not counted.
///
/// ```
/// # extern crate gridtest_cluster as gridtest;
/// use std::time::Duration;
/// use gridtest::actors::SweepLeaseLatency;
/// # use gridtest_sweep::sweep::SweepId;
/// let latency = SweepLeaseLatency::default();
/// let (a, b) = (SweepId::from_digest(&[1; 8]), SweepId::from_digest(&[2; 8]));
/// latency.record(&a, true, Duration::from_millis(300));
/// latency.record(&a, false, Duration::from_millis(2));
/// latency.record(&b, true, Duration::from_millis(40));
/// latency.record(&a, false, Duration::from_millis(900)); // late: a's is over
/// let now = latency.snapshot();
/// assert_eq!(now.sweep, Some(b));
/// assert_eq!((now.first.count(), now.later.count()), (1, 0));
/// ```
#[derive(Debug, Default)]
pub struct SweepLeaseLatency {
    current: Mutex<Current>,
}

#[derive(Debug, Default)]
struct Current {
    sweep: Option<SweepId>,
    before: Option<SweepId>,
    first: LatencyRecorder,
    later: LatencyRecorder,
}

/// What [`SweepLeaseLatency::snapshot`] returns (and a node's heartbeat carries): the sweep
/// and its two histograms.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeaseLatencySnapshot {
    /// The sweep counted (`None`: no lease yet).
    pub sweep: Option<SweepId>,
    /// Each scorer's first lease of the sweep (the one with its context).
    pub first: LatencyHistogram,
    /// Every other lease.
    pub later: LatencyHistogram,
}

impl LeaseLatencySnapshot {
    /// The histograms (first leases, later ones) if they are `sweep`'s, else `None`: what a
    /// sweep's head takes from a node's heartbeat.
    #[must_use]
    pub fn of_sweep(self, sweep: &SweepId) -> Option<(LatencyHistogram, LatencyHistogram)> {
        (self.sweep.as_ref() == Some(sweep)).then_some((self.first, self.later))
    }
}

impl SweepLeaseLatency {
    /// Counts one lease of `sweep` (`first`: the one that brought the sweep's context).
    pub fn record(&self, sweep: &SweepId, first: bool, latency: Duration) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.before.as_ref() == Some(sweep) {
            return;
        }
        if current.sweep.as_ref() != Some(sweep) {
            let before = current.sweep.take();
            *current = Current {
                sweep: Some(sweep.clone()),
                before,
                ..Current::default()
            };
        }
        let recorder = if first {
            &current.first
        } else {
            &current.later
        };
        recorder.record(latency);
    }

    /// The sweep counted now and its histograms.
    #[must_use]
    pub fn snapshot(&self) -> LeaseLatencySnapshot {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        LeaseLatencySnapshot {
            sweep: current.sweep.clone(),
            first: current.first.histogram(),
            later: current.later.histogram(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sweep_is_counted_from_its_own_first_lease() {
        let latency = SweepLeaseLatency::default();
        let [a, b, c] = [1, 2, 3].map(|n| SweepId::from_digest(&[n; 8]));
        let none = latency.snapshot();
        assert_eq!(none.sweep, None);
        assert_eq!((none.first.count(), none.later.count()), (0, 0));
        latency.record(&a, true, Duration::from_secs(2));
        for _ in 0..99 {
            latency.record(&a, false, Duration::from_secs(1));
        }
        let of_a = latency.snapshot();
        assert_eq!(of_a.sweep.as_ref(), Some(&a));
        assert_eq!((of_a.first.count(), of_a.later.count()), (1, 99));
        // Sweep b: only its own leases, however many a had.
        latency.record(&b, true, Duration::from_millis(1));
        latency.record(&b, false, Duration::from_micros(3));
        latency.record(&a, false, Duration::from_secs(1));
        let of_b = latency.snapshot();
        assert_eq!(of_b.sweep.as_ref(), Some(&b));
        assert_eq!((of_b.first.count(), of_b.later.count()), (1, 1));
        assert!(of_b.later.quantile(1.0).unwrap() <= Duration::from_micros(4));
        // What the head of each sweep takes from that heartbeat: b's head all of it, a's none.
        assert_eq!(of_b.clone().of_sweep(&a), None);
        let (first, later) = of_b.clone().of_sweep(&b).expect("b's own");
        assert_eq!((first, later), (of_b.first, of_b.later));
        // A sweep that comes back after another (a sweep id seen before b) counts afresh.
        latency.record(&c, false, Duration::from_millis(5));
        latency.record(&b, false, Duration::from_millis(5));
        latency.record(&a, false, Duration::from_millis(5));
        let of_a_again = latency.snapshot();
        assert_eq!(of_a_again.sweep.as_ref(), Some(&a));
        assert_eq!(of_a_again.later.count(), 1);
    }
}
