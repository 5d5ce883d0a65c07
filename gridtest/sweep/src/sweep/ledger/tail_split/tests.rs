use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use proptest::prelude::*;

use super::super::tests::{constrained, grid, ledger, ok_results, play, shard, units, w};
use super::super::{Completion, HeldAlone, Ledger, Load, UnitState, WorkUnit};

/// The load counted afresh from every unit.
fn recount(l: &Ledger) -> Load {
    let mut load = Load::default();
    for e in l.units.values() {
        load.enter(&e.state, e.unit.sets.len());
    }
    load
}

/// The units one scorer holds, found afresh from every unit.
fn held_alone(l: &Ledger) -> HeldAlone {
    let mut alone = HeldAlone::default();
    for (id, e) in &l.units {
        alone.enter(*id, &e.state);
    }
    alone
}

fn indices(u: &WorkUnit) -> Vec<u64> {
    (0..u.sets.len()).map(|i| u.sets.index_of(i)).collect()
}

#[test]
fn a_lease_takes_no_more_than_its_share_once_the_queue_runs_dry() {
    let mut l = ledger(4, 8).with_tail_splitting(true);
    let mut sizes = Vec::new();
    let mut covered = BTreeSet::new();
    for i in 0..5 {
        let u = l.lease(&w(&format!("n{i}"), "0"), &[]).unwrap();
        sizes.push(u.sets.len());
        let places = u.sets.expand(&grid(4, 8));
        assert!(
            places.iter().all(|(p, _)| p.position == p.index),
            "{places:?}"
        );
        for index in indices(&u) {
            assert!(covered.insert(index), "set {index} leased twice");
        }
    }
    // 32 sets pending, then 24 over 2 scorers (12 each ≥ 8), then 16 over 3: the third unit
    // is cut to 6 and its last 2 sets go first; 10 over 4 (3 each) takes those 2; 8 over 5
    // cuts the last unit to 2.
    assert_eq!(sizes, [8, 8, 6, 2, 2]);
    assert_eq!(l.stats().split, 2);
    assert_eq!(l.pending(), 1);
    assert_eq!(recount(&l), l.load);
    while let Some(u) = l.lease_pending(&w("n5", "0"), &[]) {
        for index in indices(&u) {
            assert!(covered.insert(index), "set {index} leased twice");
        }
    }
    assert_eq!(covered, (0..32).collect(), "the pieces cover the sweep");
}

#[test]
fn a_unit_that_streams_its_history_is_never_cut() {
    // As above, but every unit streams its shard: a piece would read the history again.
    let (n_units, per_unit) = (4, 8);
    let streamed = units(n_units, per_unit)
        .into_iter()
        .map(|u| WorkUnit {
            streamed: true,
            chain: None,
            ..u
        })
        .collect();
    let mut l = Ledger::new(grid(n_units, per_unit), streamed).with_tail_splitting(true);
    let sizes: Vec<_> = std::iter::from_fn(|| l.lease(&w("n", "0"), &[]))
        .map(|u| u.sets.len())
        .collect();
    assert_eq!(sizes, [8, 8, 8, 8]);
    assert_eq!(l.stats().split, 0);
}

#[test]
fn a_cut_run_of_a_constrained_grid_resumes_at_the_right_position() {
    // 4 × 4 product, `a < b`: positions 1, 2, 3, 6, 7, 11 are sets 0..6.
    let (g, run) = constrained(4, 6);
    let all = run.sets.expand(&g);
    let mut l = Ledger::new(g.clone(), vec![run]).with_tail_splitting(true);
    // Two scorers out (their units are elsewhere in the sweep): a third takes 2 of 6 sets.
    l.load.leased_units = 2;
    let u = l.lease(&w("n", "0"), &[]).unwrap();
    l.load.leased_units = 0;
    let rest = l.lease(&w("m", "0"), &[]).unwrap();
    assert_eq!((u.sets.len(), rest.sets.len()), (2, 4));
    let pieces: Vec<_> = [u, rest].iter().flat_map(|p| p.sets.expand(&g)).collect();
    assert_eq!(pieces, all, "the same sets at the same places");
}

#[test]
fn a_unit_is_cut_to_no_less_than_an_eighth_of_its_size() {
    let mut l = ledger(1, 64).with_tail_splitting(true);
    l.load.leased_units = 99;
    let u = l.lease(&w("n", "0"), &[]).unwrap();
    assert_eq!(
        u.sets.len(),
        8,
        "64 sets over 100 scorers, but no piece under 8"
    );
}

/// A ledger of `holders × per_holder + 1` units of 4 sets, each holder leased `per_holder` of
/// them, the scorers' time reported at `per_set` seconds a set when given: the size of the
/// last unit's lease.
fn last_piece(holders: usize, per_holder: usize, per_set: Option<f64>) -> usize {
    // Leased whole first (with cuts on, the queue's last third would be cut on the way).
    let mut l = ledger(holders * per_holder + 1, 4);
    for h in 0..holders {
        for _ in 0..per_holder {
            l.lease(&w(&format!("n{h}"), "0"), &[]).unwrap();
        }
    }
    let mut l = l.with_tail_splitting(true);
    if let Some(s) = per_set {
        l.computed(4, std::time::Duration::from_secs_f64(4.0 * s));
    }
    assert_eq!(l.load.scorers(), holders);
    assert_eq!(recount(&l), l.load);
    l.lease(&w("asking", "0"), &[]).unwrap().sets.len()
}

#[test]
fn a_piece_is_no_shorter_than_the_scorers_over_the_lease_budget() {
    // 4 sets over 1 001 scorers: a share of one set.
    assert_eq!(last_piece(1_000, 1, None), 1, "no time reported yet");
    // 1 000 scorers at 2 000 leases a second: half a second of work, two sets of 0.25 s.
    assert_eq!(last_piece(1_000, 1, Some(0.25)), 2);
    // The same held by 500 scorers with a prefetched unit each: a quarter second, one set.
    assert_eq!(last_piece(500, 2, Some(0.25)), 1);
    // Sets of 0.1 s: five of them, more than the unit, which stays whole.
    assert_eq!(last_piece(1_000, 1, Some(0.1)), 4);
    // Units quicker than the busy time's millisecond are not cut at all.
    assert_eq!(last_piece(10, 1, Some(0.0)), 4);
    // A small cluster: the planned eighth decides (a unit of 4: one set).
    assert_eq!(last_piece(3, 1, Some(0.25)), 1);
}

/// Scorers that each take a unit when free and spend `speeds[s]` time steps per set on it:
/// the time the last one ends.
fn makespan(mut l: Ledger, speeds: &[u64]) -> u64 {
    let mut free: BinaryHeap<Reverse<(u64, usize)>> =
        (0..speeds.len()).map(|s| Reverse((0, s))).collect();
    let mut holding: Vec<Option<WorkUnit>> = vec![None; speeds.len()];
    let mut end = 0;
    while let Some(Reverse((now, s))) = free.pop() {
        if let Some(u) = holding[s].take() {
            l.report(Some(u.id), &u.shard, ok_results(&u, 1));
            end = end.max(now);
        }
        if let Some(u) = l.lease_pending(&w(&format!("n{s}"), "0"), &[]) {
            free.push(Reverse((now + u.sets.len() as u64 * speeds[s], s)));
            holding[s] = Some(u);
        }
    }
    assert!(l.is_finished());
    end
}

#[test]
fn cutting_the_last_units_ends_the_sweep_within_a_set_of_the_ideal() {
    // 10 units of 8 sets on 3 scorers: 80 steps of work, 26.7 each at best.
    let whole = makespan(ledger(10, 8), &[1; 3]);
    let cut = makespan(ledger(10, 8).with_tail_splitting(true), &[1; 3]);
    assert_eq!(
        whole, 32,
        "whole units: one scorer does a fourth unit while two wait"
    );
    assert!(
        cut <= 28,
        "cut: {cut} steps (ideal 26.7, a set is one step)"
    );
    // 100 scorers of four speeds (2 to 5 steps a set), 10 units of 4 sets each: they drift
    // out of step, and without cuts wait for the last whole units.
    let speeds: Vec<u64> = (0..100).map(|s| 2 + s % 4).collect();
    let ideal = 4_000.0 / speeds.iter().map(|s| 1.0 / *s as f64).sum::<f64>();
    let whole = makespan(ledger(1_000, 4), &speeds) as f64;
    let cut = makespan(ledger(1_000, 4).with_tail_splitting(true), &speeds) as f64;
    assert!(
        cut - ideal < 5.0 && whole - ideal > 2.0 * (cut - ideal),
        "ideal {ideal:.1}, whole units {whole}, cut {cut}"
    );
}

#[test]
fn nothing_is_cut_when_splitting_is_off_or_a_cell_is_closed() {
    let mut off = ledger(2, 8);
    off.load.leased_units = 10;
    assert_eq!(off.lease(&w("n", "0"), &[]).unwrap().sets.len(), 8);
    let mut l = ledger(2, 8).with_tail_splitting(true);
    // A late result for one cell of unit 0 (an earlier incarnation's lease).
    let mut late = ok_results(&units(2, 8)[0], 1);
    late.truncate(1);
    l.report(None, &shard(), late);
    l.load.leased_units = 10;
    assert_eq!(
        l.lease(&w("n", "0"), &[]).unwrap().sets.len(),
        8,
        "kept whole"
    );
    assert_eq!(l.lease(&w("n", "0"), &[]).unwrap().sets.len(), 1, "cut");
    assert_eq!(recount(&l).pending_sets, 7, "unit 1's other 7 sets wait");
}

proptest! {
    /// With cuts, whatever the order, duplication and loss of reports, every cell ends with
    /// exactly one outcome, and the counts a lease reads agree with the units.
    #[test]
    fn cuts_lose_and_double_no_cell(
        n_units in 1usize..10,
        per_unit in 1usize..20,
        script in proptest::collection::vec((0u8..4, 0usize..12), 0..80),
    ) {
        let mut l = ledger(n_units, per_unit).with_tail_splitting(true);
        let (mut leased, mut tag) = (Vec::new(), 0);
        for step in script {
            play(&mut l, step, &mut leased, &mut tag);
            prop_assert_eq!(&recount(&l), &l.load);
            prop_assert_eq!(&held_alone(&l), &l.held_alone);
        }
        for n in 0..3 {
            l.release_node(&format!("n{n}"));
        }
        while let Some(u) = l.lease(&w("drain", "0"), &[]) {
            prop_assert!(l.report(Some(u.id), &u.shard, ok_results(&u, 2)) != Completion::Duplicate);
        }
        prop_assert!(l.is_finished());
        prop_assert_eq!(l.recorded(), n_units * per_unit);
        prop_assert_eq!(&recount(&l), &l.load);
        prop_assert!(l.units.values().all(|e| e.state == UnitState::Done));
        let journal = l.take_journal();
        let distinct: BTreeSet<_> = journal.iter().map(|c| c.key.clone()).collect();
        prop_assert_eq!(distinct.len(), journal.len(), "no cell final twice");
    }
}
