use std::collections::HashMap;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::{SupervisorState, nodes_line};
use crate::actors::messages::{Lease, LeaseRequest, SweepContext, UnitReport};
use crate::actors::supervisor::SupervisorTiming;
use crate::actors::supervisor::parked::ParkedLeases;
use crate::actors::wire::{EncodedOnce, Wire};
use crate::data::Shard;
use crate::engine::ExecModel;
use crate::metrics::Metrics;
use crate::params::{Grid, SetPlace};
use crate::progress::ProgressFeed;
use crate::status::StatusLog;
use crate::strategy::DataKind;
use crate::sweep::{
    Fleet, FleetRules, Ledger, SetResult, SetSpan, SweepId, UnitId, WorkUnit, WorkerId,
};

fn fleet(nodes: usize) -> Fleet {
    let t0 = Instant::now();
    let mut fleet = Fleet::new(FleetRules::default(), t0);
    for i in 0..nodes {
        let worker = WorkerId::new(format!("node-{i:04}"), "0");
        fleet.reported(&worker, 10 + i, 0, Duration::from_secs(1), t0);
    }
    fleet
}

#[test]
fn a_few_nodes_are_listed_one_by_one() {
    let line = nodes_line(&fleet(3), 1.0);
    assert_eq!(
        line,
        "node-0000:10cells/s node-0001:11cells/s node-0002:12cells/s"
    );
}

#[test]
fn a_thousand_nodes_make_one_short_summary() {
    let mut fleet = fleet(1000);
    fleet.lost("node-0999", 0, Instant::now());
    let line = nodes_line(&fleet, 1.0);
    assert!(line.len() < 200, "{} bytes: {line}", line.len());
    // Speeds 10..=1008 over the 999 nodes up: median 509, 95th percentile 958.
    assert_eq!(
        line,
        "999 up, 1 lost, 0 slow; cells/s per node p50 509, p95 958; slowest \
         node-0000:10 node-0001:11 node-0002:12"
    );
}

/// A supervisor's state over four units of two sets, holding work until `wait_for_nodes`
/// nodes have asked.
fn state(wait_for_nodes: usize) -> SupervisorState {
    state_over(wait_for_nodes, ["S"; 4])
}

/// The same, unit `u` of the shard of symbol `symbols[u]`.
fn state_over(wait_for_nodes: usize, symbols: [&str; 4]) -> SupervisorState {
    let grid = Grid::new().axis("i", 0..8_i64);
    let day = "2024-01-02".parse().unwrap();
    let units = (0..4_u32)
        .map(|u| WorkUnit {
            id: UnitId(u),
            shard: Shard::new(symbols[u as usize], day, day),
            sets: SetSpan::Run {
                first: SetPlace {
                    index: u64::from(u) * 2,
                    position: u64::from(u) * 2,
                },
                count: 2,
            },
            files_digest: None,
            streamed: false,
            chain: None,
        })
        .collect();
    let context = SweepContext {
        sweep_id: SweepId::from_digest(&[7; 8]),
        strategy: "noop".to_owned(),
        dataset: "file:///data".to_owned(),
        kind: DataKind::Ticks,
        exec: ExecModel::default(),
        grid: grid.clone(),
        record_days: false,
        record_trades: false,
        code: None,
    };
    let rules = FleetRules {
        wait_for_nodes,
        ..FleetRules::default()
    };
    SupervisorState {
        ledger: Some(Ledger::new(grid, units)),
        fleet: Fleet::new(rules, Instant::now()),
        context: EncodedOnce::new(context),
        progress: ProgressFeed::default(),
        requeued: 0,
        writer: None,
        timing: SupervisorTiming::default(),
        done: None,
        status: StatusLog::default(),
        agents: HashMap::new(),
        computed: 0,
        last_progress: Instant::now(),
        gpu_capable: false,
        parked: ParkedLeases::default(),
        arrivals: crate::progress::LatencyRecorder::default(),
        queue_delay: crate::progress::LatencyRecorder::default(),
        ping_slice: 0,
        scope: "test".to_owned(),
        shard_files: HashMap::new(),
        data_faults: HashMap::new(),
    }
}

/// `node`'s scorer asks for its first unit; the answer arrives on the receiver.
fn ask(state: &mut SupervisorState, node: &str) -> oneshot::Receiver<Wire<Option<Lease>>> {
    ask_for(state, node, false)
}

/// The same, asking for the unit after it too when `with_next`.
fn ask_for(
    state: &mut SupervisorState,
    node: &str,
    with_next: bool,
) -> oneshot::Receiver<Wire<Option<Lease>>> {
    let (tx, rx) = oneshot::channel();
    let request = LeaseRequest {
        reads: None,
        worker: WorkerId::new(node, "0"),
        cached: Vec::new(),
        pending_only: false,
        holds_context: None,
        with_next,
        sent_unix_us: 0,
    };
    state.on_lease(request, (tx, Duration::from_secs(30)).into());
    rx
}

#[test]
fn the_request_that_opens_the_gate_starts_every_node_held_behind_it() {
    let mut state = state(3);
    let mut early = [ask(&mut state, "a"), ask(&mut state, "b")];
    for rx in &mut early {
        assert!(rx.try_recv().is_err(), "held until three nodes have asked");
    }
    assert!(!state.fleet.leasing());
    let mut last = ask(&mut state, "c");
    // All three hold a unit now, not at the next tick; each a different one, each with the
    // sweep's context (their first lease), which decodes as the supervisor's own.
    let mut units = Vec::new();
    for rx in early.iter_mut().chain([&mut last]) {
        let Ok(Wire(Some(lease))) = rx.try_recv() else {
            panic!("a node held behind the gate got no lease when it opened");
        };
        let context = lease.context.expect("a first lease carries the context");
        assert_eq!(*context, *state.context);
        let json = serde_json::to_vec(&context).unwrap();
        let decoded: SweepContext = serde_json::from_slice(&json).unwrap();
        assert_eq!(decoded, *state.context);
        units.push(lease.unit.id);
    }
    units.sort_unstable();
    units.dedup();
    assert_eq!(units.len(), 3);
    assert!(state.fleet.leasing());
    assert_eq!(state.parked.len(), 0);
}

#[test]
fn a_scorer_with_nothing_in_hand_gets_the_unit_after_too_of_the_same_shard() {
    let mut state = state_over(1, ["S", "T", "S", "T"]);
    let granted = |rx: &mut oneshot::Receiver<Wire<Option<Lease>>>| match rx.try_recv() {
        Ok(Wire(Some(lease))) => lease,
        other => panic!("no lease: {other:?}"),
    };
    let first = granted(&mut ask_for(&mut state, "a", true));
    let next = first
        .next
        .clone()
        .expect("a pending unit was left for the next one");
    assert_eq!((first.unit.id, next.id), (UnitId(0), UnitId(2)));
    assert!(first.queue_deep, "more units wait than are out");
    assert_eq!(next.shard, first.unit.shard, "the same shard comes next");
    let ledger = state.ledger.as_ref().unwrap();
    assert_eq!(ledger.leased_to("a"), 2, "both units are the scorer's");
    // As a JSON message: the next unit crosses the wire, and a lease without one says nothing
    // of it (a node that does not know the field reads it as before).
    let decoded: Lease = serde_json::from_slice(&serde_json::to_vec(&first).unwrap()).unwrap();
    assert_eq!(decoded.next.map(|u| u.id), Some(UnitId(2)));

    let alone = granted(&mut ask_for(&mut state, "b", false));
    assert_eq!((alone.unit.id, alone.next.is_none()), (UnitId(1), true));
    let json = serde_json::to_string(&alone).unwrap();
    assert!(!json.contains("\"next\""), "{json}");
    // The sweep's tail (fewer units wait than are out): one unit at a time, so that the
    // last one goes to a scorer with none.
    let tail = granted(&mut ask_for(&mut state, "c", true));
    assert_eq!((tail.unit.id, tail.next.is_none()), (UnitId(3), true));
    assert!(!tail.queue_deep, "the tail: the next request is not spread");
    assert_eq!(state.ledger.as_ref().unwrap().pending(), 0);
}

#[test]
fn the_unit_after_comes_only_while_more_units_wait_than_are_out() {
    let mut state = state(1);
    let mut ask = |node| match ask_for(&mut state, node, true).try_recv() {
        Ok(Wire(Some(lease))) => (lease.unit.id, lease.next.map(|u| u.id)),
        other => panic!("no lease: {other:?}"),
    };
    // 4 pending, none out: two; 1 pending, 3 out: one.
    assert_eq!(ask("a"), (UnitId(0), Some(UnitId(1))));
    assert_eq!(ask("b"), (UnitId(2), None));
}

#[test]
fn a_request_of_an_older_scorer_asks_for_one_unit() {
    let json = r#"{"worker":{"node":"a","slot":"0"},"cached":[],"pending_only":false}"#;
    let request: LeaseRequest = serde_json::from_str(json).unwrap();
    assert!(!request.with_next);
}

#[test]
fn a_report_feeds_its_busy_time_per_set_to_the_ledger_and_a_failure_does_not() {
    let mut state = state(1);
    let granted = |rx: &mut oneshot::Receiver<Wire<Option<Lease>>>| match rx.try_recv() {
        Ok(Wire(Some(lease))) => lease,
        other => panic!("no lease: {other:?}"),
    };
    let first = granted(&mut ask(&mut state, "a"));
    let second = granted(&mut ask(&mut state, "b"));
    let report = |lease: &Lease, node: &str, ok: bool, busy_ms: u64| {
        let grid = state.context.grid.clone();
        let results = lease
            .unit
            .sets
            .expand(&grid)
            .into_iter()
            .map(|(place, set)| SetResult {
                place,
                param_set: set.id(),
                outcome: Ok(Metrics::default()),
                day_returns: Vec::new(),
                trades: Vec::new(),
            })
            .collect();
        UnitReport {
            sweep_id: state.context.sweep_id.clone(),
            worker: WorkerId::new(node, "0"),
            unit: lease.unit.id,
            shard: lease.unit.shard.clone(),
            results: if ok {
                Ok(results)
            } else {
                Err(crate::sweep::CellFailure::new(
                    crate::engine::FailureKind::Data,
                    "unreadable",
                ))
            },
            evaluations: 0,
            busy_ms,
            node_fault: None,
            reads: None,
            parts_after: 0,
        }
    };
    let (failed, done) = (
        report(&second, "b", false, 9_000),
        report(&first, "a", true, 500),
    );
    let busy = |state: &SupervisorState| state.ledger.as_ref().unwrap().busy_per_set();
    assert_eq!(busy(&state), None, "nothing reported yet");
    state.on_report(failed);
    assert_eq!(busy(&state), None, "a failed unit says nothing of the pace");
    // Two sets in half a second: a quarter of a second a set, the tail's pieces sized by it.
    state.on_report(done);
    assert_eq!(busy(&state), Some(0.25));
}

#[test]
fn a_node_that_sees_other_data_gets_none_of_the_shard_and_the_last_such_node_fails_it() {
    use crate::actors::messages::NodeDataFault;
    // Units 0 and 2 read shard S, units 1 and 3 shard T; two sets each.
    let mut state = state_over(1, ["S", "T", "S", "T"]);
    let granted = |rx: &mut oneshot::Receiver<Wire<Option<Lease>>>| match rx.try_recv() {
        Ok(Wire(Some(lease))) => lease,
        other => panic!("no lease: {other:?}"),
    };
    let fault = |lease: &Lease, node: &str| UnitReport {
        sweep_id: lease.sweep_id.clone(),
        worker: WorkerId::new(node, "0"),
        unit: lease.unit.id,
        shard: lease.unit.shard.clone(),
        results: Err(crate::sweep::CellFailure::new(
            crate::engine::FailureKind::Data,
            "not as recorded",
        )),
        evaluations: 0,
        busy_ms: 1,
        node_fault: Some(NodeDataFault {
            reason: format!("{node}'s listing differs"),
            listing: Vec::new(),
        }),
        reads: None,
        parts_after: 0,
    };
    let on_a = granted(&mut ask(&mut state, "a"));
    let on_b = granted(&mut ask(&mut state, "b"));
    assert_eq!((on_a.unit.id, on_b.unit.id), (UnitId(0), UnitId(1)));
    state.on_report(fault(&on_a, "a"));
    let s = on_a.unit.shard.id();
    let ledger = state.ledger.as_ref().unwrap();
    assert!(ledger.is_barred("a", &s));
    assert_eq!(
        (ledger.failed(), ledger.recorded()),
        (0, 0),
        "no cell failed"
    );
    assert_eq!(ledger.pending(), 3, "unit 0 went back, no attempt counted");
    // `a` gets T's units only; `b` gets the unit `a` gave back.
    let next_a = granted(&mut ask(&mut state, "a"));
    assert_eq!(next_a.unit.shard.symbol(), "T");
    let next_b = granted(&mut ask(&mut state, "b"));
    assert_eq!(next_b.unit.id, UnitId(0));
    // `b` does not see S's data either: no node is left that may read it, and its four cells
    // fail at once, saying what each node saw.
    state.on_report(fault(&next_b, "b"));
    let ledger = state.ledger.as_mut().unwrap();
    assert_eq!((ledger.failed(), ledger.recorded()), (4, 4));
    let again = crate::sweep::CellFailure::new(crate::engine::FailureKind::Data, "");
    let failed = ledger.fail_shard(&s, &again);
    assert_eq!(failed, 0, "nothing of S is left open");
    assert!(
        !ledger.is_barred("b", &next_a.unit.shard.id()),
        "T is still b's to run"
    );
}

#[test]
fn a_slice_whose_state_was_too_large_to_send_counts_its_work_and_keeps_the_last_checkpoint() {
    use crate::actors::messages::SliceReport;
    use crate::sweep::{CheckpointBytes, DaySlice, SliceChain};
    let mut state = state(1);
    let day = |d: &str| DaySlice {
        last: d.parse().unwrap(),
        files_digest: String::new(),
    };
    let history = WorkUnit {
        id: UnitId(0),
        shard: Shard::new(
            "S",
            "2024-01-02".parse().unwrap(),
            "2024-01-04".parse().unwrap(),
        ),
        sets: SetSpan::Run {
            first: SetPlace {
                index: 0,
                position: 0,
            },
            count: 2,
        },
        files_digest: None,
        streamed: true,
        chain: Some(Box::new(SliceChain::new(
            vec![day("2024-01-02"), day("2024-01-03"), day("2024-01-04")],
            3,
        ))),
    };
    state.ledger = Some(Ledger::new(state.context.grid.clone(), vec![history]));
    let lease = match ask(&mut state, "a").try_recv() {
        Ok(Wire(Some(lease))) => lease,
        other => panic!("no lease: {other:?}"),
    };
    let (sweep_id, unit) = (state.context.sweep_id.clone(), lease.unit.id);
    let slice = |k: u32, checkpoint: Vec<u8>| SliceReport {
        sweep_id: sweep_id.clone(),
        worker: WorkerId::new("a", "0"),
        unit,
        slice: k,
        checkpoint: CheckpointBytes(checkpoint),
        evaluations: 1_000,
        busy_ms: 10,
        reads: None,
    };
    let kept = |state: &SupervisorState| state.ledger.as_ref().unwrap().stats().slices;
    let evaluations = |state: &SupervisorState| state.fleet.node_stats()["a"].evaluations;
    state.on_slice(slice(0, vec![1, 2, 3]));
    assert_eq!((kept(&state), evaluations(&state)), (1, 1_000));
    // The second slice's state was not sent: its work counts, the chain stays after slice 0.
    state.on_slice(slice(1, Vec::new()));
    assert_eq!((kept(&state), evaluations(&state)), (1, 2_000));
    let chain = state
        .ledger
        .as_ref()
        .unwrap()
        .unit(unit)
        .unwrap()
        .chain
        .clone();
    assert_eq!(chain.map(|c| c.done), Some(1));
}
