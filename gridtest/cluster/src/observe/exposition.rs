//! The `/metrics` page: a registry built at each scrape from the latest snapshots, encoded by
//! `prometheus-client` in the Prometheus text format.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::progress::{FleetSnapshot, LatencyHistogram, NodeSnapshot, ProgressFeed};

type Labels = Vec<(&'static str, String)>;
type IntFamily = Family<Labels, Gauge>;
type FloatFamily = Family<Labels, Gauge<f64, AtomicU64>>;

fn label(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The metrics of a node in the Prometheus text format: whether it is ready, where its sweep
/// stands (cells, units), and per node of the fleet its state, cells and speed, GPU scorers
/// and device clocks (on the head; a worker's fleet is empty).
///
/// ```
/// # extern crate gridtest_cluster as gridtest;
/// use gridtest::observe::render_metrics;
/// # use gridtest_core::progress::{PoolSnapshot, ProgressFeed, SweepProgress};
/// let feed = ProgressFeed::default();
/// feed.publish(SweepProgress { done: 3, total: 10, ..SweepProgress::default() });
/// feed.publish_pools(vec![PoolSnapshot { pool: "gridtest-cpu".into(), current: 2, desired: 5 }]);
/// let text = render_metrics(true, &feed);
/// assert!(text.contains("gridtest_cells{state=\"done\"} 3"));
/// assert!(text.contains("gridtest_pool_replicas{pool=\"gridtest-cpu\",state=\"desired\"} 5"));
/// assert!(text.ends_with("# EOF\n"));
/// ```
#[must_use]
pub fn render_metrics(ready: bool, feed: &ProgressFeed) -> String {
    let (progress, fleet) = (&feed.latest(), &*feed.fleet());
    let mut registry = Registry::with_prefix("gridtest");
    let gauge = |registry: &mut Registry, name: &str, help: &str, value: i64| {
        let g: Gauge = Gauge::default();
        g.set(value);
        registry.register(name, help, g);
    };
    gauge(
        &mut registry,
        "ready",
        "Whether the node is ready (1) or not (0)",
        i64::from(ready),
    );
    let cells = IntFamily::default();
    for (state, n) in [
        ("done", progress.done),
        ("failed", progress.failed),
        ("total", progress.total),
    ] {
        cells.get_or_create(&label(&[("state", state)])).set(int(n));
    }
    registry.register("cells", "Cells of the running sweep, by state", cells);
    let units = IntFamily::default();
    for (state, n) in [
        ("pending", fleet.units_pending),
        ("leased", fleet.units_leased),
    ] {
        units.get_or_create(&label(&[("state", state)])).set(int(n));
    }
    registry.register("units", "Work units of the running sweep, by state", units);
    gauge(
        &mut registry,
        "requeued_units",
        "Units put back in the queue (node lost or drained) in the running sweep",
        int(fleet.requeued),
    );
    gauge(
        &mut registry,
        "speculative_units",
        "Speculative second leases of straggling units in the running sweep",
        int(fleet.speculative),
    );
    gauge(
        &mut registry,
        "duplicate_cells",
        "Cell results ignored because the cell was already final",
        int(fleet.duplicate_cells),
    );
    reads(&mut registry, feed, fleet);
    nodes(&mut registry, fleet);
    gauge(
        &mut registry,
        "gpu_slots",
        "GPU scorers that took part in the running sweep",
        int(fleet.gpu_slots.len()),
    );
    let slots = FloatFamily::default();
    for (slot, speed) in &fleet.gpu_slots {
        slots.get_or_create(&label(&[("slot", slot)])).set(*speed);
    }
    registry.register(
        "gpu_slot_evaluations_per_second",
        "Evaluations per second of scorer time, per GPU scorer",
        slots,
    );
    ledger(&mut registry, feed);
    lease_latency(&mut registry, fleet);
    pools(&mut registry, feed);
    let mut text = String::new();
    encode(&mut text, &registry).expect("writing to a String cannot fail");
    text
}

/// The worker pools: current and desired replicas (with an autoscaler).
fn pools(registry: &mut Registry, feed: &ProgressFeed) {
    let pools = IntFamily::default();
    for p in feed.pools().iter() {
        for (state, n) in [("current", p.current), ("desired", p.desired)] {
            pools
                .get_or_create(&label(&[("pool", &p.pool), ("state", state)]))
                .set(i64::from(n));
        }
    }
    registry.register(
        "pool_replicas",
        "Worker replicas per pool: current, and desired by the head's autoscaler (the KEDA / HPA signal)",
        pools,
    );
}

/// How long scorers waited for their leases (quantiles: bucket bounds) and the count; the
/// head's share of it (requests' arrival) and its supervisor's queue.
fn lease_latency(registry: &mut Registry, fleet: &FleetSnapshot) {
    let h = &fleet.lease_latency;
    registry.register(
        "lease_latency_seconds",
        "Time from a scorer's lease request to the lease granted, over the fleet, but for each scorer's first lease of a sweep (upper bounds of buckets an eighth of a power of two wide)",
        quantile_family(h),
    );
    registry.register(
        "first_lease_latency_seconds",
        "The same for each scorer's first lease of a sweep, which carries the sweep's context and comes in a burst as it starts (upper bounds of buckets an eighth of a power of two wide)",
        quantile_family(&fleet.first_lease_latency),
    );
    let n: Gauge = Gauge::default();
    n.set(int(h.count() + fleet.first_lease_latency.count()));
    registry.register(
        "leases",
        "Leases granted so far, as the nodes last reported",
        n,
    );
    registry.register(
        "lease_arrival_seconds",
        "The head's share of the lease latency: a lease request's time from the scorer's send to the supervisor's handling, by the two hosts' wall clocks (upper bounds of buckets an eighth of a power of two wide; as exact as the clocks agree)",
        quantile_family(&fleet.lease_arrival),
    );
    registry.register(
        "supervisor_queue_seconds",
        "How long a message waits in the supervisor's mailbox, timed by probes every 20 ms (upper bounds of buckets an eighth of a power of two wide)",
        quantile_family(&fleet.supervisor_queue),
    );
}

/// p50 and p99 of `h` (bucket upper bounds: within an eighth above), seconds.
fn quantile_family(h: &LatencyHistogram) -> FloatFamily {
    let quantiles = FloatFamily::default();
    for (q, name) in [(0.5, "0.5"), (0.99, "0.99")] {
        let s = h.quantile(q).map_or(0.0, |d| d.as_secs_f64());
        quantiles
            .get_or_create(&label(&[("quantile", name)]))
            .set(s);
    }
    quantiles
}

/// The head's ledger flushes: counts by outcome, and the latest, slowest and mean duration.
fn ledger(registry: &mut Registry, feed: &ProgressFeed) {
    let r = feed.ledger_flushes().reading();
    let flushes = IntFamily::default();
    for (outcome, n) in [("ok", r.ok), ("failed", r.failed)] {
        flushes
            .get_or_create(&label(&[("outcome", outcome)]))
            .set(int(n));
    }
    registry.register(
        "ledger_flushes",
        "Ledger flushes to the results root, by outcome",
        flushes,
    );
    let seconds = FloatFamily::default();
    let n = (r.ok + r.failed).max(1) as f64;
    for (stat, s) in [
        ("last", r.last_s),
        ("max", r.max_s),
        ("mean", r.total_s / n),
    ] {
        seconds.get_or_create(&label(&[("stat", stat)])).set(s);
    }
    registry.register(
        "ledger_flush_seconds",
        "Duration of ledger flushes: the latest, the slowest, the mean",
        seconds,
    );
}

/// Nodes counted by kind and state.
fn nodes_by_kind(registry: &mut Registry, fleet: &FleetSnapshot) {
    let by_kind = IntFamily::default();
    let state_of = |n: &NodeSnapshot| match (n.incompatible, n.alive) {
        (true, _) => "incompatible",
        (false, true) => "alive",
        (false, false) => "lost",
    };
    for kind in ["cpu", "gpu"] {
        for state in ["alive", "lost", "incompatible"] {
            let n = fleet
                .nodes
                .iter()
                .filter(|n| (n.gpu == (kind == "gpu")) && state_of(n) == state)
                .count();
            by_kind
                .get_or_create(&label(&[("kind", kind), ("state", state)]))
                .set(int(n));
        }
    }
    registry.register(
        "nodes",
        "Nodes that took part, by kind and state (incompatible: running other code than the \
         sweep needs, refused)",
        by_kind,
    );
}

/// Per-node families: counts by kind and state, cells, speed, devices.
/// What the running sweep and this process read from datasets.
fn reads(registry: &mut Registry, feed: &ProgressFeed, fleet: &FleetSnapshot) {
    for (name, help, value) in [
        (
            "sweep_bytes_read",
            "Bytes the running sweep's scorers have read from its dataset",
            fleet.bytes_read,
        ),
        (
            "dataset_bytes",
            "Bytes of the files of the running sweep's dataset (its manifest)",
            feed.plan().dataset_bytes,
        ),
        (
            "process_bytes_read",
            "Bytes this process has read from datasets since it started",
            crate::data::bytes_read(),
        ),
    ] {
        let g: Gauge = Gauge::default();
        g.set(int(value));
        registry.register(name, help, g);
    }
}

fn nodes(registry: &mut Registry, fleet: &FleetSnapshot) {
    nodes_by_kind(registry, fleet);
    let (cells, speed, requeued) = (
        IntFamily::default(),
        FloatFamily::default(),
        IntFamily::default(),
    );
    let (clock, max_clock, temperature, throttled) = (
        IntFamily::default(),
        IntFamily::default(),
        IntFamily::default(),
        IntFamily::default(),
    );
    for n in &fleet.nodes {
        let node = label(&[("node", &n.name)]);
        cells.get_or_create(&node).set(int(n.cells));
        speed.get_or_create(&node).set(n.evals_per_second);
        requeued.get_or_create(&node).set(int(n.requeued));
        for d in &n.devices {
            let device = label(&[("node", &n.name), ("device", &d.device)]);
            clock.get_or_create(&device).set(i64::from(d.sm_clock_mhz));
            max_clock
                .get_or_create(&device)
                .set(i64::from(d.max_sm_clock_mhz));
            temperature
                .get_or_create(&device)
                .set(i64::from(d.temperature_c));
            throttled.get_or_create(&device).set(i64::from(d.throttled));
        }
    }
    registry.register("node_cells", "Cells each node made final", cells);
    registry.register(
        "node_evaluations_per_second",
        "Evaluations per second of scorer time, per node",
        speed,
    );
    registry.register(
        "node_requeued_units",
        "Units taken back from each node",
        requeued,
    );
    registry.register("gpu_sm_clock_mhz", "SM clock now, per device (NVML)", clock);
    registry.register(
        "gpu_max_sm_clock_mhz",
        "Maximum SM clock, per device (NVML)",
        max_clock,
    );
    registry.register(
        "gpu_temperature_celsius",
        "Temperature, per device (NVML)",
        temperature,
    );
    registry.register(
        "gpu_throttled",
        "Whether the device reports a thermal or power slowdown (NVML)",
        throttled,
    );
}
