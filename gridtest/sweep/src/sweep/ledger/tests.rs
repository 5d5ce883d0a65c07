use proptest::prelude::*;

use super::*;
use crate::data::Shard;
use crate::engine::CellFailure;
use crate::metrics::Metrics;
use crate::params::{Grid, SetPlace};
use crate::sweep::FailureKind;

pub(super) fn shard() -> Shard {
    Shard::new(
        "S",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    )
}

/// A one-axis grid with a set per cell of `n_units` units of `per_unit` sets.
pub(super) fn grid(n_units: usize, per_unit: usize) -> Grid {
    Grid::new().axis("i", 0..(n_units * per_unit) as i64)
}

pub(super) fn units(n_units: usize, per_unit: usize) -> Vec<WorkUnit> {
    (0..n_units)
        .map(|u| {
            let first = (u * per_unit) as u64;
            WorkUnit {
                id: UnitId(u as u32),
                shard: shard(),
                sets: SetSpan::Run {
                    first: SetPlace {
                        index: first,
                        position: first,
                    },
                    count: per_unit as u32,
                },
                files_digest: None,
                streamed: false,
                chain: None,
            }
        })
        .collect()
}

/// Unit 0: a run of `count` sets of a grid whose constraint `a < b` accepts its first set at
/// position 1 (an `n × n` product of `1..=n` for each axis).
pub(super) fn constrained(n: i64, count: u32) -> (Grid, WorkUnit) {
    let g = Grid::new()
        .axis("a", 1..=n)
        .axis("b", 1..=n)
        .constrain("a < b");
    let first = SetPlace {
        index: 0,
        position: 1,
    };
    let run = WorkUnit {
        id: UnitId(0),
        shard: shard(),
        sets: SetSpan::Run { first, count },
        files_digest: None,
        streamed: false,
        chain: None,
    };
    (g, run)
}

pub(super) fn ledger(n_units: usize, per_unit: usize) -> Ledger {
    Ledger::new(grid(n_units, per_unit), units(n_units, per_unit))
}

fn metrics(trades: u64) -> Metrics {
    Metrics {
        n_ticks: 10,
        trades,
        total_return: 0.0,
        max_drawdown: 0.0,
        sharpe: 0.0,
        sortino: 0.0,
        round_trips: 0,
        win_rate: 0.0,
        profit_factor: 0.0,
        exposure: 0.0,
        open_at_end: false,
    }
}

/// Every cell of `u` with metrics tagged `tag` (in `trades`); the grid is wide enough for any
/// unit of these tests.
pub(super) fn ok_results(u: &WorkUnit, tag: u64) -> Vec<SetResult> {
    u.sets
        .expand(&grid(64, 64))
        .into_iter()
        .map(|(place, set)| SetResult {
            place,
            param_set: set.id(),
            outcome: Ok(metrics(tag)),
            day_returns: Vec::new(),
            trades: Vec::new(),
        })
        .collect()
}

pub(super) fn w(node: &str, slot: &str) -> WorkerId {
    WorkerId::new(node, slot)
}

#[test]
fn a_lost_worker_gives_its_units_back_and_late_results_count_once() {
    let mut l = ledger(3, 2).with_speculation(false);
    let a = l.lease(&w("n1", "0"), &[]).unwrap();
    let b = l.lease(&w("n2", "0"), &[]).unwrap();
    assert_eq!(l.release_node("n1"), vec![a.id]);
    assert_eq!(
        l.lease(&w("n3", "0"), &[]).unwrap().id,
        a.id,
        "requeued at the front"
    );
    assert_eq!(l.leases(a.id), 2);
    assert_eq!(
        l.report(Some(b.id), &b.shard, ok_results(&b, 1)),
        Completion::Accepted { new: 2, retried: 0 }
    );
    assert_eq!(
        l.report(Some(b.id), &b.shard, ok_results(&b, 9)),
        Completion::Duplicate
    );
    // The lost node's late result for `a` is accepted (first wins); n3's copy is a duplicate.
    assert!(matches!(
        l.report(Some(a.id), &a.shard, ok_results(&a, 2)),
        Completion::Accepted { .. }
    ));
    assert_eq!(
        l.report(Some(a.id), &a.shard, ok_results(&a, 3)),
        Completion::Duplicate
    );
    assert_eq!(l.recorded(), 4);
    assert_eq!(l.stats().duplicate_cells, 4);
    assert!(!l.is_finished());
}

#[test]
fn results_are_matched_by_cell_even_from_an_unknown_unit() {
    let mut l = ledger(2, 3);
    let all = units(2, 3);
    // A result computed for another incarnation's unit 77 covering unit 1's cells.
    assert!(matches!(
        l.report(Some(UnitId(77)), &shard(), ok_results(&all[1], 5)),
        Completion::Accepted { new: 3, .. }
    ));
    assert_eq!(l.units_left(), 1, "unit 1 is complete without being leased");
    assert_eq!(l.lease(&w("n", "0"), &[]).unwrap().id, UnitId(0));
}

#[test]
fn failing_cells_are_retried_then_final_with_their_attempts() {
    let mut l = ledger(1, 3).with_max_attempts(3);
    let u = l.lease(&w("n", "0"), &[]).unwrap();
    let boom = CellFailure::new(FailureKind::Panic, "boom");
    let mut results = ok_results(&u, 1);
    results[1].outcome = Err(boom.clone());
    assert_eq!(
        l.report(Some(u.id), &u.shard, results),
        Completion::Accepted { new: 2, retried: 1 }
    );
    for attempt in 2..=3 {
        let retry = l.lease(&w("n", "0"), &[]).unwrap();
        assert_eq!(retry.sets.len(), 1, "only the failed cell is retried");
        assert_eq!(retry.sets.index_of(0), 1, "the failed set");
        let mut results = ok_results(&retry, 0);
        results[0].outcome = Err(boom.clone());
        let c = l.report(Some(retry.id), &retry.shard, results);
        if attempt < 3 {
            assert_eq!(c, Completion::Accepted { new: 0, retried: 1 });
        } else {
            assert_eq!(c, Completion::Accepted { new: 1, retried: 0 });
        }
    }
    assert!(l.is_finished());
    assert_eq!(l.failed(), 1);
    let journal = l.take_journal();
    assert_eq!(journal.len(), 3, "each cell final once");
    let f = journal
        .iter()
        .find_map(|c| c.outcome.as_ref().err())
        .unwrap();
    assert_eq!(f.attempts, 3);
    assert_eq!(l.stats().retried_cells, 2);
}

#[test]
fn a_failed_unit_fails_each_of_its_cells() {
    let mut l = ledger(1, 3).with_max_attempts(1);
    let u = l.lease(&w("a", "0"), &[]).unwrap();
    l.fail_unit(u.id, &CellFailure::new(FailureKind::Data, "bad file"));
    assert!(l.is_finished());
    assert_eq!(l.failed(), 3);
    let expected: Vec<_> = grid(1, 3).iter().map(|s| s.id()).collect();
    let failed: Vec<_> = l.take_journal().iter().map(|c| c.key.param_set).collect();
    assert_eq!(failed, expected, "named by the grid's sets");
}

#[test]
fn leases_prefer_cached_shards_then_speculate_on_stragglers() {
    let other = Shard::new(
        "T",
        "2024-01-02".parse().unwrap(),
        "2024-01-02".parse().unwrap(),
    );
    let mut us = units(2, 1);
    us[1].shard = other.clone();
    let mut l = Ledger::new(grid(2, 1), us);
    let first = l.lease(&w("n1", "0"), &[other.id()]).unwrap();
    assert_eq!(first.shard, other, "the node holds T");
    let second = l.lease(&w("n2", "0"), &[]).unwrap();
    assert_eq!(second.id, UnitId(0));
    // Queue empty: n3 gets a speculative copy of the oldest running unit.
    let spec = l.lease(&w("n3", "0"), &[]).unwrap();
    assert_eq!(spec.id, first.id);
    assert_eq!(l.stats().speculative, 1);
    // n1 dies: the unit stays leased (n3 still holds it), nothing is requeued.
    assert!(l.release_node("n1").is_empty());
    assert_eq!(l.leased_to("n3"), 1);
    // n3 holds it alone now, and may be copied again; n2 never gets a copy of its own unit.
    let again = l.lease(&w("n2", "0"), &[]).unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(l.stats().speculative, 2);
}

#[test]
fn resuming_counts_done_cells_and_leases_the_rest() {
    let all = units(2, 2);
    let mut l = Ledger::new(grid(2, 2), vec![all[1].clone()]).with_resumed(2, 1);
    assert_eq!((l.expected(), l.recorded(), l.failed()), (4, 2, 1));
    let u = l.lease(&w("n", "0"), &[]).unwrap();
    assert_eq!(u.id, all[1].id);
    // A result for a resumed cell is not this run's to take.
    l.report(None, &shard(), ok_results(&all[0], 9));
    assert_eq!(l.stats().foreign_cells, 2);
    l.report(Some(u.id), &u.shard, ok_results(&u, 2));
    assert!(l.is_finished());
    assert_eq!(l.take_journal().len(), 2);
}

#[test]
fn a_retry_of_a_constrained_run_names_the_failed_set() {
    // 3 × 3 product, `a < b` keeps positions 1, 2 and 5 as sets 0, 1 and 2.
    let (g, run) = constrained(3, 3);
    let sets = run.sets.expand(&g);
    let places: Vec<u64> = sets.iter().map(|(p, _)| p.position).collect();
    assert_eq!(places, [1, 2, 5]);
    let mut l = Ledger::new(g.clone(), vec![run]);
    let u = l.lease(&w("n", "0"), &[]).unwrap();
    let mut results: Vec<SetResult> = sets
        .iter()
        .map(|(place, set)| SetResult {
            place: *place,
            param_set: set.id(),
            outcome: Ok(metrics(1)),
            day_returns: Vec::new(),
            trades: Vec::new(),
        })
        .collect();
    results[2].outcome = Err(CellFailure::new(FailureKind::Panic, "boom"));
    l.report(Some(u.id), &u.shard, results);
    let retry = l.lease(&w("n", "0"), &[]).unwrap();
    let again = retry.sets.expand(&g);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].1, sets[2].1, "the same set, found by its position");
}

/// One step of a random script over three workers `n0..n2`: `op` 0 leases a unit to one, 1
/// loses one, 2 and 3 report one of the units leased so far again (every cell tagged with the
/// next `tag`). Returns the reported unit and what the ledger did with it.
pub(super) fn play(
    l: &mut Ledger,
    (op, pick): (u8, usize),
    leased: &mut Vec<WorkUnit>,
    tag: &mut u64,
) -> Option<(UnitId, Completion)> {
    let worker = format!("n{}", pick % 3);
    match op {
        0 => {
            leased.extend(l.lease(&w(&worker, "0"), &[]));
            None
        }
        1 => {
            l.release_node(&worker);
            None
        }
        _ if leased.is_empty() => None,
        _ => {
            let u = leased[pick % leased.len()].clone();
            *tag += 1;
            Some((u.id, l.report(Some(u.id), &u.shard, ok_results(&u, *tag))))
        }
    }
}

proptest! {
    /// Whatever the order, duplication and loss of reports, every cell ends with exactly one
    /// outcome: the first one reported for it.
    #[test]
    fn exactly_one_final_state_per_cell(
        n_units in 1usize..12,
        per_unit in 1usize..5,
        script in proptest::collection::vec((0u8..4, 0usize..12), 0..80),
    ) {
        let mut l = ledger(n_units, per_unit);
        let mut first: BTreeMap<UnitId, u64> = BTreeMap::new();
        let mut leased: Vec<WorkUnit> = Vec::new();
        let mut tag = 0u64;
        for step in script {
            if let Some((id, completion)) = play(&mut l, step, &mut leased, &mut tag)
                && completion != Completion::Duplicate
            {
                first.entry(id).or_insert(tag);
            }
        }
        // The other workers are lost; a fresh one takes whatever is left.
        for n in 0..3 {
            l.release_node(&format!("n{n}"));
        }
        while let Some(u) = l.lease(&w("drain", "0"), &[]) {
            tag += 1;
            if l.report(Some(u.id), &u.shard, ok_results(&u, tag)) != Completion::Duplicate {
                first.entry(u.id).or_insert(tag);
            }
        }
        for u in leased {
            prop_assert_eq!(l.report(Some(u.id), &u.shard, ok_results(&u, 0)), Completion::Duplicate);
        }
        prop_assert!(l.is_finished());
        prop_assert_eq!(l.recorded(), n_units * per_unit);
        let journal = l.take_journal();
        let distinct: std::collections::BTreeSet<_> = journal.iter().map(|c| c.key.clone()).collect();
        prop_assert_eq!(distinct.len(), journal.len(), "no cell final twice");
        let by_tag: BTreeMap<u64, usize> = journal.iter().fold(BTreeMap::new(), |mut m, c| {
            *m.entry(c.outcome.as_ref().unwrap().trades).or_default() += 1;
            m
        });
        for (id, t) in first {
            prop_assert_eq!(by_tag.get(&t).copied(), Some(per_unit), "unit {} kept its first result", id);
        }
    }
}

#[test]
fn a_pending_only_lease_never_copies_a_running_unit() {
    let mut l = ledger(2, 2);
    let a = l.lease_pending(&w("gpu", "0"), &[]).unwrap();
    let b = l.lease_pending(&w("gpu", "0"), &[]).unwrap();
    assert_ne!(a.id, b.id, "one worker may hold several units");
    assert_eq!(
        l.lease_pending(&w("gpu", "0"), &[]),
        None,
        "nothing pending"
    );
    let copy = l.lease(&w("cpu", "0"), &[]).expect("a speculative copy");
    assert!(copy.id == a.id || copy.id == b.id);
    assert_eq!(l.stats().speculative, 1);
}

#[test]
fn once_a_unit_has_finished_only_a_unit_running_late_is_copied() {
    use std::time::Duration;
    let clock = std::sync::Arc::new(crate::sweep::ManualClock::default());
    let mut l = ledger(3, 2).with_clock(std::sync::Arc::<crate::sweep::ManualClock>::clone(&clock));
    let a = l.lease(&w("n1", "0"), &[]).unwrap();
    clock.advance(Duration::from_millis(60));
    // Unit a took 60 ms: a unit of two sets is late once held 1.5 times that (90 ms).
    l.report(Some(a.id), &a.shard, ok_results(&a, 1));
    let b = l.lease(&w("n1", "0"), &[]).unwrap();
    clock.advance(Duration::from_millis(5));
    let c = l.lease(&w("n2", "0"), &[]).unwrap();
    clock.advance(Duration::from_millis(84));
    assert_eq!(
        l.lease(&w("n3", "0"), &[]),
        None,
        "b (89 ms) and c (84 ms) run at the usual pace"
    );
    assert_eq!(l.stats().speculative, 0);
    clock.advance(Duration::from_millis(2));
    let copy = l.lease(&w("n3", "0"), &[]).expect("b is late now (91 ms)");
    assert_eq!(copy.id, b.id, "the longest held first");
    assert_eq!(
        l.lease(&w("n3", "0"), &[]),
        None,
        "c (86 ms) is not late yet"
    );
    clock.advance(Duration::from_millis(5));
    assert_eq!(l.lease(&w("n3", "0"), &[]).map(|u| u.id), Some(c.id));
    assert_eq!(l.stats().speculative, 2);
}

/// A ledger of one unit of 4 sets over a history of three one-day slices.
fn chained_ledger() -> Ledger {
    use crate::sweep::{DaySlice, SliceChain};
    let slice = |d: &str| DaySlice {
        last: d.parse().unwrap(),
        files_digest: String::new(),
    };
    let mut chained = units(1, 4);
    chained[0].chain = Some(Box::new(SliceChain::new(
        vec![
            slice("2024-01-02"),
            slice("2024-01-03"),
            slice("2024-01-04"),
        ],
        3,
    )));
    chained[0].streamed = true;
    Ledger::new(grid(1, 4), chained).with_speculation(false)
}

fn state(b: u8) -> crate::sweep::CheckpointBytes {
    crate::sweep::CheckpointBytes(vec![b; 3])
}

#[test]
fn a_chained_unit_leased_again_resumes_after_its_last_slice_done() {
    let mut l = chained_ledger();
    let first = l.lease(&w("n1", "0"), &[]).unwrap();
    assert_eq!(first.chain.as_ref().unwrap().done, 0);
    assert_eq!(l.slices(), (0, 3));
    assert!(l.slice_done(first.id, 0, state(1)));
    assert!(!l.slice_done(first.id, 0, state(9)), "a slice counts once");
    assert_eq!(l.slices(), (1, 3));
    assert!(!l.slice_done(UnitId(7), 0, state(1)), "no such unit");
    // n1 is lost after its first slice: the unit goes back with that slice's state.
    assert_eq!(l.release_node("n1"), vec![first.id]);
    let again = l.lease(&w("n2", "0"), &[]).unwrap();
    let chain = again.chain.as_ref().unwrap();
    assert_eq!((chain.done, chain.checkpoint.clone()), (1, Some(state(1))));
    assert_eq!((l.stats().slices, l.stats().resumed_chains), (1, 1));
    // The last slice reports cells, which end the unit; slices reported after that are late.
    l.report(Some(again.id), &again.shard, ok_results(&again, 1));
    assert!(l.is_finished());
    assert_eq!(l.slices(), (3, 3), "its last slices passed with it");
    assert!(!l.slice_done(again.id, 1, state(2)), "the unit is done");
    assert_eq!(l.slices(), (3, 3));
}

#[test]
fn the_retry_of_a_chained_units_cells_reads_the_history_by_slices_from_its_start() {
    let mut l = chained_ledger();
    let first = l.lease(&w("n1", "0"), &[]).unwrap();
    assert!(l.slice_done(first.id, 0, state(1)));
    let failure = CellFailure::new(FailureKind::Data, "a file of the second day is corrupt");
    l.fail_unit(first.id, &failure);
    let retry = l.lease(&w("n2", "0"), &[]).unwrap();
    assert_ne!(retry.id, first.id);
    assert_eq!(retry.sets.len(), 4);
    let chain = retry.chain.as_deref().expect("still read by slices");
    assert_eq!(
        (chain.done, chain.len()),
        (0, 3),
        "from the first slice: other sets"
    );
    assert!(chain.checkpoint.is_none());
    assert!(retry.streamed, "never cut at the tail");
    assert_eq!(
        l.slices(),
        (3, 6),
        "the failed unit passed, its retry's slices are ahead"
    );
}
