//! The GPU scorer plumbing without a GPU: a backend slot contributed through the provider slice
//! (as gridtest-cuda does) is run by the node agent, leases only units of strategies with device
//! code, shows in the per-GPU-scorer figures, and its cells are those of the CPU run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gridtest::actors::{BACKEND_PROVIDERS, BackendProvider, BackendSettings, UnitBackend};
use gridtest::data::ShardData;
use gridtest::engine::ExecModel;
use gridtest::registry::StrategyEntry;
use gridtest::sweep::{CellFailure, CellOutcome};
use gridtest::{Grid, ParamSet, RunOptions, Sweep, SweepResults};
use gridtest_examples::{Momentum, SmaCrossover};
use gridtest_tests::{quiet, run_with, w1_smoke};

/// A stand-in for a GPU slot: the CPU engine behind the backend interface, offered only to
/// runs that ask for a slot count of 7 (so no other test gets it).
struct StandIn;

impl UnitBackend for StandIn {
    fn slot(&self) -> String {
        "gpu9-0".to_owned()
    }

    fn supports(&self, strategy: &StrategyEntry) -> bool {
        (strategy.gpu)().is_some()
    }

    fn telemetry(&self) -> Option<gridtest::sweep::DeviceTelemetry> {
        Some(gridtest::sweep::DeviceTelemetry {
            device: "gpu9".to_owned(),
            sm_clock_mhz: 1000,
            max_sm_clock_mhz: 2000,
            temperature_c: 50,
            throttled: false,
            energy_mj: None,
        })
    }

    fn run(
        &self,
        strategy: &StrategyEntry,
        data: &ShardData,
        sets: &[ParamSet],
        exec: &ExecModel,
    ) -> Result<Vec<CellOutcome>, CellFailure> {
        Ok((strategy.run)(data, sets, exec))
    }
}

/// A slot whose device fails every chunk (as a driver or compiler error would), offered only
/// to runs that ask for a slot count of 6.
struct Broken;

impl UnitBackend for Broken {
    fn slot(&self) -> String {
        "gpu8-0".to_owned()
    }

    fn supports(&self, strategy: &StrategyEntry) -> bool {
        (strategy.gpu)().is_some()
    }

    fn run(
        &self,
        _: &StrategyEntry,
        _: &ShardData,
        _: &[ParamSet],
        _: &ExecModel,
    ) -> Result<Vec<CellOutcome>, CellFailure> {
        Err(CellFailure::new(
            gridtest::sweep::FailureKind::Crash,
            "gpu8-0: CUDA driver: CUDA_ERROR_LAUNCH_FAILED",
        ))
    }
}

/// Most parameter sets [`Batching`] got in one call.
static BATCHED_MOST: AtomicUsize = AtomicUsize::new(0);

/// A slot that wants 400 sets per call (as a GPU wants thousands), offered only to runs that
/// ask for a slot count of 5; the CPU engine behind it, recording the largest call.
struct Batching;

impl UnitBackend for Batching {
    fn slot(&self) -> String {
        "gpu7-0".to_owned()
    }

    fn supports(&self, strategy: &StrategyEntry) -> bool {
        (strategy.gpu)().is_some()
    }

    fn batch_sets(&self) -> usize {
        400
    }

    fn run(
        &self,
        strategy: &StrategyEntry,
        data: &ShardData,
        sets: &[ParamSet],
        exec: &ExecModel,
    ) -> Result<Vec<CellOutcome>, CellFailure> {
        BATCHED_MOST.fetch_max(sets.len(), Ordering::SeqCst);
        Ok((strategy.run)(data, sets, exec))
    }
}

fn stand_in(settings: &BackendSettings) -> Vec<Arc<dyn UnitBackend>> {
    match settings.gpu_slots_per_device {
        7 => vec![Arc::new(StandIn)],
        6 => vec![Arc::new(Broken)],
        5 => vec![Arc::new(Batching)],
        _ => Vec::new(),
    }
}

#[linkme::distributed_slice(BACKEND_PROVIDERS)]
#[linkme(crate = gridtest::__private::linkme)]
static STAND_IN: BackendProvider = stand_in;

/// One CPU scorer beside the stand-in selected by `code` (7: [`StandIn`], 6: [`Broken`], 5:
/// [`Batching`]), in units of at most 100 smoke sets (600 000 evaluations over 6 000 ticks).
fn with_slot_coded(code: usize) -> RunOptions {
    RunOptions {
        threads: 1,
        unit_evals: 600_000, // many small units, so that both scorers get some
        backends: Some(BackendSettings {
            gpu_slots_per_device: code,
            ..BackendSettings::default()
        }),
        ..quiet()
    }
}

fn with_slot() -> RunOptions {
    with_slot_coded(7)
}

/// The W1 grid over the smoke data.
fn smoke_sma() -> Sweep {
    let (data, _) = w1_smoke();
    Sweep::of::<SmaCrossover>()
        .grid(gridtest_tests::w1_grid())
        .data(data.display().to_string())
}

/// Runs `sweep` with `opts` until the slot `slot` took some of its units (scorers pull work, so
/// on a loaded machine the CPU scorer may now and then take every unit of a small sweep before
/// the slot asks): at most five tries, each checked against the CPU-only run.
fn run_until_the_slot_works(sweep: &Sweep, opts: &RunOptions, slot: &str) -> SweepResults {
    let cpu_only = run_with(sweep, &quiet()).unwrap();
    for _ in 0..5 {
        let results = run_with(sweep, opts).unwrap();
        assert_eq!(results.failed(), 0);
        assert_eq!(
            results.cells().unwrap(),
            cpu_only.cells().unwrap(),
            "the slot changed results"
        );
        let info = results.run_info().unwrap();
        if info.gpu_slots.get(slot).is_some_and(|s| s.units > 0) {
            return results;
        }
    }
    panic!("the slot {slot} never took a unit in five sweeps");
}

#[test]
fn a_backend_slot_runs_units_of_strategies_with_device_code() {
    let with = run_until_the_slot_works(&smoke_sma(), &with_slot(), "local/gpu9-0");
    let info = with.run_info().unwrap();
    let slot = &info.gpu_slots["local/gpu9-0"];
    assert!(slot.units > 0 && slot.cells > 0, "{slot:?}");

    // 100 momentum sets × 2 shards in units of 10 sets: 20 units, so the slot gets some.
    let (data, _) = w1_smoke();
    let momentum = Sweep::of::<Momentum>()
        .grid(
            Grid::new()
                .axis("window", (10..=1000).step_by(10))
                .axis("threshold_bps", [1.0]),
        )
        .data(data.display().to_string());
    let small_units = RunOptions {
        unit_evals: 60_000,
        ..with_slot()
    };
    run_until_the_slot_works(&momentum, &small_units, "local/gpu9-0");
}

/// A slot that wants more sets per call than a unit has leases further units of the same shard
/// and runs them in one call; every cell is reported under its own unit, as in the CPU run.
#[test]
fn a_slot_that_wants_many_sets_runs_several_units_at_once() {
    let results = run_until_the_slot_works(&smoke_sma(), &with_slot_coded(5), "local/gpu7-0");
    let most = BATCHED_MOST.load(Ordering::SeqCst);
    assert!(
        (101..=500).contains(&most),
        "units were batched up to 400 sets: largest call {most}"
    );
    let slot = &results.run_info().unwrap().gpu_slots["local/gpu7-0"];
    assert!(slot.units >= 2, "{slot:?}");
}

/// A device that fails every unit loses no cell: each unit it took is computed on the CPU
/// engine instead, and the sweep equals the CPU-only run.
#[test]
fn a_failing_device_loses_no_cell() {
    // Every unit the broken slot takes is computed on the CPU engine instead.
    run_until_the_slot_works(&smoke_sma(), &with_slot_coded(6), "local/gpu8-0");
}

/// A bars strategy with no device code: long from the `after`-th bar on.
#[derive(gridtest::Params, Clone, Debug)]
struct LongAfterParams {
    after: usize,
}

struct LongAfter {
    after: u64,
}

#[gridtest::strategy(name = "test_long_after_cpu_only")]
impl gridtest::Strategy for LongAfter {
    type Params = LongAfterParams;
    type Feed = gridtest::Bars;

    fn new(p: &LongAfterParams) -> Self {
        Self {
            after: p.after as u64,
        }
    }

    fn on_data(&mut self, now: &gridtest::Cursor<'_, gridtest::Bars>) -> f64 {
        if now.index() >= self.after { 1.0 } else { 0.0 }
    }
}

#[test]
fn strategies_without_device_code_stay_off_backend_slots() {
    let bars = gridtest_tests::Scratch::new();
    bars.synth(&gridtest::data::synth::SynthSpec {
        symbols: 1,
        days: 2,
        ticks_per_day: 2000,
        ticks_per_bar: Some(20),
        ..gridtest::data::synth::SynthSpec::default()
    });
    let sweep = Sweep::of::<LongAfter>()
        .grid(Grid::new().axis("after", [0, 5, 20, 50]))
        .data(bars.location());
    let results = run_with(&sweep, &with_slot()).unwrap();
    assert_eq!(results.recorded(), 4);
    assert!(
        results.run_info().unwrap().gpu_slots.is_empty(),
        "no unit went to the slot"
    );
}

/// `--require-gpu`: a node offered no backend slot refuses to run, saying why, and one offered
/// a slot runs as usual.
#[test]
fn a_node_that_requires_a_gpu_refuses_to_run_without_a_slot() {
    let sweep = smoke_sma();
    let required = |code| {
        let mut opts = with_slot_coded(code);
        opts.backends.as_mut().unwrap().require_gpu = true;
        opts
    };
    match run_with(&sweep, &required(0)) {
        Err(gridtest::Error::Config { problems }) => {
            assert_eq!(problems.len(), 1);
            assert!(problems[0].contains("--require-gpu"), "{problems:?}");
            assert!(problems[0].contains("no usable GPU"), "{problems:?}");
        }
        other => panic!("expected a refusal, got {:?}", other.map(|r| r.recorded())),
    }
    let results = run_with(&sweep, &required(7)).unwrap();
    assert_eq!(
        results.recorded(),
        results.n_sets() * results.shards().len()
    );
}
