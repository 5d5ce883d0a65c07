//! `Fleet`: what a sweep's supervisor knows of the nodes working on it, and its rules: the
//! wait-for-nodes gate, who may take work, liveness, slow-node detection, and the statistics
//! per node and per GPU scorer. Pure (the time is passed in, nothing is logged), so every rule
//! is tested on its own; the supervisor actor only dispatches messages to it and to the
//! [`Ledger`](super::Ledger).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use super::device_telemetry::DeviceTelemetry;
use super::ledger::WorkerId;
use super::node_stats::NodeStats;

/// The fleet's settings.
#[derive(Clone, Copy, Debug)]
pub struct FleetRules {
    /// Hand out no work until this many nodes have asked for some (0: start at once)…
    pub wait_for_nodes: usize,
    /// …or until this long after the start.
    pub wait_limit: Duration,
    /// Silence after which a node loses its leases.
    pub node_timeout: Duration,
    /// Below this fraction of the median per-scorer speed, a node is slow.
    pub slow_fraction: f64,
}

impl Default for FleetRules {
    fn default() -> Self {
        Self {
            wait_for_nodes: 0,
            wait_limit: Duration::from_secs(120),
            node_timeout: Duration::from_secs(5),
            slow_fraction: 0.5,
        }
    }
}

/// One node as the supervisor sees it.
#[derive(Clone, Debug)]
pub struct NodeView {
    /// What it did.
    pub stats: NodeStats,
    /// Whether it counts as alive (it may come back after being lost).
    pub alive: bool,
    /// Whether it asked to stop taking work.
    pub draining: bool,
    /// Its latest device readings (GPU nodes).
    pub telemetry: Vec<DeviceTelemetry>,
    last_seen: Instant,
}

/// A node found slow by [`Fleet::flag_slow`].
#[derive(Clone, Debug, PartialEq)]
pub struct SlowNode {
    /// The node.
    pub node: String,
    /// Its evaluations per second of scorer time.
    pub speed: f64,
    /// The median of the nodes compared.
    pub median: f64,
}

/// Answer of the wait-for-nodes gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Work may be handed out.
    Open,
    /// Not yet: fewer nodes than asked for have shown up.
    Wait,
}

/// The nodes of one sweep.
#[derive(Debug)]
pub struct Fleet {
    rules: FleetRules,
    nodes: BTreeMap<String, NodeView>,
    gpu_slots: BTreeMap<String, NodeStats>,
    /// Per device (`node/gpuD`): its energy counter's first and latest reading, mJ.
    energy: BTreeMap<String, (u64, u64)>,
    asking: BTreeSet<String>,
    started: Instant,
    first_lease: Option<Instant>,
}

impl Fleet {
    /// An empty fleet, started at `now`.
    #[must_use]
    pub fn new(rules: FleetRules, now: Instant) -> Self {
        Self {
            rules,
            nodes: BTreeMap::new(),
            gpu_slots: BTreeMap::new(),
            energy: BTreeMap::new(),
            asking: BTreeSet::new(),
            started: now,
            first_lease: None,
        }
    }

    fn node(&mut self, name: &str, now: Instant) -> &mut NodeView {
        self.nodes
            .entry(name.to_owned())
            .or_insert_with(|| NodeView {
                stats: NodeStats::default(),
                alive: true,
                draining: false,
                telemetry: Vec::new(),
                last_seen: now,
            })
    }

    /// Any message from a node proves it is alive. Returns `true` when it had been lost (its
    /// late results still count, once).
    pub fn seen(&mut self, name: &str, now: Instant) -> bool {
        let node = self.node(name, now);
        node.last_seen = now;
        let back = !node.alive;
        node.alive = true;
        back
    }

    /// The wait-for-nodes gate, asked by `node` wanting work: before the first lease, work is
    /// held until `wait_for_nodes` distinct nodes have asked, or `wait_limit` has passed.
    pub fn gate(&mut self, node: &str, now: Instant) -> Gate {
        if self.first_lease.is_some() || self.rules.wait_for_nodes == 0 {
            return Gate::Open;
        }
        self.asking.insert(node.to_owned());
        if self.asking.len() >= self.rules.wait_for_nodes
            || now.duration_since(self.started) >= self.rules.wait_limit
        {
            Gate::Open
        } else {
            Gate::Wait
        }
    }

    /// Whether `node` may take work: it is not draining, and a GPU scorer only takes units of
    /// a strategy with device code.
    #[must_use]
    pub fn may_lease(&self, node: &str, gpu: bool, gpu_capable: bool) -> bool {
        !self.nodes.get(node).is_some_and(|n| n.draining) && (!gpu || gpu_capable)
    }

    /// A unit was leased at `now` (the compute clock starts at the first).
    pub fn leased(&mut self, now: Instant) {
        self.first_lease.get_or_insert(now);
    }

    /// From the first lease to `now` (zero before it).
    #[must_use]
    pub fn compute_wall(&self, now: Instant) -> Duration {
        self.first_lease
            .map_or(Duration::ZERO, |t| now.duration_since(t))
    }

    /// Alive nodes silent for longer than the node timeout at `now`.
    #[must_use]
    pub fn silent(&self, now: Instant) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.alive && now.duration_since(n.last_seen) > self.rules.node_timeout)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Whether `node` is known and alive.
    #[must_use]
    pub fn is_alive(&self, node: &str) -> bool {
        self.nodes.get(node).is_some_and(|n| n.alive)
    }

    /// `node` is lost; `requeued` of its units went back to the queue.
    pub fn lost(&mut self, node: &str, requeued: usize, now: Instant) {
        let n = self.node(node, now);
        n.alive = false;
        n.stats.requeued += requeued as u64;
    }

    /// `requeued` units of `node` went back to the queue (a scorer handed them back).
    pub fn requeued(&mut self, node: &str, requeued: usize, now: Instant) {
        self.node(node, now).stats.requeued += requeued as u64;
    }

    /// A unit report of `worker`: `new` cells became final, after `evaluations` in `busy`.
    pub fn reported(
        &mut self,
        worker: &WorkerId,
        new: usize,
        evaluations: u64,
        busy: Duration,
        now: Instant,
    ) {
        let add = |s: &mut NodeStats| {
            s.units += 1;
            s.cells += new as u64;
            s.evaluations += evaluations;
            s.busy += busy;
        };
        add(&mut self.node(&worker.node, now).stats);
        if worker.is_gpu() {
            add(self.gpu_slots.entry(worker.to_string()).or_default());
        }
    }

    /// A node's status (an answer to a ping). Returns `true` when a reading newly reports
    /// thermal or power throttling.
    pub fn status(
        &mut self,
        node: &str,
        draining: bool,
        telemetry: Vec<DeviceTelemetry>,
        now: Instant,
    ) -> bool {
        for t in &telemetry {
            if let Some(mj) = t.energy_mj {
                let counter = self
                    .energy
                    .entry(format!("{node}/{}", t.device))
                    .or_insert((mj, mj));
                counter.1 = mj;
            }
        }
        let n = self.node(node, now);
        n.draining = draining;
        let was_throttled = |device: &str| {
            n.telemetry
                .iter()
                .any(|before| before.device == device && before.throttled)
        };
        let newly_throttled = telemetry
            .iter()
            .any(|t| t.throttled && !was_throttled(&t.device));
        n.telemetry = telemetry;
        newly_throttled
    }

    /// Marks nodes whose per-scorer speed is below `slow_fraction` of the median (of nodes
    /// with at least two units), clears the mark of the others; returns the newly slow ones.
    pub fn flag_slow(&mut self) -> Vec<SlowNode> {
        let measured = |n: &NodeView| n.stats.units >= 2;
        let mut speeds: Vec<f64> = self
            .nodes
            .values()
            .filter(|n| measured(n))
            .map(|n| n.stats.speed())
            .collect();
        if speeds.len() < 2 {
            return Vec::new();
        }
        speeds.sort_by(f64::total_cmp);
        let median = speeds[speeds.len() / 2];
        let mut newly = Vec::new();
        for (name, n) in &mut self.nodes {
            let slow = measured(n) && n.stats.speed() < self.rules.slow_fraction * median;
            if slow && !n.stats.slow {
                newly.push(SlowNode {
                    node: name.clone(),
                    speed: n.stats.speed(),
                    median,
                });
            }
            n.stats.slow = slow;
        }
        newly
    }

    /// The nodes, by name.
    #[must_use]
    pub fn nodes(&self) -> &BTreeMap<String, NodeView> {
        &self.nodes
    }

    /// Statistics per GPU scorer (`node/gpuD-K`).
    #[must_use]
    pub fn gpu_slots(&self) -> &BTreeMap<String, NodeStats> {
        &self.gpu_slots
    }

    /// Energy each device (`node/gpuD`) used between its first and latest reading, joules
    /// (readings come with the nodes' status, every heartbeat).
    #[must_use]
    pub fn gpu_energy_joules(&self) -> BTreeMap<String, f64> {
        self.energy
            .iter()
            .map(|(device, &(first, last))| {
                (device.clone(), last.saturating_sub(first) as f64 / 1e3)
            })
            .collect()
    }

    /// Statistics per node.
    #[must_use]
    pub fn node_stats(&self) -> BTreeMap<String, NodeStats> {
        self.nodes
            .iter()
            .map(|(k, v)| (k.clone(), v.stats.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn worker(node: &str, slot: &str) -> WorkerId {
        WorkerId::new(node, slot)
    }

    #[test]
    fn the_gate_holds_work_until_enough_distinct_nodes_ask_or_the_limit_passes() {
        let t0 = Instant::now();
        let rules = FleetRules {
            wait_for_nodes: 2,
            wait_limit: secs(60),
            ..FleetRules::default()
        };
        let mut fleet = Fleet::new(rules, t0);
        assert_eq!(fleet.gate("a", t0), Gate::Wait);
        assert_eq!(
            fleet.gate("a", t0 + secs(1)),
            Gate::Wait,
            "the same node twice"
        );
        assert_eq!(fleet.gate("b", t0 + secs(2)), Gate::Open);

        let mut alone = Fleet::new(rules, t0);
        assert_eq!(alone.gate("a", t0 + secs(59)), Gate::Wait);
        assert_eq!(
            alone.gate("a", t0 + secs(60)),
            Gate::Open,
            "the limit passed"
        );

        let mut started = Fleet::new(rules, t0);
        started.leased(t0);
        assert_eq!(started.gate("a", t0), Gate::Open, "after the first lease");
        assert_eq!(
            Fleet::new(FleetRules::default(), t0).gate("a", t0),
            Gate::Open,
            "no wait asked"
        );
    }

    #[test]
    fn draining_nodes_and_gpu_scorers_of_cpu_only_strategies_get_no_work() {
        let t0 = Instant::now();
        let mut fleet = Fleet::new(FleetRules::default(), t0);
        assert!(fleet.may_lease("a", false, false), "an unknown node may");
        assert!(!fleet.may_lease("a", true, false), "no device code");
        assert!(fleet.may_lease("a", true, true));
        fleet.status("a", true, Vec::new(), t0);
        assert!(!fleet.may_lease("a", false, true), "draining");
        assert!(fleet.may_lease("b", false, true));
    }

    #[test]
    fn a_node_silent_past_the_timeout_is_listed_once_lost_and_counts_again_when_back() {
        let t0 = Instant::now();
        let mut fleet = Fleet::new(FleetRules::default(), t0);
        assert!(!fleet.seen("a", t0));
        fleet.seen("b", t0 + secs(4));
        assert_eq!(
            fleet.silent(t0 + secs(5)),
            Vec::<String>::new(),
            "5 s is not past"
        );
        assert_eq!(fleet.silent(t0 + secs(6)), vec!["a".to_owned()]);
        fleet.lost("a", 3, t0 + secs(6));
        assert!(!fleet.is_alive("a"));
        assert_eq!(
            fleet.silent(t0 + secs(20)),
            vec!["b".to_owned()],
            "lost nodes not again"
        );
        assert!(fleet.seen("a", t0 + secs(21)), "back");
        assert!(fleet.is_alive("a"));
        assert_eq!(fleet.nodes()["a"].stats.requeued, 3);
    }

    #[test]
    fn reports_add_up_per_node_and_per_gpu_scorer() {
        let t0 = Instant::now();
        let mut fleet = Fleet::new(FleetRules::default(), t0);
        fleet.reported(&worker("a", "s0"), 10, 1_000, secs(1), t0);
        let gpu = worker("a", "gpu0-1").of_kind(crate::sweep::ScorerKind::Gpu);
        fleet.reported(&gpu, 5, 4_000, secs(1), t0);
        fleet.reported(&gpu, 0, 4_000, secs(1), t0);
        // A slot's name does not make it a GPU scorer: its kind does.
        fleet.reported(&worker("a", "gpu-named-cpu"), 0, 0, secs(0), t0);
        fleet.requeued("a", 2, t0);
        let a = &fleet.node_stats()["a"];
        assert_eq!(
            (a.units, a.cells, a.evaluations, a.requeued),
            (4, 15, 9_000, 2)
        );
        assert_eq!(a.busy, secs(3));
        let gpu = &fleet.gpu_slots()["a/gpu0-1"];
        assert_eq!((gpu.units, gpu.cells, gpu.evaluations), (2, 5, 8_000));
        assert_eq!(fleet.gpu_slots().len(), 1, "CPU slots are not GPU scorers");
    }

    #[test]
    fn a_node_below_half_the_median_speed_is_flagged_once_and_cleared_when_it_recovers() {
        let t0 = Instant::now();
        let mut fleet = Fleet::new(FleetRules::default(), t0);
        for (node, evals) in [("a", 100), ("b", 100), ("c", 40)] {
            for _ in 0..2 {
                fleet.reported(&worker(node, "s0"), 1, evals, secs(1), t0);
            }
        }
        let slow = fleet.flag_slow();
        assert_eq!(slow.len(), 1);
        assert_eq!(slow[0].node, "c");
        assert!((slow[0].speed - 40.0).abs() < 1e-9 && (slow[0].median - 100.0).abs() < 1e-9);
        assert!(fleet.nodes()["c"].stats.slow);
        assert!(fleet.flag_slow().is_empty(), "flagged once");
        for _ in 0..8 {
            fleet.reported(&worker("c", "s0"), 1, 100, secs(1), t0);
        }
        assert!(fleet.flag_slow().is_empty());
        assert!(
            !fleet.nodes()["c"].stats.slow,
            "recovered: 880 evaluations in 10 s is above half of 100/s"
        );
    }

    #[test]
    fn one_measured_node_is_never_slow() {
        let t0 = Instant::now();
        let mut fleet = Fleet::new(FleetRules::default(), t0);
        fleet.reported(&worker("a", "s0"), 1, 100, secs(1), t0);
        fleet.reported(&worker("a", "s0"), 1, 100, secs(1), t0);
        fleet.reported(&worker("b", "s0"), 1, 1, secs(1), t0);
        assert!(
            fleet.flag_slow().is_empty(),
            "b has one unit only: a has no peer"
        );
    }

    #[test]
    fn throttling_is_reported_when_it_first_appears() {
        let t0 = Instant::now();
        let mut fleet = Fleet::new(FleetRules::default(), t0);
        let reading = |temperature_c, clock, throttled| DeviceTelemetry {
            device: "gpu0".to_owned(),
            sm_clock_mhz: clock,
            max_sm_clock_mhz: 1980,
            temperature_c,
            throttled,
            energy_mj: None,
        };
        assert!(!fleet.status("a", false, vec![reading(60, 1980, false)], t0));
        assert!(fleet.status("a", false, vec![reading(84, 1410, true)], t0));
        assert!(
            !fleet.status("a", false, vec![reading(85, 1395, true)], t0),
            "still throttled: not news, whatever the clock"
        );
        assert!(!fleet.status("a", false, vec![reading(70, 1980, false)], t0));
        assert!(
            fleet.status("a", false, vec![reading(84, 1410, true)], t0),
            "again"
        );
    }

    #[test]
    fn energy_is_the_counters_rise_per_device_over_the_sweep() {
        let t0 = Instant::now();
        let mut fleet = Fleet::new(FleetRules::default(), t0);
        let reading = |device: &str, energy_mj| DeviceTelemetry {
            device: device.to_owned(),
            energy_mj,
            ..DeviceTelemetry::default()
        };
        fleet.status("a", false, vec![reading("gpu0", Some(5_000_000))], t0);
        fleet.status("b", false, vec![reading("gpu0", None)], t0);
        fleet.status(
            "a",
            false,
            vec![reading("gpu0", Some(5_250_000)), reading("gpu1", Some(7))],
            t0,
        );
        fleet.status(
            "a",
            false,
            vec![
                reading("gpu0", Some(5_600_500)),
                reading("gpu1", Some(1_007)),
            ],
            t0,
        );
        let energy = fleet.gpu_energy_joules();
        assert_eq!(
            energy.len(),
            2,
            "a device without a counter has no entry: {energy:?}"
        );
        assert!((energy["a/gpu0"] - 600.5).abs() < 1e-9);
        assert!((energy["a/gpu1"] - 1.0).abs() < 1e-9);
    }
}
