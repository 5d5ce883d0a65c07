//! Sweep validation: every problem of a sweep reported at once, before anything runs.

use gridtest::sweep::SweepError;
use gridtest::{Grid, Sweep};
use gridtest_examples::SmaCrossover;
use gridtest_tests::{quiet, run_with, w1_smoke};

fn problems(sweep: &Sweep) -> String {
    match sweep.validate() {
        Err(e @ SweepError::Invalid { .. }) => e.to_string(),
        other => panic!("expected InvalidSweep, got {other:?}"),
    }
}

#[test]
fn an_empty_grid_is_a_clear_error() {
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(
            Grid::new()
                .axis("fast", [50])
                .axis("slow", [20])
                .constrain("fast < slow"),
        )
        .data("/nowhere");
    let text = problems(&sweep);
    assert!(
        text.contains("sweep of `sma_crossover` is invalid"),
        "{text}"
    );
    assert!(
        text.contains("the grid is empty: the constraints exclude all 1 combinations"),
        "{text}"
    );
}

#[test]
fn unknown_axes_type_mismatches_and_settings_are_all_reported() {
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(Grid::new().axis("fast", [5.5]).axis("slwo", [20]))
        .commission_bps(-1.0)
        .symbols(Vec::<String>::new());
    let text = problems(&sweep);
    for needle in [
        "axis `fast` value 5.5 (float) does not fit parameter `fast: usize`",
        "axis `slwo` is not a parameter of the strategy (its parameters: fast, slow)",
        "parameter `slow: usize` has no axis in the grid",
        "commission_bps = -1 is out of range",
        "no dataset",
        "the symbol list is empty",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in\n{text}");
    }
}

#[test]
fn unknown_symbols_and_missing_datasets_name_themselves() {
    let (data, _) = w1_smoke();
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(Grid::new().axis("fast", [5]).axis("slow", [20]))
        .data(data.display().to_string())
        .symbols(["S000", "NOPE"]);
    let err = run_with(&sweep, &quiet()).unwrap_err().to_string();
    assert!(err.contains("symbol `NOPE` is not in"), "{err}");
    assert!(err.contains("S000, S001"), "lists what is there: {err}");

    let empty = tempfile::tempdir().unwrap();
    let sweep = sweep
        .data(empty.path().display().to_string())
        .symbols(["S000"]);
    let err = run_with(&sweep, &quiet()).unwrap_err().to_string();
    assert!(
        err.contains("no `symbol=…/date=…` partitions under"),
        "{err}"
    );
    assert!(!err.contains("ingest"), "nothing to ingest: {err}");

    // CSV files where the data should be: the error says how to write them as a dataset.
    std::fs::write(empty.path().join("ticks.csv"), "ts,price\n1,100.0\n").unwrap();
    let err = run_with(&sweep, &quiet()).unwrap_err().to_string();
    assert!(
        err.contains("it holds 1 CSV file") && err.contains("ticks.csv"),
        "{err}"
    );
    assert!(
        err.contains("gridtest ingest FILES --output DATASET"),
        "{err}"
    );
}

/// `random` search: a seeded sample of exactly N sets, the same on every node (it travels with
/// the grid), swept like any grid, each set a trial of the DSR.
#[test]
fn a_random_sample_of_the_grid_is_exact_seeded_and_swept() {
    let full = gridtest_tests::w1_grid();
    let sample = full.clone().sample(100, 3);
    assert_eq!(sample.len(), 100);
    let sets: Vec<gridtest::ParamSet> = sample.iter().collect();
    let all: std::collections::HashSet<gridtest::ParamSetId> =
        full.iter().map(|s| s.id()).collect();
    assert!(
        sets.iter().all(|s| all.contains(&s.id())),
        "a subset of the grid"
    );
    assert_eq!(
        sets,
        full.clone().sample(100, 3).iter().collect::<Vec<_>>(),
        "seeded"
    );
    assert_ne!(sets, full.clone().sample(100, 4).iter().collect::<Vec<_>>());
    assert_eq!(
        full.clone().sample(5000, 3).len(),
        955,
        "all of a smaller grid"
    );
    // The sample travels with the grid: what a worker decodes expands to the same sets.
    let json = serde_json::to_string(&sample).unwrap();
    let decoded: gridtest::Grid = serde_json::from_str(&json).unwrap();
    assert_eq!(decoded.iter().collect::<Vec<_>>(), sets);
    assert!(
        !serde_json::to_string(&full).unwrap().contains("sample"),
        "ids of full grids unchanged"
    );

    let (data, _) = gridtest_tests::w1_smoke();
    let sweep = gridtest::Sweep::of::<gridtest_examples::SmaCrossover>()
        .grid(sample)
        .data(data.display().to_string());
    let results = gridtest_tests::run(&sweep);
    assert_eq!(results.n_sets(), 100);
    assert_eq!(results.recorded(), 200);
    assert_eq!(results.research().map(|r| r.trials), Some(100));
}

/// A choice parameter as an enum.
#[derive(gridtest::Choice, Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Long,
    Short,
    MeanRevert,
}

#[derive(gridtest::Params, Clone, Debug)]
struct ChoiceParams {
    side: Side,
    period: u64,
    threshold: f64,
}

#[test]
fn enum_choices_u64_axes_and_float_ranges_make_a_grid() {
    use gridtest::Params;
    use gridtest::params::float_range;
    let grid = Grid::new()
        .axis("side", Side::ALL)
        .axis("period", [7u64, 14])
        .axis("threshold", float_range(0.5, 1.5, 0.25));
    grid.check(ChoiceParams::schema()).expect("a valid grid");
    assert_eq!(grid.len(), 3 * 2 * 5);
    let sets: Vec<ChoiceParams> = grid
        .iter()
        .map(|s| ChoiceParams::from_param_set(&s).expect("every set reads back"))
        .collect();
    assert_eq!(sets[0].side, Side::Long);
    assert_eq!((sets[0].period, sets[0].threshold), (7, 0.5));
    let last = sets.last().unwrap();
    assert_eq!(
        (last.side, last.period, last.threshold),
        (Side::MeanRevert, 14, 1.5)
    );
    assert_eq!(
        ChoiceParams::schema()[0].choices,
        ["long", "short", "mean_revert"]
    );
    assert_eq!(Side::MeanRevert.choice_name(), "mean_revert");
}

#[test]
fn a_choice_that_is_not_a_variant_is_refused_with_the_choices() {
    use gridtest::Params;
    use gridtest::params::{GridError, GridProblem};
    let grid = Grid::new()
        .axis("side", ["long", "shrot"])
        .axis("period", [7u64])
        .axis("threshold", [1.0]);
    let GridError(problems) = grid.check(ChoiceParams::schema()).expect_err("a typo");
    assert_eq!(problems.len(), 1, "{problems:?}");
    match &problems[0] {
        GridProblem::NotAChoice {
            axis,
            value,
            choices,
        } => {
            assert_eq!((axis.as_str(), value.as_str()), ("side", "shrot"));
            assert_eq!(choices, "long, short, mean_revert");
        }
        other => panic!("expected NotAChoice, got {other:?}"),
    }
}

#[test]
fn a_grid_past_the_planning_limit_is_refused_at_once() {
    // 200 000 × 100 000 = 2·10¹⁰ combinations, both axes constrained.
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(
            Grid::new()
                .axis("fast", 1..=200_000_i64)
                .axis("slow", 1..=100_000_i64)
                .constrain("fast < slow"),
        )
        .data(w1_smoke().0.display().to_string());
    let started = std::time::Instant::now();
    let text = problems(&sweep);
    assert!(
        text.contains(
            "the grid has 20000000000 combinations (fast 200000 × slow 100000), more than the \
             4294967296 a sweep plans"
        ),
        "{text}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let err = run_with(&sweep, &quiet()).unwrap_err();
    assert!(matches!(err, gridtest::Error::InvalidSweep { .. }), "{err}");
}

#[test]
fn a_signal_while_a_large_grid_is_planned_stops_it_at_once() {
    // 4·10⁸ combinations to count over the constrained plane (seconds), under the limit.
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(
            Grid::new()
                .axis("fast", 1..=20_000_i64)
                .axis("slow", 1..=20_000_i64)
                .constrain("fast < slow"),
        )
        .data(w1_smoke().0.display().to_string());
    let opts = quiet();
    let cancel = opts.cancel.clone();
    let started = std::time::Instant::now();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        cancel.cancel();
    });
    let err = run_with(&sweep, &opts).unwrap_err();
    stopper.join().unwrap();
    assert!(matches!(err, gridtest::Error::InterruptedPlanning), "{err}");
    assert_eq!(err.exit_code(), gridtest::exit::INTERRUPTED);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "stopped after {:?}",
        started.elapsed()
    );
}
