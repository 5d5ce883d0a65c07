//! The head's autoscaler: each period it reads where the sweep stands (cells left, units left,
//! each node's speed, from the [`ProgressFeed`]), asks each pool's [`Scaler`] how many workers
//! the work calls for, publishes that as `gridtest_pool_replicas{state="desired"}` on
//! `/metrics` (the signal KEDA or an HPA can follow instead), and, with
//! [`Actuation::Kubernetes`], sets the pool StatefulSet's size through its scale subresource.
//!
//! Scaling down is draining: a StatefulSet removes its highest ordinals first, each gets
//! SIGTERM, finishes or hands back its units within `--drain-grace-s`, and exits; the
//! supervisor requeues nothing that was done. The head lowers a pool only after the policy's
//! idle period, so a pool does not flap between sweeps.

#[cfg(feature = "kubernetes")]
mod kube_scale;
#[cfg(not(feature = "kubernetes"))]
mod no_kube;

use std::str::FromStr;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

#[cfg(feature = "kubernetes")]
pub use kube_scale::KubeScale;
#[cfg(not(feature = "kubernetes"))]
pub use no_kube::KubeScale;

use crate::progress::{FleetSnapshot, PlanSnapshot, PoolSnapshot, ProgressFeed, SweepProgress};
use crate::sweep::{PoolLoad, PoolPolicy, ScaleDecision, Scaler};

/// Why a pool's size could not be read or set.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    /// No usable API server configuration (not in a pod, no kubeconfig, a bad URL).
    #[error("Kubernetes configuration: {0}")]
    Config(String),
    /// The API server refused or could not be reached.
    #[cfg(feature = "kubernetes")]
    #[error("the scale of StatefulSet {statefulset}: {source}")]
    Api {
        /// The pool's StatefulSet.
        statefulset: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

/// A worker pool: the StatefulSet whose pods (`NAME-0`, `NAME-1`, …) are its nodes, whether
/// they run GPU scorers, and its policy.
///
/// ```
/// # extern crate gridtest_cluster as gridtest;
/// use gridtest::autoscale::Pool;
/// let pool: Pool = "gridtest-gpu=gpu:0..40".parse().unwrap();
/// assert_eq!((pool.statefulset.as_str(), pool.gpu), ("gridtest-gpu", true));
/// assert_eq!((pool.policy.min, pool.policy.max), (0, 40));
/// assert!("gridtest-cpu=tpu".parse::<Pool>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    /// The StatefulSet.
    pub statefulset: String,
    /// GPU workers: they get work only when the sweep's strategy has device code.
    pub gpu: bool,
    /// Bounds and pace.
    pub policy: PoolPolicy,
}

impl FromStr for Pool {
    type Err = String;

    /// `NAME=cpu` or `NAME=gpu`, optionally `:MIN..MAX` (default `0..1000`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| format!("pool `{s}`: {why} (expected NAME=cpu|gpu[:MIN..MAX])");
        let (name, rest) = s.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let (kind, bounds) = rest.split_once(':').unwrap_or((rest, ""));
        let gpu = match kind {
            "cpu" => false,
            "gpu" => true,
            _ => return Err(bad("the kind is cpu or gpu")),
        };
        let mut policy = PoolPolicy::default();
        if !bounds.is_empty() {
            let (min, max) = bounds.split_once("..").ok_or_else(|| bad("no `..`"))?;
            policy.min = min.parse().map_err(|_| bad("MIN is not a count"))?;
            policy.max = max.parse().map_err(|_| bad("MAX is not a count"))?;
            if policy.min > policy.max {
                return Err(bad("MIN exceeds MAX"));
            }
        }
        if name.is_empty() {
            return Err(bad("no name"));
        }
        Ok(Self {
            statefulset: name.to_owned(),
            gpu,
            policy,
        })
    }
}

/// How decisions take effect.
#[derive(Clone, Debug)]
pub enum Actuation {
    /// Only as the `/metrics` signal (KEDA, an HPA, or an operator reads it); a pool's current
    /// size is then the count of its live nodes.
    Metric,
    /// Through the scale subresource of each pool's StatefulSet.
    Kubernetes(Box<KubeScale>),
}

/// The pool's nodes in `fleet`: those named `STATEFULSET-ORDINAL`.
fn is_member(pool: &Pool, node: &str) -> bool {
    node.strip_prefix(&pool.statefulset)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|ordinal| !ordinal.is_empty() && ordinal.bytes().all(|b| b.is_ascii_digit()))
}

/// What `pool` faces: the cells the running sweep has left as evaluations (none for a GPU pool
/// when its strategy has no device code), its units left, and the median speed of its live
/// nodes.
#[must_use]
pub fn pool_load(
    pool: &Pool,
    current: u32,
    (progress, fleet, plan): (&SweepProgress, &FleetSnapshot, &PlanSnapshot),
) -> PoolLoad {
    let eligible = !progress.ended && (!pool.gpu || plan.gpu_eligible);
    let cells_left = progress.total.saturating_sub(progress.done);
    let mut speeds: Vec<f64> = fleet
        .nodes
        .iter()
        .filter(|n| n.alive && n.evals_per_second > 0.0 && is_member(pool, &n.name))
        .map(|n| n.evals_per_second)
        .collect();
    speeds.sort_by(f64::total_cmp);
    PoolLoad {
        current,
        backlog_evals: if eligible {
            cells_left as f64 * plan.evals_per_cell
        } else {
            0.0
        },
        units_left: if eligible {
            fleet.units_pending + fleet.units_leased
        } else {
            0
        },
        node_rate: speeds.get(speeds.len() / 2).copied(),
    }
}

/// The pools and their scalers, the feed they read, and how decisions take effect.
#[derive(Debug)]
pub struct Autoscaler {
    pools: Vec<(Pool, Scaler)>,
    feed: ProgressFeed,
    actuation: Actuation,
}

impl Autoscaler {
    /// An autoscaler of `pools` following `feed`.
    #[must_use]
    pub fn new(pools: Vec<Pool>, feed: ProgressFeed, actuation: Actuation) -> Self {
        let pools = pools
            .into_iter()
            .map(|p| {
                let scaler = Scaler::new(p.policy.clone());
                (p, scaler)
            })
            .collect();
        Self {
            pools,
            feed,
            actuation,
        }
    }

    /// One step at `now`: every pool's current size, decision and (with Kubernetes) new size;
    /// the pools' state is published on the feed.
    ///
    /// # Errors
    /// The first pool whose size could not be read or set; the other pools are still stepped.
    pub async fn step(&mut self, now: Instant) -> Result<Vec<PoolSnapshot>, ScaleError> {
        let (progress, fleet, plan) = (self.feed.latest(), self.feed.fleet(), self.feed.plan());
        let mut snapshots = Vec::with_capacity(self.pools.len());
        let mut first_error = None;
        for (pool, scaler) in &mut self.pools {
            let current = match &self.actuation {
                Actuation::Metric => {
                    let live = fleet
                        .nodes
                        .iter()
                        .filter(|n| n.alive && !n.draining && is_member(pool, &n.name))
                        .count();
                    u32::try_from(live).unwrap_or(u32::MAX)
                }
                Actuation::Kubernetes(kube) => match kube.replicas(&pool.statefulset).await {
                    Ok(n) => n,
                    Err(e) => {
                        first_error.get_or_insert(e);
                        continue;
                    }
                },
            };
            let load = pool_load(pool, current, (&progress, &fleet, &plan));
            let desired = scaler.wanted(&load);
            let decision = scaler.decide(&load, now);
            let mut snapshot = PoolSnapshot {
                pool: pool.statefulset.clone(),
                current,
                desired,
            };
            if let (
                ScaleDecision::Up(n) | ScaleDecision::Drain { to: n },
                Actuation::Kubernetes(kube),
            ) = (decision, &self.actuation)
            {
                match kube.set_replicas(&pool.statefulset, n).await {
                    Ok(()) => {
                        tracing::info!(pool = %pool.statefulset, from = current, to = n,
                            backlog_evals = load.backlog_evals, units_left = load.units_left,
                            "pool scaled");
                        snapshot.current = n;
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            snapshots.push(snapshot);
        }
        self.feed.publish_pools(snapshots.clone());
        first_error.map_or(Ok(snapshots), Err)
    }

    /// Leaves every pool at its minimum: what a one-shot head does as it exits, since nothing
    /// would scale its pools down after it (with [`Actuation::Metric`], the desired sizes
    /// published become the minimums).
    ///
    /// # Errors
    /// The first pool whose size could not be set; the others are still set.
    pub async fn settle(&mut self) -> Result<(), ScaleError> {
        let mut first_error = None;
        let mut snapshots = Vec::with_capacity(self.pools.len());
        for (pool, _) in &self.pools {
            let min = pool.policy.min;
            if let Actuation::Kubernetes(kube) = &self.actuation {
                match kube.set_replicas(&pool.statefulset, min).await {
                    Ok(()) => tracing::info!(pool = %pool.statefulset, to = min, "pool settled"),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            snapshots.push(PoolSnapshot {
                pool: pool.statefulset.clone(),
                current: min,
                desired: min,
            });
        }
        self.feed.publish_pools(snapshots);
        first_error.map_or(Ok(()), Err)
    }

    /// Steps every `period` until `stop`, then, when `settle`, [`settles`](Self::settle) the
    /// pools; errors are logged and the next step tries again.
    pub async fn run(mut self, period: Duration, stop: CancellationToken, settle: bool) {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            if let Err(e) = self.step(Instant::now()).await {
                tracing::warn!(error = %e, "autoscaler step failed; trying again next period");
            }
        }
        if settle && let Err(e) = self.settle().await {
            tracing::warn!(error = %e, "could not leave the pools at their minimum");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::NodeSnapshot;

    fn node(name: &str, speed: f64, alive: bool) -> NodeSnapshot {
        NodeSnapshot {
            name: name.to_owned(),
            alive,
            evals_per_second: speed,
            ..NodeSnapshot::default()
        }
    }

    #[test]
    fn a_pools_load_is_the_sweeps_backlog_at_its_own_nodes_median_speed() {
        let cpu: Pool = "gridtest-cpu=cpu:0..10".parse().unwrap();
        let gpu: Pool = "gridtest-gpu=gpu".parse().unwrap();
        let progress = SweepProgress {
            done: 400,
            total: 1_000,
            ..SweepProgress::default()
        };
        let fleet = FleetSnapshot {
            units_pending: 7,
            units_leased: 3,
            nodes: vec![
                node("gridtest-cpu-0", 3e6, true),
                node("gridtest-cpu-1", 1e6, true),
                node("gridtest-cpu-2", 2e6, true),
                node("gridtest-cpu-3", 9e9, false),
                node("gridtest-cpu-extra-0", 9e9, true),
                node("gridtest-gpu-0", 5e8, true),
                node("gridtest-head-0", 0.0, true),
            ],
            ..FleetSnapshot::default()
        };
        let plan = PlanSnapshot {
            evals_per_cell: 2_000.0,
            gpu_eligible: false,
            dataset_bytes: 0,
        };
        let load = pool_load(&cpu, 3, (&progress, &fleet, &plan));
        assert_eq!(load.current, 3);
        assert_eq!(load.backlog_evals, 600.0 * 2_000.0);
        assert_eq!(load.units_left, 10);
        assert_eq!(load.node_rate, Some(2e6), "median of its live members only");
        // No device code: the GPU pool has nothing to do.
        let idle = pool_load(&gpu, 1, (&progress, &fleet, &plan));
        assert_eq!((idle.backlog_evals, idle.units_left), (0.0, 0));
        let plan = PlanSnapshot {
            gpu_eligible: true,
            ..plan
        };
        let busy = pool_load(&gpu, 1, (&progress, &fleet, &plan));
        assert_eq!(busy.units_left, 10);
        assert_eq!(busy.node_rate, Some(5e8));
        // An ended sweep leaves nothing.
        let ended = SweepProgress {
            ended: true,
            ..progress
        };
        assert_eq!(pool_load(&cpu, 3, (&ended, &fleet, &plan)).units_left, 0);
    }

    #[test]
    fn pools_parse_with_their_bounds() {
        let p: Pool = "w=cpu:2..30".parse().unwrap();
        assert_eq!((p.policy.min, p.policy.max, p.gpu), (2, 30, false));
        for bad in ["w", "=cpu", "w=cpu:3", "w=cpu:5..2", "w=cpu:a..2"] {
            assert!(bad.parse::<Pool>().is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn with_the_metric_only_the_desired_size_is_published() {
        let feed = ProgressFeed::default();
        feed.publish(SweepProgress {
            done: 0,
            total: 100,
            ..SweepProgress::default()
        });
        feed.publish_fleet(FleetSnapshot {
            units_pending: 100,
            nodes: vec![node("p-0", 1.0, true)],
            ..FleetSnapshot::default()
        });
        feed.publish_plan(PlanSnapshot {
            evals_per_cell: 1e9,
            gpu_eligible: false,
            dataset_bytes: 0,
        });
        let pool: Pool = "p=cpu:0..8".parse().unwrap();
        let mut scaler = Autoscaler::new(vec![pool], feed.clone(), Actuation::Metric);
        let pools = scaler.step(Instant::now()).await.unwrap();
        let want = PoolSnapshot {
            pool: "p".into(),
            current: 1,
            desired: 8,
        };
        assert_eq!(pools, vec![want.clone()]);
        assert_eq!(*feed.pools(), vec![want]);
    }
}
