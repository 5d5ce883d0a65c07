//! The GPU path. Without a GPU (CI): detection reports none cleanly, and the kernel is checked
//! against the CPU engine by compiling the very same kernel text as a host C++ program that
//! emulates CUDA's execution model (threads of a block as OS threads, `__syncthreads` as a
//! barrier, shared memory of exactly the launch's size under an address sanitizer), launched
//! with the runner's own launch plan. With a GPU, the kernels themselves must match the CPU
//! engine cell for cell.

use std::path::Path;
use std::process::Command;

use gridtest::data::{Shard, ShardData, ShardReader};
use gridtest::engine::{RawAccount, run_chunk};
use gridtest::registry::find_strategy;
use gridtest::strategy::Feed;
use gridtest::{Bars, DataKind, ExecModel, GpuCode, Grid, ParamSet, Ticks};
use gridtest_cuda::launch::{FeedLayout, Lanes};
use gridtest_cuda::source::{LaunchPlan, SHARED_BYTES, host_harness_source};
use gridtest_examples::{Breakout, Momentum, SmaCrossover, SmaCrossoverShared};
use gridtest_tests::{Scratch, runtime, w1_grid, w1_smoke};

fn smoke_shard(symbol: &str) -> ShardData {
    let (data, _) = w1_smoke();
    let dataset =
        gridtest::data::Dataset::try_new(&data.display().to_string(), DataKind::Ticks).unwrap();
    let reader = ShardReader::try_new(&dataset).unwrap();
    let shard = Shard::new(
        symbol,
        "2024-01-02".parse().unwrap(),
        "2024-01-04".parse().unwrap(),
    );
    runtime().block_on(reader.load(&shard)).unwrap()
}

fn write_f64(path: &Path, values: &[f64]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

/// Compiles the host form of `code` with the system C++ compiler (under the address and
/// undefined-behaviour sanitizers where the compiler has them), or says why it cannot.
fn compile_harness(code: &GpuCode, dir: &Path) -> Result<std::path::PathBuf, String> {
    let src = dir.join("harness.cpp");
    std::fs::write(&src, host_harness_source(code)).unwrap();
    let exe = dir.join("harness");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    let compile = |sanitize: bool| {
        let mut cmd = Command::new(&compiler);
        cmd.args([
            "-O2",
            "-std=c++20",
            "-pthread",
            "-ffp-contract=off",
            "-fno-fast-math",
        ]);
        if sanitize {
            cmd.args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]);
        }
        cmd.arg("-o").arg(&exe).arg(&src).output()
    };
    let out = compile(true).map_err(|e| format!("no C++ compiler `{compiler}`: {e}"))?;
    if out.status.success() {
        return Ok(exe);
    }
    let plain = compile(false).map_err(|e| format!("no C++ compiler `{compiler}`: {e}"))?;
    if !plain.status.success() {
        panic!(
            "the generated kernel does not compile as C++20:\n{}",
            String::from_utf8_lossy(&plain.stderr)
        );
    }
    eprintln!(
        "NOTE: `{compiler}` has no address sanitizer; the emulated kernel runs without bounds checks:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(exe)
}

/// The device a launch is planned for.
#[derive(Clone, Copy)]
struct Launch {
    /// Shared memory per block, bytes.
    shared_limit: usize,
    /// Multiprocessors (the block shape narrows to spread few sets over many).
    multiprocessors: u32,
}

/// An H200's launch shape (132 multiprocessors, 48 kB of shared memory per block).
const H200: Launch = Launch {
    shared_limit: SHARED_BYTES,
    multiprocessors: 132,
};

/// Runs the kernel's host form over `data` for `lanes`, launched as the runner would on
/// `launch` (one launch of every lane); one accumulator set per lane, in lane order.
fn run_harness(
    exe: &Path,
    dir: &Path,
    data: &ShardData,
    lanes: &Lanes,
    exec: &ExecModel,
    launch: Launch,
) -> Vec<RawAccount> {
    let feed = FeedLayout::of(data.kind());
    let n_cols = feed.n_cols;
    let mut cols = Vec::new();
    for c in 0..n_cols {
        for b in data.batches() {
            cols.extend_from_slice(&b.columns()[c]);
        }
    }
    let all: Vec<usize> = (0..lanes.len()).collect();
    let plan = lanes
        .launch(&all, n_cols, launch.multiprocessors, launch.shared_limit)
        .unwrap();
    write_f64(&dir.join("cols.bin"), &cols);
    write_f64(&dir.join("params.bin"), &plan.params);
    write_f64(&dir.join("table.bin"), &plan.table);
    let output = Command::new(exe)
        .arg(dir.join("cols.bin"))
        .arg(dir.join("params.bin"))
        .arg(dir.join("table.bin"))
        .arg(dir.join("out.bin"))
        .args([
            data.n_rows().to_string(),
            n_cols.to_string(),
            plan.plan.stage.to_string(),
            plan.lookback.to_string(),
            plan.param_len.to_string(),
            plan.n_lanes.to_string(),
            plan.n_series.to_string(),
            plan.slot_at.to_string(),
            plan.n_slots.to_string(),
            format!("{:e}", exec.cost_rate()),
            format!("{:e}", exec.max_leverage),
            feed.fill.to_string(),
            feed.mark.to_string(),
            u8::from(feed.intrabar).to_string(),
            plan.blocks.to_string(),
            plan.threads.to_string(),
            plan.plan.shared_bytes.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the emulated kernel failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let bytes = std::fs::read(dir.join("out.bin")).unwrap();
    let out: Vec<f64> = bytes
        .chunks(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    out.chunks(RawAccount::DEVICE_LEN)
        .map(RawAccount::from_device)
        .collect()
}

/// The kernel of strategy `name` (emulated) against the CPU engine `cpu`, every cell of `sets`
/// on each of `shards`, bit for bit.
fn check_parity(
    name: &str,
    shards: &[ShardData],
    sets: &[ParamSet],
    exec: &ExecModel,
    launch: Launch,
    cpu: impl Fn(&ShardData) -> Vec<gridtest::CellOutcome>,
) {
    let entry = find_strategy(name).unwrap();
    let code = (entry.gpu)().expect("the strategy ships device code");
    let dir = tempfile::tempdir().unwrap();
    let exe = match compile_harness(&code, dir.path()) {
        Ok(exe) => exe,
        Err(why) => {
            gridtest_tests::skip("cxx", &format!("device-code parity for {name}"), &why);
            return;
        }
    };
    let lanes = Lanes::prepare(entry, &code, sets).unwrap();
    assert!(lanes.refused().is_empty() && lanes.len() == sets.len());
    for data in shards {
        let want = cpu(data);
        let raw = run_harness(&exe, dir.path(), data, &lanes, exec, launch);
        assert_eq!(raw.len(), sets.len());
        for (lane, raw) in raw.into_iter().enumerate() {
            let set = lanes.set_of(lane);
            let got = raw.finish(data.n_rows(), data.n_days(), exec.annualisation());
            assert!(got.is_ok(), "{name} [{}]: {got:?}", sets[set]);
            assert_eq!(
                got,
                want[set],
                "{name} [{}] on {}: device code differs from the CPU engine",
                sets[set],
                data.shard()
            );
        }
    }
}

fn smoke_shards() -> Vec<ShardData> {
    ["S000", "S001"].map(smoke_shard).into()
}

#[test]
fn sma_kernel_equals_the_cpu_engine_bit_for_bit() {
    let sets: Vec<ParamSet> = w1_grid().iter().collect();
    let exec = ExecModel::default().with_commission_bps(1.0);
    check_parity(
        "sma_crossover",
        &smoke_shards(),
        &sets,
        &exec,
        H200,
        |data| run_chunk::<SmaCrossover>(data, &sets, &exec),
    );
}

/// Shared memory squeezed so that each block stages 37 events per pass: the lookback spans
/// dozens of passes, moment tiles close mid-pass; blocks of 128 threads (a one-multiprocessor
/// device), the last one partly idle.
#[test]
fn sma_kernel_with_narrow_staging_equals_the_cpu_engine() {
    let sets: Vec<ParamSet> = w1_grid().iter().step_by(5).collect();
    assert!(!sets.len().is_multiple_of(128), "a partly idle block");
    let lookback = sets
        .iter()
        .map(|s| (find_strategy("sma_crossover").unwrap().lookback)(s).unwrap())
        .max()
        .unwrap();
    let limit = 8 * (Ticks::COLUMNS.len() * (lookback + 37) + 2 * 37);
    assert_eq!(
        LaunchPlan::new(Ticks::COLUMNS.len(), lookback, 0, limit).map(|p| p.stage),
        Some(37)
    );
    let exec = ExecModel::default().with_commission_bps(1.0);
    let launch = Launch {
        shared_limit: limit,
        multiprocessors: 1,
    };
    check_parity(
        "sma_crossover",
        &smoke_shards(),
        &sets,
        &exec,
        launch,
        |data| run_chunk::<SmaCrossover>(data, &sets, &exec),
    );
}

#[test]
fn momentum_kernel_equals_the_cpu_engine_bit_for_bit() {
    let sets: Vec<ParamSet> = Grid::new()
        .axis("window", [1, 10, 50, 200, 1000, 3000])
        .axis("threshold_bps", [0.0, 2.5, 10.0, 40.0])
        .iter()
        .collect();
    let exec = ExecModel::default()
        .with_commission_bps(2.0)
        .with_slippage_bps(1.5);
    check_parity("momentum", &smoke_shards(), &sets, &exec, H200, |data| {
        run_chunk::<Momentum>(data, &sets, &exec)
    });
}

/// The kernel's bar path: five columns, fills at the open, marks at the close with the move
/// inside the bar, long and short breakouts, fees; in the H200 shape and with shared memory
/// squeezed to 41 bars per pass.
#[test]
fn breakout_kernel_on_bars_equals_the_cpu_engine_bit_for_bit() {
    let scratch = Scratch::new();
    scratch.synth(&gridtest::data::synth::SynthSpec {
        symbols: 2,
        days: 3,
        ticks_per_day: 8000,
        ticks_per_bar: Some(10),
        ..gridtest::data::synth::SynthSpec::default()
    });
    let dataset = scratch.dataset(DataKind::Bars);
    let reader = ShardReader::try_new(&dataset).unwrap();
    let shards: Vec<ShardData> = runtime()
        .block_on(dataset.plan_shards(None, None, None))
        .unwrap()
        .iter()
        .map(|s| runtime().block_on(reader.load(s)).unwrap())
        .collect();
    assert_eq!(shards.len(), 2);
    let sets: Vec<ParamSet> = Grid::new()
        .axis("entry", [5, 20, 60, 200])
        .axis("exit", [3, 10, 50])
        .axis("short", [false, true])
        .iter()
        .collect();
    let exec = ExecModel::default()
        .with_commission_bps(1.0)
        .with_slippage_bps(0.5);
    let cpu = |data: &ShardData| run_chunk::<Breakout>(data, &sets, &exec);
    let trades: u64 = shards
        .iter()
        .flat_map(&cpu)
        .map(|c| c.unwrap().trades)
        .sum();
    assert!(trades > 100, "the grid trades ({trades} trades)");
    check_parity("breakout", &shards, &sets, &exec, H200, cpu);
    let narrow = Launch {
        shared_limit: 8 * (Bars::COLUMNS.len() * (200 + 41) + 2 * 41),
        multiprocessors: 1,
    };
    check_parity("breakout", &shards, &sets, &exec, narrow, cpu);
}

/// The shared-means kernel (each block computes each distinct mean of its lanes once per
/// staged pass, lanes read them through `gt_shared`) on the whole W1 grid in the H200 shape.
#[test]
fn shared_means_kernel_equals_the_cpu_engine_bit_for_bit() {
    let sets: Vec<ParamSet> = w1_grid().iter().collect();
    let exec = ExecModel::default().with_commission_bps(1.0);
    let cpu = |data: &ShardData| run_chunk::<SmaCrossoverShared>(data, &sets, &exec);
    let trades: u64 = smoke_shards()
        .iter()
        .flat_map(&cpu)
        .map(|c| c.unwrap().trades)
        .sum();
    assert!(trades > 1000, "the grid trades ({trades} trades)");
    check_parity(
        "sma_crossover_shared",
        &smoke_shards(),
        &sets,
        &exec,
        H200,
        cpu,
    );
}

/// Shared memory squeezed below what blocks of 128 lanes need for their means beside 32
/// staged events: the launch narrows its blocks (fewer lanes, fewer distinct means each), and
/// the kernel still equals the CPU engine.
#[test]
fn shared_means_kernel_with_narrowed_blocks_equals_the_cpu_engine() {
    let sets: Vec<ParamSet> = w1_grid().iter().step_by(5).collect();
    let entry = find_strategy("sma_crossover_shared").unwrap();
    let code = (entry.gpu)().unwrap();
    let lanes = Lanes::prepare(entry, &code, &sets).unwrap();
    let all: Vec<usize> = (0..lanes.len()).collect();
    let n_cols = Ticks::COLUMNS.len();
    let wide = lanes.launch(&all, n_cols, 1, SHARED_BYTES).unwrap();
    assert_eq!(wide.threads, 128);
    let limit = 8 * (n_cols * (wide.lookback + 32) + wide.n_series * 33 + 2 * 32) - 8;
    let narrow = lanes.launch(&all, n_cols, 1, limit).unwrap();
    assert!(
        narrow.threads < 128 && narrow.n_series < wide.n_series,
        "{narrow:?}"
    );
    assert!(narrow.plan.shared_bytes <= limit && narrow.plan.stage >= 32);
    let exec = ExecModel::default().with_commission_bps(1.0);
    let launch = Launch {
        shared_limit: limit,
        multiprocessors: 1,
    };
    check_parity(
        "sma_crossover_shared",
        &smoke_shards(),
        &sets,
        &exec,
        launch,
        |data| run_chunk::<SmaCrossoverShared>(data, &sets, &exec),
    );
}

/// How a launch lays out the W1 grid's shared means: lanes sorted so that a block of 32
/// spans few slow windows, each block's table listing each of its means once, and each
/// lane's slots pointing at entries that are its own windows.
#[test]
fn each_block_lists_its_lanes_means_once() {
    let sets: Vec<ParamSet> = w1_grid().iter().collect();
    let entry = find_strategy("sma_crossover_shared").unwrap();
    let code = (entry.gpu)().unwrap();
    let lanes = Lanes::prepare(entry, &code, &sets).unwrap();
    let mut order: Vec<usize> = (0..lanes.len()).map(|l| lanes.set_of(l)).collect();
    order.sort_unstable();
    assert_eq!(order, (0..sets.len()).collect::<Vec<_>>(), "a permutation");
    let all: Vec<usize> = (0..lanes.len()).collect();
    let launch = lanes
        .launch(
            &all,
            Ticks::COLUMNS.len(),
            H200.multiprocessors,
            SHARED_BYTES,
        )
        .unwrap();
    assert_eq!((launch.blocks, launch.threads), (30, 32));
    assert_eq!(
        (launch.slot_at, launch.n_slots, launch.param_len),
        (2, 2, 4)
    );
    // Per lane, 2 rolling sums; per block, each distinct window once: a block spans 2 or 3
    // slow windows (the slot with more distinct windows leads the sort) and up to 20 fast.
    assert!(
        launch.n_series <= 23,
        "{} means in the widest block of 32 lanes",
        launch.n_series
    );
    assert_eq!(launch.table.len(), 30 * launch.n_series * 2);
    for lane in 0..lanes.len() {
        let set = &sets[lanes.set_of(lane)];
        let p = &launch.params[lane * launch.param_len..][..launch.param_len];
        let block = lane / 32;
        for (slot, field) in ["fast", "slow"].into_iter().enumerate() {
            let window = match set.get(field) {
                Some(gridtest::ParamValue::Int(w)) => *w as f64,
                other => panic!("{other:?}"),
            };
            assert_eq!(p[slot], window, "the strategy's parameters first");
            let k = p[launch.slot_at + slot] as usize;
            assert!(k < launch.n_series);
            let entry = &launch.table[(block * launch.n_series + k) * 2..][..2];
            assert_eq!(
                entry,
                [Ticks::MARK as f64, window],
                "lane {lane} slot {slot}"
            );
        }
    }
    for block in launch.table.chunks(launch.n_series * 2) {
        let mut used: Vec<(u64, u64)> = block
            .chunks(2)
            .filter(|e| e[1] > 0.0)
            .map(|e| (e[0] as u64, e[1] as u64))
            .collect();
        let n = used.len();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), n, "a mean listed twice in one block");
    }
}

/// Sets the device cannot run fail alone, as on the CPU engine (a constructor or `shared`
/// that panics, a missing parameter); a series with no device form refuses the strategy,
/// naming the series.
#[test]
fn what_the_device_cannot_run_is_named() {
    use gridtest::ParamValue::Int;
    let entry = find_strategy("sma_crossover_shared").unwrap();
    let code = (entry.gpu)().unwrap();
    let sets = vec![
        ParamSet::new([("fast", Int(5)), ("slow", Int(20))]),
        ParamSet::new([("fast", Int(0)), ("slow", Int(20))]),
        ParamSet::new([("fast", Int(5))]),
    ];
    let lanes = Lanes::prepare(entry, &code, &sets).unwrap();
    assert_eq!((lanes.len(), lanes.set_of(0)), (1, 0));
    let data = smoke_shard("S000");
    let cpu = run_chunk::<SmaCrossoverShared>(&data, &sets, &ExecModel::default());
    let refused: Vec<(usize, gridtest::sweep::FailureKind)> =
        lanes.refused().iter().map(|(i, f)| (*i, f.kind)).collect();
    let on_cpu: Vec<(usize, gridtest::sweep::FailureKind)> = cpu
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.as_ref().err().map(|f| (i, f.kind)))
        .collect();
    assert_eq!(refused, on_cpu);
    assert_eq!(refused.len(), 2);
    assert!(
        lanes.refused()[1].1.message.contains("slow"),
        "names the field"
    );

    let momentum = find_strategy("momentum_shared").unwrap();
    let sets = vec![ParamSet::new([
        ("window", Int(50)),
        ("threshold_bps", gridtest::ParamValue::Float(5.0)),
    ])];
    let momentum_code = (find_strategy("momentum").unwrap().gpu)().unwrap();
    let err = Lanes::prepare(momentum, &momentum_code, &sets).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("momentum_shared") && text.contains("PriceChange"),
        "{text}"
    );
}

#[derive(gridtest::Params, Clone, Debug)]
struct ColumnParams {
    column: usize,
}

/// Long while the mean of a column over 5 ticks is above the price: a strategy whose shared
/// mean names its column, for the device's check of it.
struct ColumnMean;

#[gridtest::strategy(name = "gpu_test_column_mean")]
impl gridtest::Strategy for ColumnMean {
    type Params = ColumnParams;
    type Feed = Ticks;
    fn new(_: &ColumnParams) -> Self {
        Self
    }
    fn shared(p: &ColumnParams, series: &mut gridtest::SharedSeries<Ticks>) {
        series.add(gridtest::SharedMean::of_column(p.column, 5));
    }
    fn on_data(&mut self, now: &gridtest::Cursor<'_, Ticks>) -> f64 {
        f64::from(u8::from(now.shared(0) > now.price()))
    }
    fn gpu_code() -> Option<GpuCode> {
        Some(GpuCode {
            source: "__device__ void gt_init(double* s, const double* p) {}\n__device__ double gt_step(double* s, const double* p, const double* const* col, long long index) { return gt_shared(col, 0) > col[0][0] ? 1.0 : 0.0; }\n",
            state_len: 1,
            pack: gridtest::pack_numeric::<ColumnParams>,
        })
    }
}

/// A shared mean of a column the feed does not have never reaches the device (the kernel
/// would read past its staged window): the set fails alone, naming the column.
#[test]
fn a_shared_mean_of_a_missing_column_is_refused() {
    use gridtest::ParamValue::Int;
    let entry = find_strategy("gpu_test_column_mean").unwrap();
    let code = (entry.gpu)().unwrap();
    let sets = vec![
        ParamSet::new([("column", Int(1))]),
        ParamSet::new([("column", Int(7))]),
    ];
    let lanes = Lanes::prepare(entry, &code, &sets).unwrap();
    assert_eq!((lanes.len(), lanes.set_of(0)), (1, 0));
    let (set, failure) = &lanes.refused()[0];
    assert_eq!(
        (*set, failure.kind),
        (1, gridtest::sweep::FailureKind::Params)
    );
    assert!(
        failure.message.contains("column 7") && failure.message.contains("2 columns"),
        "{}",
        failure.message
    );
}

/// Parameters of every kind, to pin how `pack_numeric` lays them out for the device.
#[derive(gridtest::Params, Clone, Debug)]
struct Mixed {
    window: usize,
    threshold: f64,
    short: bool,
}

#[derive(gridtest::Params, Clone, Debug)]
struct WithChoice {
    window: usize,
    style: String,
}

#[test]
fn parameters_pack_as_doubles_in_declaration_order() {
    use gridtest::ParamValue::{Bool, Choice, Float, Int};
    let set = ParamSet::new([
        ("short", Bool(true)),
        ("threshold", Float(2.5)),
        ("window", Int(300)),
    ]);
    assert_eq!(
        gridtest::pack_numeric::<Mixed>(&set).unwrap(),
        [300.0, 2.5, 1.0]
    );
    // The same values as the CPU strategy sees them.
    let typed = <Mixed as gridtest::Params>::from_param_set(&set).unwrap();
    assert_eq!(
        (typed.window, typed.threshold, typed.short),
        (300, 2.5, true)
    );
    let flat = ParamSet::new([
        ("short", Bool(false)),
        ("threshold", Float(-0.0)),
        ("window", Int(1)),
    ]);
    assert_eq!(
        gridtest::pack_numeric::<Mixed>(&flat).unwrap(),
        [1.0, -0.0, 0.0]
    );
    // What cannot be packed is an error naming the set and the field.
    let missing = ParamSet::new([("window", Int(3))]);
    let err = gridtest::pack_numeric::<Mixed>(&missing).unwrap_err();
    assert!(err.to_string().contains("threshold"), "{err}");
    let choice = ParamSet::new([("window", Int(3)), ("style", Choice("fast".into()))]);
    let typed = <WithChoice as gridtest::Params>::from_param_set(&choice).unwrap();
    assert_eq!((typed.window, typed.style.as_str()), (3, "fast"));
    let err = gridtest::pack_numeric::<WithChoice>(&choice).unwrap_err();
    assert!(
        err.to_string().contains("style") && err.to_string().contains("custom GpuCode::pack"),
        "{err}"
    );
    // The shipped strategies pack what their device code reads: SMA `[fast, slow]`.
    let sma = ParamSet::new([("fast", Int(5)), ("slow", Int(20))]);
    let code = (find_strategy("sma_crossover").unwrap().gpu)().unwrap();
    assert_eq!((code.pack)(&sma).unwrap(), [5.0, 20.0]);
}

#[test]
fn gpu_detection_never_panics_and_says_why_there_is_none() {
    let described = gridtest_cuda::device::describe();
    match gridtest_cuda::detect() {
        Ok(gpus) => assert!(!gpus.is_empty() && described.starts_with("GPU 0")),
        Err(why) => {
            gridtest_tests::skip("gpu", "GPU kernel tests", &why.to_string());
            assert!(described.starts_with("no GPU: "), "{described}");
            // No NVML either: no telemetry, and no panic.
            assert!(gridtest_cuda::telemetry::sample(0).is_none());
        }
    }
    let reading = gridtest_cuda::telemetry::GpuTelemetry {
        ordinal: 1,
        sm_clock_mhz: 1410,
        max_sm_clock_mhz: 1980,
        temperature_c: 83,
        throttled: true,
        energy_mj: Some(12_345),
    };
    assert_eq!(reading.to_string(), "gpu1 1410/1980 MHz 83°C THROTTLED");
    let typed = reading.reading();
    assert_eq!(
        (
            typed.device.as_str(),
            typed.sm_clock_mhz,
            typed.throttled,
            typed.energy_mj
        ),
        ("gpu1", 1410, true, Some(12_345))
    );
}

/// On a machine with a GPU: the kernel itself, against the CPU engine, every cell.
#[test]
fn gpu_kernels_equal_the_cpu_engine() {
    let gpus = match gridtest_cuda::detect() {
        Ok(gpus) => gpus,
        Err(why) => {
            gridtest_tests::skip("gpu", "gpu_kernels_equal_the_cpu_engine", &why.to_string());
            return;
        }
    };
    let device =
        gridtest_cuda::runner::GpuDevice::open(gpus[0].clone(), 512 << 20, 1 << 30).unwrap();
    let sets: Vec<ParamSet> = w1_grid().iter().collect();
    let exec = ExecModel::default().with_commission_bps(1.0);
    for name in ["sma_crossover", "sma_crossover_shared"] {
        let entry = find_strategy(name).unwrap();
        let code = (entry.gpu)().unwrap();
        for symbol in ["S000", "S001"] {
            let data = smoke_shard(symbol);
            let gpu = device.run(entry, &code, &data, &sets, &exec).unwrap();
            let cpu = run_chunk::<SmaCrossover>(&data, &sets, &exec);
            assert_eq!(gpu, cpu, "{name}: GPU and CPU differ on {symbol}");
        }
    }
}

/// The example strategies' device code, for `test`; `None` (the test says it is skipped)
/// without NVRTC. NVRTC is a compiler library that needs no GPU: `.ci/run` provides it from
/// NVIDIA's `nvidia-cuda-nvrtc` wheel.
fn example_kernels(test: &str) -> Option<Vec<(&'static str, GpuCode)>> {
    if !gridtest_cuda::device::nvrtc_present() {
        gridtest_tests::skip(
            "nvrtc",
            test,
            "no libnvrtc (pip install nvidia-cuda-nvrtc-cu12 and put its lib/ on LD_LIBRARY_PATH)",
        );
        return None;
    }
    let names = [
        "sma_crossover",
        "momentum",
        "breakout",
        "sma_crossover_shared",
    ];
    Some(
        names
            .into_iter()
            .map(|name| (name, (find_strategy(name).unwrap().gpu)().unwrap()))
            .collect(),
    )
}

/// The example kernels compiled for the H200's architecture keep their per-event state in
/// registers: no stack frame (a local-memory array, as the column pointers were before: 104
/// bytes, a fifth of the kernel's time on an H200) and no spills. ptxas's own report, through
/// NVRTC; no GPU needed.
#[test]
fn generated_kernels_keep_their_state_in_registers() {
    let Some(kernels) = example_kernels("generated_kernels_keep_their_state_in_registers") else {
        return;
    };
    for (name, code) in kernels {
        let kernel = gridtest_cuda::resources::kernel_resources(name, &code, "sm_90")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (
                kernel.stack_frame_bytes,
                kernel.spill_store_bytes,
                kernel.spill_load_bytes
            ),
            (0, 0, 0),
            "{name}: {kernel:?}"
        );
        assert!((32..=255).contains(&kernel.registers), "{name}: {kernel:?}");
    }
}

/// The generated kernels compile with NVRTC, with the options the runner uses.
#[test]
fn generated_kernels_compile_with_nvrtc() {
    let Some(kernels) = example_kernels("generated_kernels_compile_with_nvrtc") else {
        return;
    };
    for (name, code) in kernels {
        let ptx = gridtest_cuda::runner::compile(name, &code).unwrap_or_else(|e| panic!("{e}"));
        let text = ptx.to_src();
        assert!(
            text.contains(".entry gt_run"),
            "{name}: no kernel entry in the PTX"
        );
        assert!(
            !text.contains("fma.rn.f64"),
            "{name}: FMA contraction must be off"
        );
    }
}
