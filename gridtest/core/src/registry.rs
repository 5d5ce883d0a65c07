//! The strategy registry: every `#[gridtest::strategy]` adds an entry to a link-time slice
//! (linkme), so any node can instantiate a strategy from its name with no list kept by hand.
//!
//! Rust links only crates a binary references: strategies defined in another crate are found
//! once the binary mentions that crate (e.g. `use my_strategies as _;`).

use std::any::type_name;

use linkme::distributed_slice;

mod chain_run;
mod code;
pub use chain_run::ChainRun;
pub use code::{CodeMismatch, CodeVersion};

use crate::data::{DataError, FeedBatch, ShardData};
use crate::engine::{self, CellOutcome, CellTrace, ExecModel, Keep, Recorded};
use crate::params::{ParamField, ParamSet, Params};
use crate::strategy::{DataKind, Feed, MeanKey, RegisteredStrategy, SharedSeries, Strategy};

/// Runs a chunk of parameter sets over a loaded shard with a concrete strategy type, returning
/// one outcome per set, in order.
pub type RunChunk = fn(&ShardData, &[ParamSet], &ExecModel) -> Vec<CellOutcome>;

/// The streaming form of [`RunChunk`] (see [`engine::run_source`]).
pub type RunSource = fn(
    &mut dyn Iterator<Item = Result<FeedBatch, DataError>>,
    DataKind,
    u32,
    &[ParamSet],
    &ExecModel,
) -> Result<Vec<CellOutcome>, DataError>;

/// [`RunChunk`] that keeps each cell's daily returns or round trips (see
/// [`engine::run_chunk_with`]).
pub type RunChunkRecording = fn(&ShardData, &[ParamSet], &ExecModel, Keep) -> Recorded;

/// [`RunSource`] that keeps each cell's daily returns or round trips.
pub type RunSourceRecording = fn(
    &mut dyn Iterator<Item = Result<FeedBatch, DataError>>,
    (DataKind, u32),
    &[ParamSet],
    &ExecModel,
    Keep,
) -> Result<Recorded, DataError>;

/// Runs one parameter set over a loaded shard with every fill and the equity curve recorded
/// (see [`engine::trace_cell`]).
pub type TraceCell = fn(&ShardData, &ParamSet, &ExecModel) -> (CellOutcome, CellTrace);

/// Starts (or, given a checkpoint's bytes, resumes) a chain of slices of one history (see
/// [`engine::Chain`]), keeping each cell's daily returns or round trips as asked.
pub type StartChain = fn(
    &[ParamSet],
    &ExecModel,
    Option<&[u8]>,
    Keep,
) -> Result<Box<dyn ChainRun>, engine::CheckpointError>;

/// A registered strategy, type-erased: what a node needs to run it by name.
#[derive(Clone, Copy)]
pub struct StrategyEntry {
    /// Registered name.
    pub name: &'static str,
    /// Version.
    pub version: &'static str,
    /// The defining crate, `name version`.
    pub crate_version: &'static str,
    /// Rust type name (for messages).
    pub type_name: fn() -> &'static str,
    /// The data it consumes.
    pub kind: DataKind,
    /// Whether it trades a universe of symbols ([`Strategy::on_universe`]).
    pub universe: bool,
    /// Whether it trades through orders ([`Strategy::on_orders`]).
    pub orders: bool,
    /// Its parameter fields.
    pub schema: fn() -> &'static [ParamField],
    /// Its engine entry point.
    pub run: RunChunk,
    /// Its streaming engine entry point.
    pub run_source: RunSource,
    /// Its engine entry point that keeps daily returns or round trips.
    pub run_recording: RunChunkRecording,
    /// Its streaming engine entry point that keeps daily returns or round trips.
    pub run_source_recording: RunSourceRecording,
    /// Its engine entry point that traces one cell's fills and equity.
    pub trace: TraceCell,
    /// Whether its lanes' state can be carried from one slice of a history to the next
    /// ([`Strategy::CARRY`]).
    pub carry: bool,
    /// Its engine entry point over a history slice after slice.
    pub chain: StartChain,
    /// Its device code, if it has a GPU implementation.
    pub gpu: fn() -> Option<super::GpuCode>,
    /// Builds the CPU strategy for a parameter set and returns its lookback (the GPU path needs
    /// it); `None` if the set does not fit.
    pub lookback: fn(&ParamSet) -> Option<usize>,
    /// The shared series a parameter set declares, as a device computes them (the GPU path
    /// needs them).
    pub device_series: fn(&ParamSet) -> DeviceSeries,
    /// The first shared series a parameter set declares whose state cannot be carried from one
    /// slice of a history to the next (its Rust type), if any.
    pub uncarried_series: fn(&ParamSet) -> Option<&'static str>,
}

/// The shared series ([`Strategy::shared`]) one parameter set declares, as a device sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSeries {
    /// Rolling means ([`SharedMean`](crate::SharedMean)), slot by slot; empty when the set
    /// declares none.
    Means(Vec<MeanKey>),
    /// A declared series that is not a [`SharedMean`](crate::SharedMean): no device computes
    /// it (its Rust type).
    Unsupported(&'static str),
    /// The set does not fit the strategy's parameters, or `shared` panicked (the CPU engine
    /// fails the cell the same way).
    Refused,
}

impl std::fmt::Debug for StrategyEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrategyEntry")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("type", &(self.type_name)())
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// The entry for `S`; used by `#[gridtest::strategy]`.
#[doc(hidden)]
#[must_use]
pub const fn entry<S: RegisteredStrategy>() -> StrategyEntry {
    StrategyEntry {
        name: S::NAME,
        version: S::VERSION,
        crate_version: S::CRATE,
        type_name: type_name::<S>,
        kind: <S::Feed as Feed>::KIND,
        universe: S::UNIVERSE,
        orders: S::ORDERS,
        schema: <<S as Strategy>::Params as Params>::schema,
        run: engine::run_chunk::<S>,
        run_source: engine::run_source::<S>,
        run_recording: engine::run_chunk_with::<S>,
        run_source_recording: engine::run_source_with::<S>,
        trace: engine::trace_cell::<S>,
        carry: S::CARRY,
        chain: chain_run::start_chain::<S>,
        gpu: gpu_code_of::<S>,
        lookback: lookback_of::<S>,
        device_series: device_series_of::<S>,
        uncarried_series: uncarried_series_of::<S>,
    }
}

/// `S`'s GPU code, unless it trades through orders or over a universe (the GPU kernels run the
/// single-symbol targets path only).
fn gpu_code_of<S: Strategy>() -> Option<super::GpuCode> {
    if S::ORDERS || S::UNIVERSE {
        None
    } else {
        S::gpu_code()
    }
}

fn lookback_of<S: Strategy>(set: &ParamSet) -> Option<usize> {
    let params = <S::Params as Params>::from_param_set(set).ok()?;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| S::new(&params).lookback())).ok()
}

/// The series `set` declares; `None` when it does not fit or `shared` panics.
fn declared_series<S: Strategy>(set: &ParamSet) -> Option<SharedSeries<S::Feed>> {
    let params = <S::Params as Params>::from_param_set(set).ok()?;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut series = SharedSeries::<S::Feed>::default();
        S::shared(&params, &mut series);
        series
    }))
    .ok()
}

fn device_series_of<S: Strategy>(set: &ParamSet) -> DeviceSeries {
    match declared_series::<S>(set).map(|series| series.mean_keys()) {
        Some(Ok(keys)) => DeviceSeries::Means(keys),
        Some(Err(type_name)) => DeviceSeries::Unsupported(type_name),
        None => DeviceSeries::Refused,
    }
}

fn uncarried_series_of<S: Strategy>(set: &ParamSet) -> Option<&'static str> {
    declared_series::<S>(set)?.uncarried()
}

/// Every registered strategy, in link order.
#[doc(hidden)]
#[distributed_slice]
pub static STRATEGIES: [StrategyEntry];

/// Errors looking a strategy up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrategyError {
    /// No strategy has that name in this binary.
    #[error("no strategy named `{name}` is registered in this binary (registered: {known})")]
    Unknown {
        /// The requested name.
        name: String,
        /// The registered names.
        known: String,
    },
    /// Two strategies share a name.
    #[error("strategy name `{name}` is registered twice: by `{first}` and by `{second}`")]
    Duplicate {
        /// The name.
        name: String,
        /// One type.
        first: String,
        /// The other type.
        second: String,
    },
}

/// All registered strategies, sorted by name.
#[must_use]
pub fn registered() -> Vec<&'static StrategyEntry> {
    let mut all: Vec<_> = STRATEGIES.iter().collect();
    all.sort_by_key(|e| e.name);
    all
}

/// Finds a registered strategy by name.
///
/// # Errors
/// [`StrategyError::Unknown`] if none has the name, [`StrategyError::Duplicate`] if two do.
pub fn find_strategy(name: &str) -> Result<&'static StrategyEntry, StrategyError> {
    let mut hits = STRATEGIES.iter().filter(|e| e.name == name);
    let first = hits.next().ok_or_else(|| StrategyError::Unknown {
        name: name.to_owned(),
        known: registered()
            .iter()
            .map(|e| e.name)
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    if let Some(second) = hits.next() {
        return Err(StrategyError::Duplicate {
            name: name.to_owned(),
            first: (first.type_name)().to_owned(),
            second: (second.type_name)().to_owned(),
        });
    }
    Ok(first)
}
