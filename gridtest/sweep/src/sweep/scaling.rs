//! Elastic pools: how many worker replicas a pool (CPU or GPU workers) should have, from the
//! work it can take and its nodes' measured speed. Pure policy: the head evaluates it each
//! progress period and applies the decision (the Kubernetes scale subresource of the pool's
//! StatefulSet, or a metric for KEDA / an HPA).
//!
//! The rule, per pool:
//! * `wanted = ⌈backlog / (rate · drain_s)⌉`: enough nodes to finish the evaluations left in the
//!   units the pool can run within `drain_s` seconds at the median measured speed of its nodes
//!   (`default_rate` before any is measured); never more nodes than units left (a node without
//!   a unit only costs), 0 with no work;
//! * bounded by `min ..= max`;
//! * up at once (work is waiting); down only once the bounded count has stayed below the current
//!   one for `scale_down_after` (units are about a second; a pool must not flap at the end of
//!   each sweep), and then by **draining first**: the nodes with the highest ordinals (those a
//!   StatefulSet removes) hand their leases back before the replica count drops.

use std::time::{Duration, Instant};

/// The bounds and pace of one pool.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolPolicy {
    /// Fewest replicas (0: the pool drains to zero between sweeps).
    pub min: u32,
    /// Most replicas.
    pub max: u32,
    /// Seconds the pool should take to finish its backlog at the measured speed.
    pub drain_s: f64,
    /// How long the wanted count must stay below the current before the pool shrinks.
    pub scale_down_after: Duration,
    /// Evaluations per second of one node before any node of the pool is measured.
    pub default_rate: f64,
}

impl Default for PoolPolicy {
    /// 0 ..= 1 000 replicas, backlog finished within 5 minutes, shrink after 2 idle minutes,
    /// 10⁸ evaluations per second per node until measured.
    fn default() -> Self {
        Self {
            min: 0,
            max: 1_000,
            drain_s: 300.0,
            scale_down_after: Duration::from_secs(120),
            default_rate: 1e8,
        }
    }
}

/// What a pool faces now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PoolLoad {
    /// Replicas the pool has.
    pub current: u32,
    /// Evaluations left in the units this pool can run (pending and leased).
    pub backlog_evals: f64,
    /// Units left that this pool can run.
    pub units_left: usize,
    /// Median evaluations per second of the pool's nodes, once measured.
    pub node_rate: Option<f64>,
}

/// What to do with a pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleDecision {
    /// Keep the current count.
    Hold(u32),
    /// Raise the replica count to this.
    Up(u32),
    /// Ask the nodes with ordinals `to ..` to drain; lower the count to `to` once they have.
    Drain {
        /// The count after the drain.
        to: u32,
    },
}

/// The policy of one pool and its memory of how long it has wanted fewer nodes.
///
/// ```
/// # extern crate gridtest_sweep as gridtest;
/// use std::time::{Duration, Instant};
/// use gridtest::sweep::{PoolLoad, PoolPolicy, ScaleDecision, Scaler};
/// let mut pool = Scaler::new(PoolPolicy { max: 50, ..PoolPolicy::default() });
/// let t0 = Instant::now();
/// // 6 × 10¹² evaluations at 10⁹/s per node within 300 s: 20 nodes.
/// let load = PoolLoad { current: 2, backlog_evals: 6e12, units_left: 5_000, node_rate: Some(1e9) };
/// assert_eq!(pool.decide(&load, t0), ScaleDecision::Up(20));
/// // The sweep is over: hold for the grace period, then drain to zero.
/// let idle = PoolLoad { current: 20, ..PoolLoad::default() };
/// assert_eq!(pool.decide(&idle, t0), ScaleDecision::Hold(20));
/// assert_eq!(pool.decide(&idle, t0 + Duration::from_secs(121)), ScaleDecision::Drain { to: 0 });
/// ```
#[derive(Clone, Debug)]
pub struct Scaler {
    policy: PoolPolicy,
    below_since: Option<Instant>,
}

impl Scaler {
    /// A pool under `policy`.
    #[must_use]
    pub fn new(policy: PoolPolicy) -> Self {
        Self {
            policy,
            below_since: None,
        }
    }

    /// The replica count the work calls for, bounded by the policy (no hysteresis).
    #[must_use]
    pub fn wanted(&self, load: &PoolLoad) -> u32 {
        let p = &self.policy;
        let raw = if load.units_left == 0 || load.backlog_evals <= 0.0 {
            0
        } else {
            let rate = load
                .node_rate
                .filter(|r| *r > 0.0)
                .unwrap_or(p.default_rate);
            let nodes = (load.backlog_evals / (rate * p.drain_s.max(1e-9))).ceil();
            let cap = u32::try_from(load.units_left).unwrap_or(u32::MAX);
            if nodes >= f64::from(cap) {
                cap
            } else {
                // In range of u32: below `cap`.
                #[allow(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "a non-negative whole number below cap"
                )]
                let n = nodes as u32;
                n.max(1)
            }
        };
        raw.clamp(p.min, p.max.max(p.min))
    }

    /// The decision at `now` for a pool under `load`.
    pub fn decide(&mut self, load: &PoolLoad, now: Instant) -> ScaleDecision {
        let wanted = self.wanted(load);
        if wanted >= load.current {
            self.below_since = None;
            return if wanted > load.current {
                ScaleDecision::Up(wanted)
            } else {
                ScaleDecision::Hold(wanted)
            };
        }
        let since = *self.below_since.get_or_insert(now);
        if now.duration_since(since) >= self.policy.scale_down_after {
            self.below_since = None;
            ScaleDecision::Drain { to: wanted }
        } else {
            ScaleDecision::Hold(load.current)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(current: u32, backlog: f64, units: usize, rate: Option<f64>) -> PoolLoad {
        PoolLoad {
            current,
            backlog_evals: backlog,
            units_left: units,
            node_rate: rate,
        }
    }

    #[test]
    fn the_backlog_sets_the_count_within_the_bounds() {
        let policy = PoolPolicy {
            min: 1,
            max: 100,
            drain_s: 100.0,
            ..PoolPolicy::default()
        };
        let s = Scaler::new(policy);
        // 10¹² evaluations at 10⁹/s within 100 s: 10 nodes.
        assert_eq!(s.wanted(&load(0, 1e12, 1_000, Some(1e9))), 10);
        // A bit more needs one more node.
        assert_eq!(s.wanted(&load(0, 1.0001e12, 1_000, Some(1e9))), 11);
        // Never more nodes than units left.
        assert_eq!(s.wanted(&load(0, 1e12, 4, Some(1e9))), 4);
        // Bounded above, and below by min even with no work.
        assert_eq!(s.wanted(&load(0, 1e15, 10_000, Some(1e9))), 100);
        assert_eq!(s.wanted(&load(5, 0.0, 0, Some(1e9))), 1);
        // Before any node is measured, the default rate.
        assert_eq!(s.wanted(&load(0, 1e12, 1_000, None)), 100);
        // A tiny backlog still wants a node.
        assert_eq!(s.wanted(&load(0, 1.0, 1, Some(1e9))), 1);
    }

    #[test]
    fn up_at_once_down_after_the_grace_and_by_draining() {
        let mut s = Scaler::new(PoolPolicy {
            max: 10,
            scale_down_after: Duration::from_secs(60),
            ..PoolPolicy::default()
        });
        let t = Instant::now();
        let at = |secs: u64| t + Duration::from_secs(secs);
        assert_eq!(
            s.decide(&load(0, 1e20, 50, Some(1e9)), at(0)),
            ScaleDecision::Up(10)
        );
        assert_eq!(
            s.decide(&load(10, 1e20, 50, Some(1e9)), at(1)),
            ScaleDecision::Hold(10)
        );
        // The work shrinks: held during the grace period...
        let little = load(10, 6e11, 50, Some(1e9));
        assert_eq!(s.decide(&little, at(10)), ScaleDecision::Hold(10));
        assert_eq!(s.decide(&little, at(69)), ScaleDecision::Hold(10));
        // ...unless work comes back, which resets the clock...
        assert_eq!(
            s.decide(&load(10, 1e20, 50, Some(1e9)), at(70)),
            ScaleDecision::Hold(10)
        );
        assert_eq!(s.decide(&little, at(71)), ScaleDecision::Hold(10));
        assert_eq!(s.decide(&little, at(130)), ScaleDecision::Hold(10));
        // ...then it drains to what the work needs (6e11 / (1e9 · 300) → 2).
        assert_eq!(s.decide(&little, at(131)), ScaleDecision::Drain { to: 2 });
        // The sweep ends: the pool returns to zero after the grace.
        let idle = load(2, 0.0, 0, Some(1e9));
        assert_eq!(s.decide(&idle, at(200)), ScaleDecision::Hold(2));
        assert_eq!(s.decide(&idle, at(260)), ScaleDecision::Drain { to: 0 });
    }
}
