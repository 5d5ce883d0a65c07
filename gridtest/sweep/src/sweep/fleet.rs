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
use crate::data::ProcessReads;
use crate::progress::{DeviceSnapshot, LatencyHistogram, NodeSnapshot};

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
    /// How long its scorers waited for their leases (as of its latest status), but for each
    /// scorer's first lease of the sweep.
    pub lease_latency: LatencyHistogram,
    /// How long they waited for their first lease of the sweep (the one carrying its context).
    pub first_lease_latency: LatencyHistogram,
    /// Why it takes no work of this sweep, if it runs other code than the sweep needs.
    pub incompatible: Option<String>,
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
    /// Per process: the lowest and highest count of bytes read from datasets it sent.
    reads: BTreeMap<u64, (u64, u64)>,
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
            reads: BTreeMap::new(),
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
                lease_latency: LatencyHistogram::default(),
                first_lease_latency: LatencyHistogram::default(),
                incompatible: None,
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

    /// `node` runs other code than the sweep needs (`reason` names what differs): it takes no
    /// more work of the sweep. Returns `true` the first time.
    pub fn incompatible(&mut self, node: &str, reason: &str, now: Instant) -> bool {
        let view = self.node(node, now);
        let first = view.incompatible.is_none();
        view.incompatible.get_or_insert_with(|| reason.to_owned());
        first
    }

    /// Whether `node` was found to run other code than the sweep needs.
    #[must_use]
    pub fn is_incompatible(&self, node: &str) -> bool {
        self.nodes
            .get(node)
            .is_some_and(|n| n.incompatible.is_some())
    }

    /// The nodes found to run other code, and what differs.
    #[must_use]
    pub fn incompatible_nodes(&self) -> BTreeMap<String, String> {
        self.nodes
            .iter()
            .filter_map(|(name, n)| Some((name.clone(), n.incompatible.clone()?)))
            .collect()
    }

    /// A unit was leased at `now` (the compute clock starts at the first).
    pub fn leased(&mut self, now: Instant) {
        self.first_lease.get_or_insert(now);
    }

    /// Whether the first unit has been leased (the wait-for-nodes gate is open).
    #[must_use]
    pub fn leasing(&self) -> bool {
        self.first_lease.is_some()
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
        self.worked(worker, 1, new, evaluations, busy, now);
    }

    /// Work of `worker` that does not end a unit — a slice of a history read by slices, or a
    /// part of a unit's report other than its last: `new` cells became final, after
    /// `evaluations` in `busy`.
    pub fn worked_on(
        &mut self,
        worker: &WorkerId,
        new: usize,
        evaluations: u64,
        busy: Duration,
        now: Instant,
    ) {
        self.worked(worker, 0, new, evaluations, busy, now);
    }

    fn worked(
        &mut self,
        worker: &WorkerId,
        units: u64,
        new: usize,
        evaluations: u64,
        busy: Duration,
        now: Instant,
    ) {
        let end = self.compute_wall(now);
        let start = end.saturating_sub(busy);
        let add = |s: &mut NodeStats| {
            s.units += units;
            s.cells += new as u64;
            s.evaluations += evaluations;
            s.busy += busy;
            s.first_start = Some(s.first_start.map_or(start, |t| t.min(start)));
            s.last_end = Some(s.last_end.map_or(end, |t| t.max(end)));
        };
        add(&mut self.node(&worker.node, now).stats);
        if worker.is_gpu() {
            add(self.gpu_slots.entry(worker.to_string()).or_default());
        }
    }

    /// A process's count of bytes read from datasets, as a lease request (before its reads
    /// for the sweep) or a report (after a unit) carried it.
    pub fn read(&mut self, reading: ProcessReads) {
        let (low, high) = self
            .reads
            .entry(reading.process)
            .or_insert((reading.bytes, reading.bytes));
        *low = (*low).min(reading.bytes);
        *high = (*high).max(reading.bytes);
    }

    /// Bytes the processes seen read from datasets during the sweep.
    #[must_use]
    pub fn bytes_read(&self) -> u64 {
        self.reads.values().map(|(low, high)| high - low).sum()
    }

    /// Bytes the processes seen read from datasets during the sweep, but process `except`
    /// (the head's own, which counts its reads from before the sweep was planned).
    #[must_use]
    pub fn bytes_read_except(&self, except: u64) -> u64 {
        self.reads
            .iter()
            .filter(|(process, _)| **process != except)
            .map(|(_, (low, high))| high - low)
            .sum()
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

    /// A node's lease latencies so far (from its status): its scorers' first leases of the
    /// sweep, and the others.
    pub fn lease_latency_of(
        &mut self,
        node: &str,
        first: LatencyHistogram,
        later: LatencyHistogram,
        now: Instant,
    ) {
        let view = self.node(node, now);
        view.first_lease_latency = first;
        view.lease_latency = later;
    }

    /// Every node's lease latencies but for first leases, merged.
    #[must_use]
    pub fn lease_latency(&self) -> LatencyHistogram {
        self.merged(|n| &n.lease_latency)
    }

    /// Every node's first-lease latencies, merged.
    #[must_use]
    pub fn first_lease_latency(&self) -> LatencyHistogram {
        self.merged(|n| &n.first_lease_latency)
    }

    fn merged(&self, of: impl Fn(&NodeView) -> &LatencyHistogram) -> LatencyHistogram {
        let mut all = LatencyHistogram::default();
        for n in self.nodes.values() {
            all.merge(of(n));
        }
        all
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
mod tests;

impl Fleet {
    /// Every node as the metrics expose it, by name, and every GPU scorer's speed.
    #[must_use]
    pub fn snapshot(&self) -> (Vec<NodeSnapshot>, Vec<(String, f64)>) {
        let nodes = self
            .nodes
            .iter()
            .map(|(name, n)| NodeSnapshot {
                name: name.clone(),
                alive: n.alive,
                draining: n.draining,
                slow: n.stats.slow,
                incompatible: n.incompatible.is_some(),
                gpu: !n.telemetry.is_empty()
                    || self
                        .gpu_slots
                        .keys()
                        .any(|s| s.starts_with(&format!("{name}/"))),
                cells: n.stats.cells,
                evaluations: n.stats.evaluations,
                requeued: n.stats.requeued,
                evals_per_second: n.stats.speed(),
                devices: n
                    .telemetry
                    .iter()
                    .map(|t| DeviceSnapshot {
                        device: t.device.clone(),
                        sm_clock_mhz: t.sm_clock_mhz,
                        max_sm_clock_mhz: t.max_sm_clock_mhz,
                        temperature_c: t.temperature_c,
                        throttled: t.throttled,
                    })
                    .collect(),
            })
            .collect();
        let slots = self
            .gpu_slots
            .iter()
            .map(|(slot, s)| (slot.clone(), s.speed()))
            .collect();
        (nodes, slots)
    }
}
