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

#[test]
fn a_node_running_other_code_is_recorded_once_with_its_first_reason() {
    let t0 = Instant::now();
    let mut fleet = Fleet::new(FleetRules::default(), t0);
    fleet.seen("a", t0);
    fleet.seen("b", t0);
    assert!(!fleet.is_incompatible("b"));
    assert!(
        fleet.incompatible("b", "strategy version", t0),
        "the first refusal"
    );
    assert!(
        !fleet.incompatible("b", "another reason", t0),
        "a later one"
    );
    assert!(fleet.is_incompatible("b") && !fleet.is_incompatible("a"));
    assert_eq!(
        fleet.incompatible_nodes(),
        BTreeMap::from([("b".to_owned(), "strategy version".to_owned())])
    );
    let (snapshot, _) = fleet.snapshot();
    assert!(snapshot.iter().any(|n| n.name == "b" && n.incompatible));
    assert!(snapshot.iter().any(|n| n.name == "a" && !n.incompatible));
}

#[test]
fn first_leases_and_later_ones_are_merged_apart_over_the_nodes() {
    let t0 = Instant::now();
    let mut fleet = Fleet::new(FleetRules::default(), t0);
    let histogram = |millis: &[u64]| {
        let recorder = crate::progress::LatencyRecorder::default();
        for ms in millis {
            recorder.record(Duration::from_millis(*ms));
        }
        recorder.histogram()
    };
    fleet.lease_latency_of("a", histogram(&[300]), histogram(&[1, 2, 2]), t0);
    fleet.lease_latency_of("b", histogram(&[400]), histogram(&[3]), t0);
    // A later status replaces the node's histograms (cumulative over the sweep on the node).
    fleet.lease_latency_of("b", histogram(&[400]), histogram(&[3, 4]), t0);
    let (first, later) = (fleet.first_lease_latency(), fleet.lease_latency());
    assert_eq!((first.count(), later.count()), (2, 5));
    assert!(first.quantile(0.5).unwrap() >= Duration::from_millis(300));
    assert!(later.quantile(0.99).unwrap() <= Duration::from_millis(8));
}

#[test]
fn each_node_records_when_its_first_unit_started_and_its_last_ended() {
    let t0 = Instant::now();
    let mut fleet = Fleet::new(FleetRules::default(), t0);
    fleet.leased(t0);
    let ms = Duration::from_millis;
    // Node a: two scorers; its first unit ran from 100 ms to 1 100 ms, its last ended at
    // 2 300 ms. Node b: one unit, from 400 ms to 1 500 ms.
    fleet.reported(&worker("a", "0"), 4, 0, ms(1000), t0 + ms(1100));
    fleet.reported(&worker("b", "0"), 4, 0, ms(1100), t0 + ms(1500));
    fleet.reported(&worker("a", "1"), 4, 0, ms(1900), t0 + ms(2200));
    fleet.reported(&worker("a", "0"), 4, 0, ms(1000), t0 + ms(2300));
    let stats = fleet.node_stats();
    assert_eq!(
        (stats["a"].first_start, stats["a"].last_end),
        (Some(ms(100)), Some(ms(2300)))
    );
    assert_eq!(
        (stats["b"].first_start, stats["b"].last_end),
        (Some(ms(400)), Some(ms(1500)))
    );
}

#[test]
fn reads_are_counted_per_process_from_its_lowest_to_its_highest_reading() {
    use crate::data::ProcessReads;
    let mut fleet = Fleet::new(FleetRules::default(), Instant::now());
    let reading = |process, bytes| ProcessReads { process, bytes };
    // Process 1 asked at 100 and reported at 400 and 250 (reports arrive out of order);
    // process 2, two nodes of one process, at 10 → 60; process 3 is this head's own.
    for r in [
        reading(1, 100),
        reading(1, 400),
        reading(1, 250),
        reading(2, 10),
        reading(2, 60),
        reading(2, 30),
        reading(3, 1_000),
        reading(3, 5_000),
    ] {
        fleet.read(r);
    }
    assert_eq!(fleet.bytes_read(), 300 + 50 + 4_000);
    assert_eq!(fleet.bytes_read_except(3), 350);
}
