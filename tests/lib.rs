//! Shared harness for gridtest's integration tests: fixture paths, scratch datasets, a quiet
//! runner and the W1 reference comparison.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::NaiveDate;
use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, TimestampNanosecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::parquet::arrow::ArrowWriter;
use gridtest::data::Dataset;
use gridtest::data::synth::{self, SynthSpec};
use gridtest::{DataKind, Grid, RunOptions, Sweep, SweepResults};

/// The repository's test data folder.
#[must_use]
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// The W1 smoke dataset (2 symbols × 6 000 ticks) and its reference results.
#[must_use]
pub fn w1_smoke() -> (PathBuf, PathBuf) {
    let w1 = data_dir().join("w1");
    (w1.join("smoke"), w1.join("smoke_reference.csv"))
}

/// The W1 grid: fast 5..=100 step 5, slow 20..=1000 step 20, fast < slow (955 sets).
#[must_use]
pub fn w1_grid() -> Grid {
    Grid::new()
        .axis("fast", (5..=100).step_by(5))
        .axis("slow", (20..=1000).step_by(20))
        .constrain("fast < slow")
}

/// Options for tests: two scorers, no progress bar.
#[must_use]
pub fn quiet() -> RunOptions {
    RunOptions {
        threads: 2,
        ..RunOptions::default()
    }
}

/// A multi-threaded runtime for one test.
///
/// # Panics
/// If the runtime cannot start.
#[must_use]
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs a sweep in-process with `opts`.
///
/// # Errors
/// The sweep's error.
pub fn run_with(sweep: &Sweep, opts: &RunOptions) -> gridtest::Result<SweepResults> {
    runtime().block_on(gridtest::run_sweep(sweep, opts))
}

/// Runs a sweep in-process, quietly.
///
/// # Panics
/// If the sweep fails as a whole.
#[must_use]
pub fn run(sweep: &Sweep) -> SweepResults {
    run_with(sweep, &quiet()).expect("sweep runs")
}

/// One row of a W1 reference CSV.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefRow {
    /// Ticks.
    pub n_ticks: u64,
    /// Position changes.
    pub trades: u64,
    /// Total return.
    pub total_return: f64,
    /// Maximum drawdown.
    pub max_drawdown: f64,
    /// Sharpe.
    pub sharpe: f64,
}

/// Cells keyed by (symbol, fast, slow).
pub type W1Table = BTreeMap<(String, i64, i64), RefRow>;

/// Reads a CSV with at least `symbol,fast,slow,n_ticks,trades,total_return,max_drawdown,sharpe`
/// (the reference, or gridtest's `results.csv`).
///
/// # Panics
/// On a malformed file.
#[must_use]
pub fn read_w1_csv(path: &Path) -> W1Table {
    let mut reader = csv::Reader::from_path(path).expect("csv opens");
    let headers = reader.headers().expect("header").clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{} has no column {name}", path.display()))
    };
    let (sy, fa, sl, nt, tr, ret, dd, sh) = (
        col("symbol"),
        col("fast"),
        col("slow"),
        col("n_ticks"),
        col("trades"),
        col("total_return"),
        col("max_drawdown"),
        col("sharpe"),
    );
    reader
        .records()
        .map(|r| {
            let r = r.expect("record");
            let f = |i: usize| r[i].parse::<f64>().expect("float");
            (
                (
                    r[sy].to_owned(),
                    r[fa].parse().expect("fast"),
                    r[sl].parse().expect("slow"),
                ),
                RefRow {
                    n_ticks: r[nt].parse().expect("n_ticks"),
                    trades: r[tr].parse().expect("trades"),
                    total_return: f(ret),
                    max_drawdown: f(dd),
                    sharpe: f(sh),
                },
            )
        })
        .collect()
}

/// The cells of a sweep over the W1 grid as a [`W1Table`].
///
/// # Panics
/// If a cell failed.
#[must_use]
pub fn w1_table(results: &SweepResults) -> W1Table {
    results
        .rows()
        .expect("the spool reads back")
        .into_iter()
        .map(|(set, shard, outcome)| {
            let int = |n: &str| match set.get(n) {
                Some(gridtest::ParamValue::Int(v)) => *v,
                other => panic!("{n} = {other:?}"),
            };
            let m = outcome.as_ref().expect("cell succeeded");
            (
                (shard.symbol().to_owned(), int("fast"), int("slow")),
                RefRow {
                    n_ticks: m.n_ticks,
                    trades: m.trades,
                    total_return: m.total_return,
                    max_drawdown: m.max_drawdown,
                    sharpe: m.sharpe,
                },
            )
        })
        .collect()
}

/// Largest differences found by [`compare_w1`].
#[derive(Clone, Copy, Debug, Default)]
pub struct W1Diff {
    /// Cells compared.
    pub cells: usize,
    /// Largest relative difference of total return.
    pub total_return_rel: f64,
    /// Largest absolute difference of max drawdown.
    pub max_drawdown_abs: f64,
    /// Largest relative difference of Sharpe.
    pub sharpe_rel: f64,
}

/// Compares against a W1 reference with the workload's rule: same keys, `n_ticks` and `trades`
/// equal, `total_return` within 1e-9 relative (1e-12 absolute floor), drawdown within 1e-9
/// absolute and Sharpe within 1e-9 relative.
///
/// # Errors
/// A description of the first cells that break the rule.
pub fn compare_w1(got: &W1Table, reference: &W1Table) -> Result<W1Diff, String> {
    let mut problems = Vec::new();
    if got.len() != reference.len() {
        problems.push(format!(
            "{} cells, reference has {}",
            got.len(),
            reference.len()
        ));
    }
    let mut diff = W1Diff::default();
    for (key, want) in reference {
        let Some(have) = got.get(key) else {
            problems.push(format!("missing cell {key:?}"));
            continue;
        };
        diff.cells += 1;
        if have.n_ticks != want.n_ticks || have.trades != want.trades {
            problems.push(format!("{key:?}: got {have:?}, want {want:?}"));
        }
        let rel = |a: f64, b: f64, floor: f64| (a - b).abs() / b.abs().max(floor);
        let tr = rel(have.total_return, want.total_return, 1e-3);
        let tr_ok = (have.total_return - want.total_return).abs()
            <= (1e-9 * want.total_return.abs()).max(1e-12);
        let dd = (have.max_drawdown - want.max_drawdown).abs();
        let sh = rel(have.sharpe, want.sharpe, 1e-9);
        diff.total_return_rel = diff.total_return_rel.max(tr);
        diff.max_drawdown_abs = diff.max_drawdown_abs.max(dd);
        diff.sharpe_rel = diff.sharpe_rel.max(sh);
        if !tr_ok || dd > 1e-9 || sh > 1e-9 {
            problems.push(format!("{key:?}: got {have:?}, want {want:?}"));
        }
    }
    if problems.is_empty() {
        Ok(diff)
    } else {
        let n = problems.len();
        problems.truncate(10);
        Err(format!("{n} problems:\n{}", problems.join("\n")))
    }
}

/// A test cannot run here because `component` is missing: prints `SKIPPED test: why` and
/// returns, unless `GRIDTEST_REQUIRE` (a comma-separated list, or `all`) names the component,
/// in which case the test fails. `.ci/run` requires what CI provides (`s3`, `moto`, `cxx`,
/// `nvrtc`, `openssl`, `scipy`, `chromium`), so a component that silently went missing fails CI
/// instead of passing as a skip. Components: `s3`, `moto`, `cxx` (a C++20 compiler), `nvrtc`,
/// `openssl`, `scipy` (a Python with numpy and scipy: `GRIDTEST_RESEARCH_PYTHON`), `chromium`
/// (headless, for `report.html`: `GRIDTEST_CHROMIUM`), `kubectl`, `gpu`, `mountns` (a process
/// seeing a directory of its own at a path: `unshare --user --map-root-user --mount`).
///
/// # Panics
/// When the component is required.
pub fn skip(component: &str, test: &str, why: &str) {
    let required = std::env::var("GRIDTEST_REQUIRE").unwrap_or_default();
    if let Err(failure) = skip_unless_required(&required, component, test, why) {
        panic!("{failure}");
    }
}

/// [`skip`] with the required list given: `Err` (the failure message) when `required` names
/// `component` (or is `all`), else prints `SKIPPED test: why`.
///
/// # Errors
/// The failure message when the component is required.
pub fn skip_unless_required(
    required: &str,
    component: &str,
    test: &str,
    why: &str,
) -> Result<(), String> {
    if required
        .split(',')
        .map(str::trim)
        .any(|c| c == component || c == "all")
    {
        return Err(format!(
            "{test}: `{component}` is required here (GRIDTEST_REQUIRE) but missing: {why}"
        ));
    }
    eprintln!("SKIPPED {test}: {why}");
    Ok(())
}

/// Cells recorded in the persisted ledgers under a local results root (one JSON line each in
/// `sweeps/*/ledger/*.jsonl`); 0 while there is none.
pub fn ledger_cells(results: &Path) -> usize {
    let Ok(sweeps) = std::fs::read_dir(results.join("sweeps")) else {
        return 0;
    };
    sweeps
        .filter_map(Result::ok)
        .filter_map(|sweep| std::fs::read_dir(sweep.path().join("ledger")).ok())
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|segment| std::fs::read_to_string(segment.path()).ok())
        .map(|text| text.lines().filter(|l| !l.is_empty()).count())
        .sum()
}

/// Copies sweep `id` from the local results root `from` to `to` as a run cut short would have
/// left it: its spec, its manifest and every other cell of its ledger (from the first when
/// `first` is true, else from the second). Returns the cells kept.
///
/// # Panics
/// If a file cannot be read or written.
pub fn copy_with_half_its_ledger(from: &Path, to: &Path, id: &str, first: bool) -> usize {
    let (from, to) = (from.join("sweeps").join(id), to.join("sweeps").join(id));
    std::fs::create_dir_all(to.join("ledger")).unwrap();
    for name in ["spec.json", "manifest.jsonl"] {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
    let mut kept = 0;
    for segment in std::fs::read_dir(from.join("ledger")).unwrap() {
        let segment = segment.unwrap().path();
        let text = std::fs::read_to_string(&segment).unwrap();
        let half: String = text
            .lines()
            .enumerate()
            .filter(|(i, _)| (i % 2 == 0) == first)
            .map(|(_, line)| format!("{line}\n"))
            .collect();
        kept += half.lines().count();
        std::fs::write(to.join("ledger").join(segment.file_name().unwrap()), half).unwrap();
    }
    kept
}

/// What a sweep binary's `--status-file` says of the last sweep it finished.
///
/// # Panics
/// If the file cannot be read or records no finished sweep.
#[must_use]
pub fn finished_sweep(status_file: &Path) -> gridtest::status::SweepSummary {
    let records = gridtest::status::read(status_file)
        .unwrap_or_else(|e| panic!("{}: {e}", status_file.display()));
    records
        .into_iter()
        .rev()
        .find_map(|r| match r.event {
            gridtest::status::StatusEvent::SweepFinished(s) => Some(*s),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{}: no sweep finished", status_file.display()))
}

/// Copies the folder `from` (recursively) to `to`.
///
/// # Panics
/// On I/O errors.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let p = e.expect("entry").path();
        let dest = to.join(p.file_name().expect("a name"));
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).expect("copy");
        }
    }
}

/// A dataset in a temporary folder, written file by file.
#[derive(Debug)]
pub struct Scratch {
    /// The folder (deleted on drop).
    pub dir: tempfile::TempDir,
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    /// An empty scratch folder.
    ///
    /// # Panics
    /// If no temporary folder can be made.
    #[must_use]
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// Its path as a string.
    #[must_use]
    pub fn location(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// A dataset of `kind` rooted here.
    ///
    /// # Panics
    /// Never for a temp dir.
    #[must_use]
    pub fn dataset(&self, kind: DataKind) -> Dataset {
        Dataset::try_new(&self.location(), kind).expect("dataset")
    }

    /// Fills the folder with synthetic data.
    ///
    /// # Panics
    /// If generation fails.
    pub fn synth(&self, spec: &SynthSpec) {
        let kind = if spec.ticks_per_bar.is_some() {
            DataKind::Bars
        } else {
            DataKind::Ticks
        };
        synth::ensure_blocking(&self.dataset(kind), spec).expect("synthetic data");
    }

    /// Path of `symbol=S/date=D/file`.
    #[must_use]
    pub fn file(&self, symbol: &str, date: &str, file: &str) -> PathBuf {
        self.dir
            .path()
            .join(format!("symbol={symbol}"))
            .join(format!("date={date}"))
            .join(file)
    }

    /// Writes a record batch as `symbol=S/date=D/file`.
    ///
    /// # Panics
    /// On I/O errors.
    pub fn write_batch(
        &self,
        symbol: &str,
        date: &str,
        file: &str,
        batch: &RecordBatch,
    ) -> PathBuf {
        let path = self.file(symbol, date, file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let f = std::fs::File::create(&path).expect("create");
        let mut w = ArrowWriter::try_new(f, batch.schema(), None).expect("writer");
        w.write(batch).expect("write");
        w.close().expect("close");
        path
    }

    /// Writes a tick file.
    pub fn write_ticks(
        &self,
        symbol: &str,
        date: &str,
        file: &str,
        ts: Vec<i64>,
        price: Vec<f64>,
        size: Vec<f64>,
    ) -> PathBuf {
        self.write_batch(symbol, date, file, &tick_batch(ts, price, size))
    }

    /// Writes raw bytes as `symbol=S/date=D/file`.
    ///
    /// # Panics
    /// On I/O errors.
    pub fn write_bytes(&self, symbol: &str, date: &str, file: &str, bytes: &[u8]) -> PathBuf {
        let path = self.file(symbol, date, file);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, bytes).expect("write");
        path
    }
}

/// A tick record batch with the standard schema.
///
/// # Panics
/// If the columns differ in length.
#[must_use]
pub fn tick_batch(ts: Vec<i64>, price: Vec<f64>, size: Vec<f64>) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampNanosecondArray::from(ts).with_timezone("UTC")),
        Arc::new(Float64Array::from(price)),
        Arc::new(Float64Array::from(size)),
    ];
    RecordBatch::try_new(gridtest::data::table_schema(DataKind::Ticks), columns).expect("batch")
}

/// A record batch from named columns of any Arrow type.
///
/// # Panics
/// If the columns differ in length.
#[must_use]
pub fn batch_of(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("batch")
}

/// The UTC timestamp type of tick files.
#[must_use]
pub fn ts_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

/// Nanoseconds at `hh:mm` UTC on `date` (YYYY-MM-DD).
///
/// # Panics
/// On a malformed date.
#[must_use]
pub fn ns_at(date: &str, hour: i64, minute: i64) -> i64 {
    let d: NaiveDate = date.parse().expect("date");
    let days = d
        .signed_duration_since(chrono::DateTime::UNIX_EPOCH.date_naive())
        .num_days();
    days * 86_400_000_000_000 + (hour * 60 + minute) * 60_000_000_000
}

/// `n` timestamps one second apart from 15:00 UTC on `date`.
#[must_use]
pub fn seconds_from_15h(date: &str, n: usize) -> Vec<i64> {
    let t0 = ns_at(date, 15, 0);
    (0..n as i64).map(|i| t0 + i * 1_000_000_000).collect()
}

/// A compiled example binary of the workspace. `cargo test --workspace` builds examples before
/// running tests; when only this package's tests were built, the example is built here.
///
/// # Panics
/// If the test binary's location is unusual or the build fails.
#[must_use]
pub fn example_binary(name: &str) -> PathBuf {
    workspace_binary(
        &["-p", "gridtest-examples", "--example", name],
        &format!("examples/{name}"),
    )
}

/// The `gridtest` command-line tool (built here if needed).
///
/// # Panics
/// As [`example_binary`].
#[must_use]
pub fn gridtest_cli() -> PathBuf {
    workspace_binary(&["-p", "gridtest", "--bin", "gridtest"], "gridtest")
}

fn workspace_binary(build_args: &[&str], relative: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/deps/<test> → target/<profile>/<relative>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let binary = profile_dir.join(relative);
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = BUILD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !binary.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut build = std::process::Command::new(cargo);
        build.arg("build").args(build_args);
        if profile_dir.ends_with("release") {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building {relative} failed");
    }
    binary
}

/// Writes `days` weekdays × `ticks` ticks of each symbol under `scratch`, whose log-returns
/// carry the sides of the `planted` parameter set (`gridtest_examples::planted`) with `edge`
/// per tick on top of noise of volatility `vol`, each symbol with its own noise.
///
/// # Panics
/// If a file cannot be written.
pub fn write_planted(
    scratch: &Scratch,
    symbols: &[&str],
    (days, ticks): (usize, usize),
    planted: (u32, u32),
    (edge, vol): (f64, f64),
) {
    let dataset = scratch.dataset(DataKind::Ticks);
    let key = gridtest_examples::planted_key(planted.0, planted.1);
    let rt = runtime();
    for (seed, symbol) in (1u64..).zip(symbols) {
        let prices = gridtest_examples::planted_prices(key, ticks * days, edge, vol, seed);
        for (day, date) in synth::weekdays(days).into_iter().enumerate() {
            let prices = &prices[day * ticks..(day + 1) * ticks];
            rt.block_on(synth::write_tick_day(&dataset, symbol, date, prices))
                .expect("write a day");
        }
    }
}

/// The research Python (`GRIDTEST_RESEARCH_PYTHON`, set by `.ci/run`, else `python3`) if it can
/// import every module of `imports` (e.g. `"numpy, scipy"`).
#[must_use]
pub fn research_python(imports: &str) -> Option<String> {
    let python = std::env::var("GRIDTEST_RESEARCH_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let ok = std::process::Command::new(&python)
        .args(["-c", &format!("import {imports}")])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(python)
}

#[cfg(test)]
mod tests {
    use super::skip_unless_required;

    #[test]
    fn a_skip_of_a_required_component_fails() {
        assert!(skip_unless_required("", "s3", "t", "no server").is_ok());
        assert!(skip_unless_required("cxx,nvrtc", "s3", "t", "no server").is_ok());
        let err = skip_unless_required("s3,cxx", "s3", "t", "no server").unwrap_err();
        assert!(err.contains("`s3` is required"), "{err}");
        assert!(skip_unless_required("all", "gpu", "t", "none").is_err());
    }
}
