//! The GPU scorer plumbing without a GPU: a backend slot contributed through the provider slice
//! (as gridtest-cuda does) is run by the node agent, leases only units of strategies with device
//! code, shows in the per-GPU-scorer figures, and its cells are those of the CPU run.

use std::sync::Arc;

use gridtest::actors::{BACKEND_PROVIDERS, BackendProvider, BackendSettings, UnitBackend};
use gridtest::data::ShardData;
use gridtest::engine::ExecModel;
use gridtest::strategy::StrategyEntry;
use gridtest::sweep::{CellFailure, CellOutcome};
use gridtest::{Grid, ParamSet, RunOptions, Sweep};
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

    fn telemetry(&self) -> Option<String> {
        Some("gpu9 1000/2000 MHz 50°C".to_owned())
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

fn stand_in(settings: &BackendSettings) -> Vec<Arc<dyn UnitBackend>> {
    if settings.gpu_slots_per_device == 7 {
        vec![Arc::new(StandIn)]
    } else {
        Vec::new()
    }
}

#[linkme::distributed_slice(BACKEND_PROVIDERS)]
#[linkme(crate = gridtest::__private::linkme)]
static STAND_IN: BackendProvider = stand_in;

fn with_slot() -> RunOptions {
    RunOptions {
        threads: 1,
        unit_evals: 600_000, // many small units, so that both scorers get some
        backends: Some(BackendSettings {
            gpu_slots_per_device: 7,
            ..BackendSettings::default()
        }),
        ..quiet()
    }
}

#[test]
fn a_backend_slot_runs_units_of_strategies_with_device_code() {
    let (data, _) = w1_smoke();
    let sweep = Sweep::of::<SmaCrossover>()
        .grid(gridtest_tests::w1_grid())
        .data(data.display().to_string());
    let with = run_with(&sweep, &with_slot()).unwrap();
    let without = run_with(&sweep, &quiet()).unwrap();
    assert_eq!(with.cells(), without.cells());
    let info = with.run_info().unwrap();
    let slot = info
        .gpu_slots
        .get("local/gpu9-0")
        .expect("the slot ran units");
    assert!(slot.units > 0 && slot.cells > 0, "{slot:?}");

    let momentum = Sweep::of::<Momentum>()
        .grid(
            Grid::new()
                .axis("window", [10, 100])
                .axis("threshold_bps", [1.0]),
        )
        .data(data.display().to_string());
    assert!(
        run_with(&momentum, &with_slot())
            .unwrap()
            .run_info()
            .unwrap()
            .gpu_slots
            .contains_key("local/gpu9-0")
    );
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
    let sweep = Sweep::of::<gridtest_examples::Breakout>()
        .grid(
            Grid::new()
                .axis("entry", [5, 20])
                .axis("exit", [5])
                .axis("short", [false, true]),
        )
        .data(bars.location());
    let results = run_with(&sweep, &with_slot()).unwrap();
    assert_eq!(results.cells().len(), 4);
    assert!(
        results.run_info().unwrap().gpu_slots.is_empty(),
        "no unit went to the slot"
    );
}
