//! A synthetic market-data generator writing the dataset layout: used for the embedded default
//! dataset and for test fixtures.
//!
//! The price model (per symbol, one continuous path over all its days) follows the W1 reference
//! workload's description: a log-price random walk with stochastic volatility (AR(1) log-vol,
//! clustering) and Markov switching between TREND regimes (persistent AR(1) drift) and REVERT
//! regimes (Ornstein–Uhlenbeck around the regime's starting level), prices on a 1/256 grid
//! (minimum 1.0), ticks between 14:30 and 21:00 UTC on weekdays from 2024-01-02. The output
//! depends only on the [`SynthSpec`]: ChaCha8 seeded by `(seed, symbol index)`.

use std::sync::Arc;

use chrono::{Datelike, NaiveDate, Weekday};
use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, TimestampNanosecondArray};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::Compression;
use datafusion::parquet::file::properties::WriterProperties;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, path::Path};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use super::dataset::Dataset;
use super::error::{DataError, Result};
use super::load::table_schema;
use crate::strategy::DataKind;

/// Price grid: prices are multiples of 1/256, so window sums are exact in `f64`.
pub const TICK_GRID: f64 = 1.0 / 256.0;

const SESSION_OPEN_NS: i64 = (14 * 3600 + 30 * 60) * 1_000_000_000;
const SESSION_NS: i64 = 390 * 60 * 1_000_000_000;

/// What to generate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SynthSpec {
    /// Symbols `S000`, `S001`, …
    pub symbols: usize,
    /// Weekdays from 2024-01-02.
    pub days: usize,
    /// Ticks per symbol and day.
    pub ticks_per_day: usize,
    /// Seed.
    pub seed: u64,
    /// Annualised volatility.
    pub annual_vol: f64,
    /// Mean length of a TREND regime, days.
    pub trend_dwell_days: f64,
    /// Mean length of a REVERT regime, days.
    pub revert_dwell_days: f64,
    /// Write bars of this many ticks each instead of ticks (`None`: ticks).
    pub ticks_per_bar: Option<usize>,
}

impl Default for SynthSpec {
    /// The W1 benchmark dimensions: 4 symbols × 20 days × 50 000 ticks.
    fn default() -> Self {
        Self {
            symbols: 4,
            days: 20,
            ticks_per_day: 50_000,
            seed: 20_240_102,
            annual_vol: 0.35,
            trend_dwell_days: 0.6,
            revert_dwell_days: 0.4,
            ticks_per_bar: None,
        }
    }
}

/// What was written for one symbol (also stored in `manifest.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SymbolSummary {
    /// Symbol.
    pub symbol: String,
    /// Rows written (ticks or bars).
    pub rows: u64,
    /// Days written.
    pub days: usize,
    /// Exact sum of `price * 256` over the ticks (a checksum for readers).
    pub price_sum_x256: u64,
    /// First price.
    pub first_price: f64,
    /// Last price.
    pub last_price: f64,
}

/// `manifest.json` at the dataset root.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SynthManifest {
    /// The spec.
    pub spec: SynthSpec,
    /// One entry per symbol.
    pub symbols: Vec<SymbolSummary>,
}

/// The first `n` weekdays from 2024-01-02.
#[must_use]
pub fn weekdays(n: usize) -> Vec<NaiveDate> {
    let start = NaiveDate::from_ymd_opt(2024, 1, 2).expect("valid date");
    start
        .iter_days()
        .filter(|d| !matches!(d.weekday(), Weekday::Sat | Weekday::Sun))
        .take(n)
        .collect()
}

/// The tick path of one symbol: `(ts, price, size)` for every day.
struct PathGen {
    rng: ChaCha8Rng,
    log_price: f64,
    log_vol: f64,
    base_sigma: f64,
    trending: bool,
    drift: f64,
    anchor: f64,
    p_leave_trend: f64,
    p_leave_revert: f64,
}

impl PathGen {
    fn new(spec: &SynthSpec, symbol: usize) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        rng.set_stream(symbol as u64 + 1);
        let start_price: f64 = rng.random_range(20.0..200.0);
        let tpd = spec.ticks_per_day.max(1) as f64;
        Self {
            log_price: start_price.ln(),
            log_vol: 0.0,
            base_sigma: spec.annual_vol / (252.0 * tpd).sqrt(),
            trending: rng.random_bool(0.5),
            drift: 0.0,
            anchor: start_price.ln(),
            p_leave_trend: 1.0 / (spec.trend_dwell_days * tpd).max(1.0),
            p_leave_revert: 1.0 / (spec.revert_dwell_days * tpd).max(1.0),
            rng,
        }
    }

    fn next_price(&mut self) -> f64 {
        let leave = if self.trending {
            self.p_leave_trend
        } else {
            self.p_leave_revert
        };
        if self.rng.random_bool(leave.min(1.0)) {
            self.trending = !self.trending;
            self.anchor = self.log_price;
            self.drift = 0.0;
        }
        let z: f64 = self.rng.sample(StandardNormal);
        let zv: f64 = self.rng.sample(StandardNormal);
        self.log_vol = 0.999 * self.log_vol + 0.02 * zv;
        let sigma = self.base_sigma * self.log_vol.exp();
        let step = if self.trending {
            let zd: f64 = self.rng.sample(StandardNormal);
            self.drift = 0.9995 * self.drift + 0.0004 * self.base_sigma * zd;
            self.drift + sigma * z
        } else {
            -0.0005 * (self.log_price - self.anchor) + sigma * z
        };
        // Reflect at the price floor so the path does not stick to it.
        self.log_price = (self.log_price + step).abs();
        ((self.log_price.exp() / TICK_GRID).round() * TICK_GRID).max(1.0)
    }
}

/// Generates the dataset described by `spec` under `target` (a local path or URL), one Parquet
/// file per symbol and day (`symbol=S/date=D/part-0.parquet`, one row group, snappy), plus
/// `manifest.json`. Existing files are overwritten.
///
/// # Errors
/// [`DataError::Write`] or [`DataError::Store`] if a file cannot be written.
pub async fn generate(target: &Dataset, spec: &SynthSpec) -> Result<SynthManifest> {
    let (store, root) = target.store()?;
    let kind = if spec.ticks_per_bar.is_some() {
        DataKind::Bars
    } else {
        DataKind::Ticks
    };
    if kind != target.kind() {
        return Err(DataError::Write {
            file: target.url().to_string(),
            reason: format!(
                "the spec generates {kind} but the dataset is declared as {}",
                target.kind()
            ),
        });
    }
    let dates = weekdays(spec.days);
    let mut summaries = Vec::with_capacity(spec.symbols);
    for s in 0..spec.symbols {
        let symbol = format!("S{s:03}");
        let mut path = PathGen::new(spec, s);
        let mut size_rng = ChaCha8Rng::seed_from_u64(spec.seed ^ 0x5eed);
        size_rng.set_stream(s as u64 + 1);
        let mut summary = SymbolSummary {
            symbol: symbol.clone(),
            rows: 0,
            days: dates.len(),
            price_sum_x256: 0,
            first_price: 0.0,
            last_price: 0.0,
        };
        for date in &dates {
            let batch = day_batch(spec, *date, &mut path, &mut size_rng, &mut summary);
            let file = root
                .clone()
                .join(format!("symbol={symbol}"))
                .join(format!("date={date}"))
                .join("part-0.parquet");
            write_parquet(&*store, target, &file, &batch).await?;
        }
        summaries.push(summary);
    }
    let manifest = SynthManifest {
        spec: spec.clone(),
        symbols: summaries,
    };
    let json = serde_json::to_vec_pretty(&manifest).expect("manifest serialises");
    let file = root.clone().join("manifest.json");
    store
        .put(&file, PutPayload::from(json))
        .await
        .map_err(|source| DataError::Store {
            url: target.object_url(&file),
            source,
        })?;
    Ok(manifest)
}

/// One day of one symbol: the next prices of `path`, with jittered times and random sizes,
/// as ticks or bars; `summary` counts them.
fn day_batch(
    spec: &SynthSpec,
    date: NaiveDate,
    path: &mut PathGen,
    size_rng: &mut ChaCha8Rng,
    summary: &mut SymbolSummary,
) -> RecordBatch {
    let day_ns = date
        .signed_duration_since(chrono::DateTime::UNIX_EPOCH.date_naive())
        .num_days()
        * 86_400_000_000_000;
    let n = spec.ticks_per_day;
    let spacing = SESSION_NS / n.max(1) as i64;
    let mut ts = Vec::with_capacity(n);
    let mut price = Vec::with_capacity(n);
    let mut size = Vec::with_capacity(n);
    for i in 0..n {
        let jitter = size_rng.random_range(0..(spacing / 2).max(1));
        ts.push(day_ns + SESSION_OPEN_NS + i as i64 * spacing + jitter);
        let p = path.next_price();
        if summary.rows == 0 && i == 0 {
            summary.first_price = p;
        }
        summary.price_sum_x256 += (p * 256.0) as u64;
        price.push(p);
        size.push(f64::from(size_rng.random_range(1u32..=500)));
    }
    if let Some(&p) = price.last() {
        summary.last_price = p;
    }
    match spec.ticks_per_bar {
        None => {
            summary.rows += n as u64;
            tick_batch(ts, price, size)
        }
        Some(per_bar) => {
            let b = bar_batch(&ts, &price, &size, per_bar.max(1));
            summary.rows += b.num_rows() as u64;
            b
        }
    }
}

/// Writes one day of ticks of `symbol` under `target` (`symbol=S/date=D/part-0.parquet`): the
/// prices `price`, evenly spaced over the 14:30–21:00 UTC session, each of size 100. For data
/// built to a purpose (a planted signal, a test's corner case) beside [`generate`]'s random
/// walks.
///
/// # Errors
/// [`DataError::Write`] or [`DataError::Store`] if the file cannot be written.
pub async fn write_tick_day(
    target: &Dataset,
    symbol: &str,
    date: NaiveDate,
    price: &[f64],
) -> Result<()> {
    let (store, root) = target.store()?;
    let day_ns = date
        .signed_duration_since(chrono::DateTime::UNIX_EPOCH.date_naive())
        .num_days()
        * 86_400_000_000_000;
    let spacing = SESSION_NS / price.len().max(1) as i64;
    let ts = (0..price.len() as i64)
        .map(|i| day_ns + SESSION_OPEN_NS + i * spacing)
        .collect();
    let batch = tick_batch(ts, price.to_vec(), vec![100.0; price.len()]);
    let file = root
        .join(format!("symbol={symbol}"))
        .join(format!("date={date}"))
        .join("part-0.parquet");
    write_parquet(&*store, target, &file, &batch).await
}

/// Generates `spec` under `target` unless `manifest.json` there already records the same spec.
/// Returns whether it generated.
///
/// # Errors
/// As [`generate`].
pub async fn ensure(target: &Dataset, spec: &SynthSpec) -> Result<bool> {
    let (store, root) = target.store()?;
    if let Ok(got) = store.get(&root.clone().join("manifest.json")).await
        && let Ok(bytes) = got.bytes().await
        && let Ok(manifest) = serde_json::from_slice::<SynthManifest>(&bytes)
        && manifest.spec == *spec
    {
        return Ok(false);
    }
    generate(target, spec).await?;
    Ok(true)
}

/// [`ensure`] from synchronous code (builds a small runtime).
///
/// # Errors
/// As [`generate`].
pub fn ensure_blocking(target: &Dataset, spec: &SynthSpec) -> Result<bool> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| DataError::Write {
            file: target.url().to_string(),
            reason: format!("cannot start a runtime: {e}"),
        })?
        .block_on(ensure(target, spec))
}

fn tick_batch(ts: Vec<i64>, price: Vec<f64>, size: Vec<f64>) -> RecordBatch {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(TimestampNanosecondArray::from(ts).with_timezone("UTC")),
        Arc::new(Float64Array::from(price)),
        Arc::new(Float64Array::from(size)),
    ];
    RecordBatch::try_new(table_schema(DataKind::Ticks), columns).expect("tick schema matches")
}

fn bar_batch(ts: &[i64], price: &[f64], size: &[f64], per_bar: usize) -> RecordBatch {
    let mut out: [Vec<f64>; 5] = Default::default();
    let mut bar_ts = Vec::new();
    for ((t, p), s) in ts
        .chunks(per_bar)
        .zip(price.chunks(per_bar))
        .zip(size.chunks(per_bar))
    {
        bar_ts.push(t[0]);
        out[0].push(p[0]);
        out[1].push(p.iter().copied().fold(f64::MIN, f64::max));
        out[2].push(p.iter().copied().fold(f64::MAX, f64::min));
        out[3].push(p[p.len() - 1]);
        out[4].push(s.iter().sum());
    }
    let mut columns: Vec<ArrayRef> = vec![Arc::new(
        TimestampNanosecondArray::from(bar_ts).with_timezone("UTC"),
    )];
    columns.extend(
        out.into_iter()
            .map(|c| Arc::new(Float64Array::from(c)) as ArrayRef),
    );
    RecordBatch::try_new(table_schema(DataKind::Bars), columns).expect("bar schema matches")
}

/// Writes one record batch as a Parquet object (one row group, snappy).
///
/// # Errors
/// [`DataError::Write`] or [`DataError::Store`].
pub async fn write_parquet(
    store: &dyn ObjectStore,
    dataset: &Dataset,
    file: &Path,
    batch: &RecordBatch,
) -> Result<()> {
    let url = dataset.object_url(file);
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(batch.num_rows().max(1)))
        .build();
    let mut buf = Vec::new();
    let write = |buf: &mut Vec<u8>| -> std::result::Result<(), String> {
        let mut w =
            ArrowWriter::try_new(buf, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
        w.write(batch).map_err(|e| e.to_string())?;
        w.close().map_err(|e| e.to_string())?;
        Ok(())
    };
    write(&mut buf).map_err(|reason| DataError::Write {
        file: url.clone(),
        reason,
    })?;
    store
        .put(file, PutPayload::from(buf))
        .await
        .map_err(|source| DataError::Store { url, source })?;
    Ok(())
}
