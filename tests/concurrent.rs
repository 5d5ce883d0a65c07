//! Several sweeps run at once in one process (a service, a notebook kernel, a test binary)
//! keep apart: each one's scorers work for its own supervisor, no supervisor counts another
//! run's node as its own, and a run that ends early takes nothing from the others.

use std::path::Path;

use gridtest::status::{StatusEvent, StatusLog};
use gridtest::{Grid, RunOptions, Sweep, SweepResults};
use gridtest_examples::{Momentum, SmaCrossover};
use gridtest_tests::{quiet, run_with, runtime, w1_grid, w1_smoke};

fn options(status: &Path) -> RunOptions {
    RunOptions {
        status: StatusLog::to_file(status, "local"),
        // Small units, so that every run leases many and the runs interleave.
        unit_evals: 200_000,
        ..quiet()
    }
}

/// The node events a run's status file holds: any loss or return of a node.
fn node_events(status: &Path) -> Vec<StatusEvent> {
    gridtest::status::read(status)
        .unwrap_or_else(|e| panic!("{}: {e}", status.display()))
        .into_iter()
        .map(|r| r.event)
        .filter(|e| {
            matches!(
                e,
                StatusEvent::NodeLost { .. } | StatusEvent::NodeBack { .. }
            )
        })
        .collect()
}

fn assert_alone(name: &str, got: &SweepResults, alone: &SweepResults, status: &Path) {
    assert_eq!(got.recorded(), alone.recorded(), "{name}: cells recorded");
    assert_eq!(
        got.cells().unwrap(),
        alone.cells().unwrap(),
        "{name}: cells differ from the same sweep run alone"
    );
    let info = got.run_info().expect("run info");
    assert_eq!(
        info.nodes.keys().collect::<Vec<_>>(),
        ["local"],
        "{name}: nodes"
    );
    assert_eq!(info.ledger.requeued, 0, "{name}: units requeued");
    assert_eq!(node_events(status), [], "{name}: node events");
}

#[test]
fn sweeps_run_at_once_in_one_process_keep_apart() {
    let (data, _) = w1_smoke();
    let data = data.display().to_string();
    let long = Sweep::of::<SmaCrossover>().grid(w1_grid()).data(&data);
    let short = Sweep::of::<SmaCrossover>()
        .grid(
            Grid::new()
                .axis("fast", [5_i64, 10])
                .axis("slow", [50_i64, 100]),
        )
        .data(&data);
    let other = Sweep::of::<Momentum>()
        .grid(
            Grid::new()
                .axis("window", [10_i64, 50, 200])
                .axis("threshold_bps", [0.0, 5.0]),
        )
        .data(&data);
    let dir = tempfile::tempdir().unwrap();
    let status = [0, 1, 2].map(|i| dir.path().join(format!("status-{i}.jsonl")));
    let [o_long, o_short, o_other] = [0, 1, 2].map(|i| options(&status[i]));

    let (long_got, short_got, other_got) = runtime().block_on(async {
        tokio::join!(
            gridtest::run_sweep(&long, &o_long),
            gridtest::run_sweep(&short, &o_short),
            gridtest::run_sweep(&other, &o_other),
        )
    });
    let alone = |sweep: &Sweep| run_with(sweep, &quiet()).expect("sweep runs alone");
    assert_alone("long", &long_got.unwrap(), &alone(&long), &status[0]);
    assert_alone("short", &short_got.unwrap(), &alone(&short), &status[1]);
    assert_alone("other", &other_got.unwrap(), &alone(&other), &status[2]);
}
