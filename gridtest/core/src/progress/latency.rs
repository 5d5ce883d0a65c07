//! Latency histograms: a scorer times each lease it is granted (request to reply, network and
//! the supervisor's queue included), its node agent reports the node's histogram with every
//! heartbeat, and the head merges them (`/metrics`, the fleet benchmark).
//!
//! Two resolutions: power-of-two buckets (`counts`, what every node has always sent) and
//! eight sub-buckets per power of two (`fine`, sent sparse beside them), so that a quantile
//! is read within an eighth above the true value rather than within a factor of two: a p99
//! "≤ 65.5 ms" from the coarse buckets says nothing about a 50 ms target, one "≤ 45.1 ms"
//! does. A histogram merged from a node that sent no fine counts (an older version) is read
//! from the coarse buckets alone.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Buckets: bucket `i` counts latencies in `[2^(i−1), 2^i)` µs (bucket 0: below 1 µs), the last
/// everything from about 9 minutes up.
const BUCKETS: usize = 30;

/// Fine sub-buckets per power of two (a quantile within 12.5 % above the true value).
const SUB: u64 = 8;

/// Fine buckets: one per microsecond below [`SUB`] µs, then [`SUB`] per power of two up to
/// `2^(BUCKETS−1)` µs; the last also holds everything above.
const FINE: usize = (SUB as usize) * (BUCKETS - 3);

fn bucket(latency: Duration) -> usize {
    (u64::BITS - micros(latency).leading_zeros()).min(BUCKETS as u32 - 1) as usize
}

fn micros(latency: Duration) -> u64 {
    u64::try_from(latency.as_micros()).unwrap_or(u64::MAX)
}

/// The fine bucket of `us` microseconds: below [`SUB`] the value itself; above it, the power
/// of two `2^p` it falls in and which eighth of `[2^p, 2^(p+1))`.
fn fine_bucket(us: u64) -> usize {
    if us < SUB {
        return us as usize;
    }
    let p = u64::from(u64::BITS - 1 - us.leading_zeros()); // ≥ 3
    let sub = (us >> (p - 3)) & (SUB - 1);
    usize::try_from(SUB + (p - 3) * SUB + sub)
        .unwrap_or(usize::MAX)
        .min(FINE - 1)
}

/// The lowest and one past the highest microsecond count of fine bucket `i`.
fn fine_bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i + 1);
    }
    let (p, sub) = (3 + (i - SUB) / SUB, (i - SUB) % SUB);
    ((SUB + sub) << (p - 3), (SUB + sub + 1) << (p - 3))
}

/// `(bucket, count)` of the non-empty buckets of dense `counts`.
fn sparse(counts: impl Iterator<Item = u64>) -> Vec<(u16, u64)> {
    counts
        .enumerate()
        .filter(|(_, n)| *n > 0)
        .map(|(i, n)| (u16::try_from(i).expect("FINE < 2^16"), n))
        .collect()
}

/// A shared, lock-free recorder (one per node, cloned into its scorers as an `Arc`).
#[derive(Debug)]
pub struct LatencyRecorder {
    counts: [AtomicU64; BUCKETS],
    fine: [AtomicU64; FINE],
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            fine: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl LatencyRecorder {
    /// Counts one latency.
    pub fn record(&self, latency: Duration) {
        self.counts[bucket(latency)].fetch_add(1, Ordering::Relaxed);
        self.fine[fine_bucket(micros(latency))].fetch_add(1, Ordering::Relaxed);
    }

    /// Everything recorded so far.
    #[must_use]
    pub fn histogram(&self) -> LatencyHistogram {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LatencyHistogram {
            counts: self.counts.iter().map(load).collect(),
            fine: sparse(self.fine.iter().map(load)),
        }
    }
}

/// Counts of latencies in power-of-two microsecond buckets, and in eight sub-buckets of each
/// (sparse); merged by adding.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use std::time::Duration;
/// use gridtest::progress::LatencyRecorder;
/// let r = LatencyRecorder::default();
/// for ms in [1, 1, 1, 2, 40] {
///     r.record(Duration::from_millis(ms));
/// }
/// let h = r.histogram();
/// assert_eq!(h.count(), 5);
/// // Quantiles are bucket upper bounds: within an eighth above the true value.
/// let p50 = h.quantile(0.5).unwrap();
/// assert!(p50 > Duration::from_millis(1) && p50 <= Duration::from_micros(1_125));
/// let p99 = h.quantile(0.99).unwrap();
/// assert!(p99 > Duration::from_millis(40) && p99 <= Duration::from_millis(45));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyHistogram {
    counts: Vec<u64>,
    /// `(fine bucket, count)` for each non-empty fine bucket, in bucket order (absent from
    /// the histograms of older nodes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    fine: Vec<(u16, u64)>,
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
        if other.fine.is_empty() {
            return;
        }
        // Dense for the sum (a bucket index beyond the range, from a foreign node, is left
        // out: the fine counts then fall short and the coarse ones are read).
        let mut dense = [0u64; FINE];
        for &(i, c) in self.fine.iter().chain(&other.fine) {
            if let Some(slot) = dense.get_mut(usize::from(i)) {
                *slot += c;
            }
        }
        self.fine = sparse(dense.iter().copied());
    }

    /// Latencies counted.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The fine counts, if they hold every latency counted (not so after merging a histogram
    /// of a node that sends none).
    fn fine(&self) -> Option<&[(u16, u64)]> {
        let n: u64 = self.fine.iter().map(|(_, c)| c).sum();
        (n > 0 && n == self.count()).then_some(self.fine.as_slice())
    }

    /// Latencies counted that were at least `bound`, as far as the buckets tell: those of every
    /// bucket whose lower bound is at least `bound` (exact when `bound` is a bucket bound, an
    /// undercount by less than one bucket otherwise).
    #[must_use]
    pub fn count_at_least(&self, bound: Duration) -> u64 {
        let us = micros(bound);
        if let Some(fine) = self.fine() {
            return fine
                .iter()
                .filter(|(i, _)| fine_bounds(usize::from(*i)).0 >= us)
                .map(|(_, c)| c)
                .sum();
        }
        // Bucket i (i ≥ 1) holds [2^(i-1), 2^i) µs.
        self.counts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i >= 1 && 1u64 << (i - 1).min(63) >= us)
            .map(|(_, c)| c)
            .sum()
    }

    /// The upper bound of the bucket holding the `q` quantile (`None` when empty): an
    /// overestimate by less than an eighth (by less than a factor of two when read from the
    /// power-of-two buckets alone).
    #[must_use]
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        if let Some(fine) = self.fine() {
            let (i, _) = fine.iter().find(|(_, c)| {
                seen += c;
                seen >= rank
            })?;
            return Some(Duration::from_micros(fine_bounds(usize::from(*i)).1));
        }
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

    fn of_micros(range: std::ops::RangeInclusive<u64>) -> LatencyHistogram {
        let r = LatencyRecorder::default();
        for us in range {
            r.record(Duration::from_micros(us));
        }
        r.histogram()
    }

    /// What a node of an older version sends: the power-of-two buckets alone.
    fn coarse_only(mut h: LatencyHistogram) -> LatencyHistogram {
        h.fine.clear();
        h
    }

    #[test]
    fn fine_buckets_tile_the_range_and_hold_their_values() {
        assert_eq!(fine_bounds(0).0, 0);
        for i in 0..FINE - 1 {
            assert_eq!(fine_bounds(i).1, fine_bounds(i + 1).0, "bucket {i}");
        }
        assert_eq!(fine_bounds(FINE - 1).1, 1 << (BUCKETS - 1));
        let probes = (0..5_000).chain((0..29).flat_map(|p| {
            let at = 1u64 << p;
            [at - 1, at, at + 1, at + at / 3]
        }));
        for us in probes {
            let (low, high) = fine_bounds(fine_bucket(us));
            assert!(low <= us && us < high, "{us} µs in [{low}, {high})");
            // Each bucket spans at most an eighth of its lower bound (one µs below 8 µs).
            assert!(high - low <= (low / SUB).max(1), "{us}: [{low}, {high})");
        }
        assert_eq!(fine_bucket(u64::MAX), FINE - 1);
    }

    #[test]
    fn latencies_from_a_bucket_bound_are_counted_exactly() {
        let h = of_micros(1..=1000);
        assert_eq!(h.count_at_least(Duration::from_micros(512)), 489);
        assert_eq!(h.count_at_least(Duration::from_micros(1)), 1000);
        assert_eq!(h.count_at_least(Duration::from_millis(2)), 0);
        // 576 and 640 µs are fine bounds (512 + 64 k), 600 µs is not: counted from 640.
        assert_eq!(h.count_at_least(Duration::from_micros(576)), 425);
        assert_eq!(h.count_at_least(Duration::from_micros(600)), 361);
        // From the power-of-two buckets alone: the bucket holding the bound is left out.
        let coarse = coarse_only(h);
        assert_eq!(coarse.count_at_least(Duration::from_micros(512)), 489);
        assert_eq!(coarse.count_at_least(Duration::from_micros(600)), 0);
        assert_eq!(coarse.count_at_least(Duration::from_micros(300)), 489);
    }

    #[test]
    fn quantiles_bound_the_true_values_within_an_eighth() {
        // 1 000 latencies: 1..=1000 µs, then the same scaled to milliseconds.
        for scale in [1, 1000] {
            let h = of_micros(1..=1000);
            let h = if scale == 1 {
                h
            } else {
                let r = LatencyRecorder::default();
                (1..=1000).for_each(|ms| r.record(Duration::from_millis(ms)));
                r.histogram()
            };
            for (q, truth) in [(0.5, 500u64), (0.99, 990), (1.0, 1000)] {
                let truth = truth * scale;
                let got = h.quantile(q).unwrap().as_micros() as u64;
                assert!(
                    got > truth && got <= truth + truth / 8,
                    "q{q}: {got} for {truth}"
                );
                // The power-of-two buckets alone: within a factor of two.
                let coarse = coarse_only(h.clone()).quantile(q).unwrap().as_micros() as u64;
                assert!(coarse >= got && coarse < 2 * truth + 2, "q{q}: {coarse}");
            }
        }
        assert_eq!(LatencyHistogram::default().quantile(0.5), None);
        // Huge latencies land in the last buckets.
        let r = LatencyRecorder::default();
        r.record(Duration::from_secs(100_000));
        assert_eq!(r.histogram().count(), 1);
    }

    #[test]
    fn merging_adds_the_fine_counts_or_falls_back_to_the_coarse_ones() {
        let (low, high) = (of_micros(1..=1000), of_micros(501..=1500));
        let mut both = low.clone();
        both.merge(&high);
        assert_eq!(both.count(), 2000);
        // The merge equals recording everything in one histogram.
        let r = LatencyRecorder::default();
        for us in (1..=1000).chain(501..=1500) {
            r.record(Duration::from_micros(us));
        }
        assert_eq!(both, r.histogram());
        // Merging into an empty histogram keeps the quantiles.
        let mut copy = LatencyHistogram::default();
        copy.merge(&low);
        assert_eq!(copy.quantile(0.99), low.quantile(0.99));
        // A node of an older version sends no fine counts (its JSON has no `fine`): the merge
        // is then read from the power-of-two buckets alone.
        let json = serde_json::to_string(&coarse_only(high.clone())).unwrap();
        assert!(!json.contains("fine"), "{json}");
        let old: LatencyHistogram = serde_json::from_str(&json).unwrap();
        let mut mixed = low.clone();
        mixed.merge(&old);
        assert_eq!(mixed.count(), 2000);
        assert_eq!(
            mixed.quantile(0.99),
            coarse_only(both.clone()).quantile(0.99)
        );
        // A new histogram round-trips through JSON with its fine counts.
        let json = serde_json::to_string(&both).unwrap();
        assert_eq!(
            serde_json::from_str::<LatencyHistogram>(&json).unwrap(),
            both
        );
    }
}
