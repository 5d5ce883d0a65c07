//! Successive halving (`--halving`): a set with an edge planted in the data is found among a
//! thousand noise sets with under a fifth of the exhaustive evaluations; every rung is a
//! persisted sweep whose spec names the rung before and the sets the search tried; the last
//! rung's DSR counts them all; a rerun resumes every rung without computing a cell.

use std::path::Path;

use gridtest::storage::Location;
use gridtest::sweep::{Halving, HalvingReport};
use gridtest::{Grid, RunOptions, Sweep, SweepResults};
use gridtest_examples::Planted;
use gridtest_tests::{Scratch, quiet, runtime, write_planted};
use serde_json::Value;

const PLANTED: (u32, u32) = (7, 13);
const TICKS_PER_DAY: usize = 400;
const DAYS: usize = 27;
const SYMBOLS: [&str; 2] = ["AAA", "BBB"];

/// Two symbols × 27 days × 400 ticks whose returns carry the planted set's sides.
fn planted_data(scratch: &Scratch) {
    write_planted(
        scratch,
        &SYMBOLS,
        (DAYS, TICKS_PER_DAY),
        PLANTED,
        (2e-4, 1e-3),
    );
}

/// 30 × 34 = 1 020 sets, one of them planted.
fn planted_sweep(scratch: &Scratch) -> Sweep {
    Sweep::of::<Planted>()
        .grid(Grid::new().axis("a", 0..30u32).axis("b", 0..34u32))
        .data(scratch.location())
        .commission_bps(0.0)
}

fn search(sweep: &Sweep, opts: &RunOptions) -> (SweepResults, HalvingReport) {
    runtime()
        .block_on(gridtest::run_search(sweep, opts, Halving::default()))
        .expect("the search runs")
}

fn spec(results: &Path, sweep_id: &impl std::fmt::Display) -> Value {
    let path = results.join(format!("sweeps/{sweep_id}/spec.json"));
    serde_json::from_slice(&std::fs::read(&path).expect("spec persisted")).expect("spec json")
}

#[test]
fn halving_finds_the_planted_set_with_a_fraction_of_the_evaluations() {
    let (data, root) = (Scratch::new(), tempfile::tempdir().unwrap());
    planted_data(&data);
    let sweep = planted_sweep(&data);
    let opts = RunOptions {
        results: Some(Location::parse(&root.path().display().to_string()).unwrap()),
        ..quiet()
    };
    let (results, report) = search(&sweep, &opts);

    let shape: Vec<(usize, u64)> = report.rungs.iter().map(|r| (r.days, r.sets)).collect();
    assert_eq!(shape, [(1, 1020), (3, 340), (9, 114), (27, 38)]);
    let per_day = (TICKS_PER_DAY * SYMBOLS.len()) as u64;
    let expected: u64 = shape.iter().map(|&(d, s)| d as u64 * s * per_day).sum();
    assert_eq!(report.evaluations, expected);
    assert_eq!(report.exhaustive_evaluations, 1020 * DAYS as u64 * per_day);
    assert!(report.share() < 0.2, "share {}", report.share());
    assert_eq!(report.rungs.iter().map(|r| r.failed).sum::<usize>(), 0);

    let best = &results.leaderboard().rows[0];
    assert_eq!(
        best.params.to_string(),
        format!("a={} b={}", PLANTED.0, PLANTED.1),
        "the planted set wins the last rung"
    );
    assert_eq!(results.n_sets(), 38);
    let research = results.research().expect("the last rung records returns");
    assert_eq!(research.trials, 1020, "every set tried counts in the DSR");
    assert!(best.dsr.expect("dsr") > 0.95, "{best:?}");

    // Each rung persisted, naming the rung before it and the sets the search tried.
    for (i, rung) in report.rungs.iter().enumerate() {
        let spec = spec(root.path(), &rung.sweep_id);
        let search = &spec["search"];
        assert_eq!(search["rung"], i as u64);
        assert_eq!(search["trials"], 1020);
        assert_eq!(search["days"], rung.days as u64);
        let previous = i
            .checked_sub(1)
            .map(|p| report.rungs[p].sweep_id.to_string());
        assert_eq!(search["previous"].as_str().map(str::to_owned), previous);
        let kept = spec["grid"]["subset"].as_array().map(Vec::len);
        assert_eq!(kept, (i > 0).then_some(rung.sets as usize));
        let shards = spec["shards"].as_array().expect("shards");
        assert_eq!(shards.len(), SYMBOLS.len());
        for shard in shards {
            let last = rung.last_date.to_string();
            assert_eq!(
                shard["last"].as_str(),
                Some(last.as_str()),
                "a prefix of the dates"
            );
        }
    }

    // A rerun finds every rung persisted: the same sweeps, no cell computed again.
    let (again, rerun) = search(&sweep, &opts);
    let ids = |r: &HalvingReport| {
        r.rungs
            .iter()
            .map(|r| r.sweep_id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&rerun), ids(&report));
    assert_eq!(again.run_info().map(|i| i.computed), Some(0));
    assert_eq!(again.leaderboard().rows[0].param_set_id, best.param_set_id);
}
