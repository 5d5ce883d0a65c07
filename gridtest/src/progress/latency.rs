//! Latency histograms: a scorer times each lease it is granted (request to reply, network and
//! the supervisor's queue included), its node agent reports the node's histogram with every
//! heartbeat, and the head merges them (`/metrics`, the fleet benchmark).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Buckets: bucket `i` counts latencies in `[2^(i−1), 2^i)` µs (bucket 0: below 1 µs), the last
/// everything from about 9 minutes up.
const BUCKETS: usize = 30;

fn bucket(latency: Duration) -> usize {
    let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
    (u64::BITS - us.leading_zeros()).min(BUCKETS as u32 - 1) as usize
}

/// A shared, lock-free recorder (one per node, cloned into its scorers as an `Arc`).
#[derive(Debug)]
pub struct LatencyRecorder {
    counts: [AtomicU64; BUCKETS],
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl LatencyRecorder {
    /// Counts one latency.
    pub fn record(&self, latency: Duration) {
        self.counts[bucket(latency)].fetch_add(1, Ordering::Relaxed);
    }

    /// Everything recorded so far.
    #[must_use]
    pub fn histogram(&self) -> LatencyHistogram {
        LatencyHistogram {
            counts: self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
        }
    }
}

/// Counts of latencies in power-of-two microsecond buckets; merged by adding.
///
/// ```
/// use std::time::Duration;
/// use gridtest::progress::LatencyRecorder;
/// let r = LatencyRecorder::default();
/// for ms in [1, 1, 1, 2, 40] {
///     r.record(Duration::from_millis(ms));
/// }
/// let h = r.histogram();
/// assert_eq!(h.count(), 5);
/// // Quantiles are bucket upper bounds: within a factor of two above the true value.
/// let p50 = h.quantile(0.5).unwrap();
/// assert!(p50 >= Duration::from_millis(1) && p50 <= Duration::from_millis(2));
/// assert!(h.quantile(0.99).unwrap() >= Duration::from_millis(40));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
}

impl LatencyHistogram {
    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Self) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// Latencies counted.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Latencies counted that were at least `bound`, as far as the buckets tell: those of every
    /// bucket whose lower bound is at least `bound` (exact when `bound` is a power of two
    /// microseconds, an undercount by less than one bucket otherwise).
    #[must_use]
    pub fn count_at_least(&self, bound: Duration) -> u64 {
        let us = u64::try_from(bound.as_micros()).unwrap_or(u64::MAX);
        // Bucket i (i ≥ 1) holds [2^(i-1), 2^i) µs.
        self.counts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i >= 1 && 1u64 << (i - 1).min(63) >= us)
            .map(|(_, c)| c)
            .sum()
    }

    /// The upper bound of the bucket holding the `q` quantile (`None` when empty): an
    /// overestimate by less than a factor of two.
    #[must_use]
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        let i = self.counts.iter().position(|&c| {
            seen += c;
            seen >= rank
        })?;
        Some(Duration::from_micros(1u64 << i.min(62)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_from_a_power_of_two_are_counted_exactly() {
        let r = LatencyRecorder::default();
        for us in 1..=1000u64 {
            r.record(Duration::from_micros(us));
        }
        let h = r.histogram();
        assert_eq!(h.count_at_least(Duration::from_micros(512)), 489);
        assert_eq!(h.count_at_least(Duration::from_micros(1)), 1000);
        assert_eq!(h.count_at_least(Duration::from_millis(2)), 0);
        // Between powers of two: the bucket holding the bound is left out.
        assert_eq!(h.count_at_least(Duration::from_micros(600)), 0);
        assert_eq!(h.count_at_least(Duration::from_micros(300)), 489);
    }

    #[test]
    fn quantiles_bound_the_true_values_within_a_factor_of_two() {
        let r = LatencyRecorder::default();
        // 1 000 latencies: 1..=1000 µs.
        for us in 1..=1000u64 {
            r.record(Duration::from_micros(us));
        }
        let mut h = r.histogram();
        for (q, truth) in [(0.5, 500u64), (0.99, 990), (1.0, 1000)] {
            let got = h.quantile(q).unwrap().as_micros() as u64;
            assert!(
                got >= truth && got < 2 * truth + 2,
                "q{q}: {got} for {truth}"
            );
        }
        // Merging doubles every count and keeps the quantiles.
        let copy = h.clone();
        h.merge(&copy);
        assert_eq!(h.count(), 2000);
        assert_eq!(h.quantile(0.5), copy.quantile(0.5));
        assert_eq!(LatencyHistogram::default().quantile(0.5), None);
        // Huge latencies land in the last bucket.
        r.record(Duration::from_secs(100_000));
        assert_eq!(r.histogram().count(), 1001);
    }
}
