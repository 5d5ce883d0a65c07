//! The `Strategy` trait a researcher implements, the feeds it can consume, and the cursor through
//! which it sees the data.
//!
//! A strategy sees each event (tick or bar) of a shard in time order through a [`Cursor`] and
//! returns a **target position**: a fraction of equity, `1.0` fully long, `-1.0` fully short,
//! `0.0` flat. The engine executes that target at the next event (see [`crate::engine`]). The
//! cursor can look back up to [`Strategy::lookback`] events, across day boundaries; before the
//! first event of the shard, lookback reads return `0.0` (and timestamp `0`), so rolling sums
//! need no warm-up branch (use [`Cursor::index`] to know how many events came before).

use serde::{Deserialize, Serialize};

use crate::broker::Broker;
use crate::params::{ParamError, ParamSet, ParamValue, Params};

mod carry;
mod cursor;
mod indicator;
mod shared;
mod slice;

pub use carry::CarryError;
#[doc(hidden)]
pub use carry::{restore as restore_carried, save as save_carried};
pub use cursor::Cursor;
pub use indicator::Indicator;
pub(crate) use shared::AnySeries;
pub use shared::{MAX_SHARED, MeanKey, Series, SharedMean, SharedSeries, Tile};
pub(crate) use slice::Quotes;
pub use slice::Slice;

/// The two kinds of market data gridtest replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataKind {
    /// Trades: `ts`, `price`, `size`.
    Ticks,
    /// OHLCV bars: `ts`, `open`, `high`, `low`, `close`, `volume`.
    Bars,
}

impl DataKind {
    /// The value columns after `ts`, in order.
    #[must_use]
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            Self::Ticks => Ticks::COLUMNS,
            Self::Bars => Bars::COLUMNS,
        }
    }

    /// The column positions are marked to (ticks: `price`; bars: `close`).
    #[must_use]
    pub fn mark_column(self) -> usize {
        match self {
            Self::Ticks => Ticks::MARK,
            Self::Bars => Bars::MARK,
        }
    }

    /// Columns that hold prices (must be finite and positive).
    #[must_use]
    pub fn price_columns(self) -> &'static [&'static str] {
        match self {
            Self::Ticks => &["price"],
            Self::Bars => &["open", "high", "low", "close"],
        }
    }
}

impl std::fmt::Display for DataKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Ticks => "ticks",
            Self::Bars => "bars",
        })
    }
}

/// The most value columns a feed has (bars: open, high, low, close, volume).
pub const MAX_COLUMNS: usize = 5;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Ticks {}
    impl Sealed for super::Bars {}
}

/// A kind of data a strategy consumes: [`Ticks`] or [`Bars`]. Sealed.
pub trait Feed: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The data kind.
    const KIND: DataKind;
    /// Value columns after `ts`.
    const COLUMNS: &'static [&'static str];
    /// Column whose value at event t+1 fills a decision taken at t.
    const FILL: usize;
    /// Column at which positions are marked at the end of each event.
    const MARK: usize;
    /// Columns of the event's highest and lowest price (ticks: the price).
    const HIGH: usize;
    /// See [`Feed::HIGH`].
    const LOW: usize;
    /// Whether an event spans two prices (bars: fill at the open, mark at the close).
    const INTRABAR: bool;
}

/// Trade ticks. Decisions fill at the next tick's price.
#[derive(Clone, Copy, Debug)]
pub struct Ticks;

/// OHLCV bars. Decisions fill at the next bar's open; positions are marked at each close.
#[derive(Clone, Copy, Debug)]
pub struct Bars;

impl Feed for Ticks {
    const KIND: DataKind = DataKind::Ticks;
    const COLUMNS: &'static [&'static str] = &["price", "size"];
    const FILL: usize = 0;
    const MARK: usize = 0;
    const HIGH: usize = 0;
    const LOW: usize = 0;
    const INTRABAR: bool = false;
}

impl Feed for Bars {
    const KIND: DataKind = DataKind::Bars;
    const COLUMNS: &'static [&'static str] = &["open", "high", "low", "close", "volume"];
    const FILL: usize = 0;
    const MARK: usize = 3;
    const HIGH: usize = 1;
    const LOW: usize = 2;
    const INTRABAR: bool = true;
}

/// A trading strategy: state built from one parameter set, fed every event of a shard in order.
///
/// The engine runs many instances side by side (one per parameter set) and calls
/// [`Strategy::on_data`] in its innermost loop, monomorphised for the concrete type: keep it free
/// of allocation and I/O. A panic fails only the cell (parameter set × shard) it happens in.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::prelude::*;
///
/// #[derive(Params, Clone, Debug)]
/// pub struct MomentumParams { pub window: usize }
///
/// /// Long when the price is above its level `window` ticks ago.
/// pub struct Momentum { window: usize }
///
/// #[gridtest::strategy(name = "doc_momentum")]
/// impl Strategy for Momentum {
///     type Params = MomentumParams;
///     type Feed = Ticks;
///     fn new(p: &MomentumParams) -> Self { Self { window: p.window } }
///     fn lookback(&self) -> usize { self.window }
///     fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
///         let ready = now.index() >= self.window as u64;
///         if ready && now.price() > now.price_back(self.window) { 1.0 } else { 0.0 }
///     }
/// }
/// assert_eq!(<Momentum as RegisteredStrategy>::NAME, "doc_momentum");
/// ```
pub trait Strategy: Send + Sized + 'static {
    /// The parameter struct (`#[derive(Params)]`).
    type Params: Params;
    /// [`Ticks`] or [`Bars`].
    type Feed: Feed;

    /// Builds the state for one parameter set. May panic on parameters it rejects (that cell
    /// fails with the message).
    fn new(params: &Self::Params) -> Self;

    /// How many past events [`Strategy::on_data`] may read through the cursor. Default 0.
    fn lookback(&self) -> usize {
        0
    }

    /// The indicator series this parameter set reads that others may share (a moving average
    /// keyed by its window, say): each distinct series of a unit is computed once per tile,
    /// and [`Cursor::shared`] reads it by the slot [`SharedSeries::add`] returned (0, 1, … in
    /// order). Default: none, every lane keeps its own state. At most [`MAX_SHARED`]; the
    /// targets and orders paths read them (a universe strategy declaring one fails its cells).
    /// See [`SharedMean`] for an example.
    fn shared(params: &Self::Params, series: &mut SharedSeries<Self::Feed>) {
        let _ = (params, series);
    }

    /// The targets path (the fast one): sees one event and returns the target position, a
    /// fraction of equity. The engine executes it at the next event; `NaN` fails the cell, and
    /// values beyond the execution model's `max_leverage` are clamped.
    ///
    /// A strategy implements this or [`Strategy::on_orders`]; `#[gridtest::strategy]` checks
    /// that it does one of them. Called on a strategy that implements neither, it panics (which
    /// fails the cell, naming the strategy).
    fn on_data(&mut self, now: &Cursor<'_, Self::Feed>) -> f64 {
        let _ = now;
        panic!(
            "{} implements none of on_data, on_orders, on_universe (an unregistered strategy \
             with on_orders or on_universe also states `const ORDERS: bool = true` or \
             `const UNIVERSE: bool = true`)",
            std::any::type_name::<Self>()
        )
    }

    /// Whether the engine runs the orders path ([`Strategy::on_orders`], a [`Broker`] of cash,
    /// whole lots and orders per lane) instead of the targets path. `#[gridtest::strategy]` sets
    /// it when the impl defines `on_orders`. Decided at compile time: each path is a loop of its
    /// own, monomorphised for the strategy.
    const ORDERS: bool = false;

    /// The orders path: sees one event and may place orders through `broker`, or read its
    /// position, cash and equity (see [`crate::broker`]). Orders fill from the next event on.
    /// The default trades [`Strategy::on_data`]'s target in whole lots
    /// ([`Broker::target`]), so a targets strategy with `const ORDERS: bool = true` runs with
    /// cash, lots and the broker's fees.
    fn on_orders(&mut self, now: &Cursor<'_, Self::Feed>, broker: &mut Broker) {
        broker.target(self.on_data(now));
    }

    /// Whether the engine gives the strategy its account on the cursor ([`Cursor::equity`],
    /// [`Cursor::position`], [`Cursor::cash`]) on the targets path: a store per event that
    /// strategies which do not read it should not pay. `#[gridtest::strategy]` sets it when the
    /// impl calls a method named `equity`, `position` or `cash`; state it yourself when the
    /// cursor is read in a helper outside the impl (reading it undeclared panics, failing the
    /// cell with a message that says so). The orders path always fills it.
    const ACCOUNT: bool = false;

    /// Whether the strategy trades a universe of symbols together ([`Strategy::on_universe`],
    /// the portfolio path). `#[gridtest::strategy]` sets it when the impl defines
    /// `on_universe`.
    const UNIVERSE: bool = false;

    /// The portfolio path: sees the universe at one timestamp (every member's latest event,
    /// see [`Slice`]) and sets `targets[m]`, the fraction of the shared account's equity to
    /// hold in member `m` (the universe's order). `targets` keeps its values between calls
    /// (all 0 at the start), so a strategy writes only what changes. Each member's new target
    /// fills at that member's next event (next tick's price, next bar's open); one account of
    /// cash and units carries the book. `NaN` fails the cell; values beyond `max_leverage` are
    /// clamped per member. See `docs/execution-model.md` § Universes.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::prelude::*;
    ///
    /// #[derive(Params, Clone, Debug)]
    /// pub struct EqualParams { pub long: bool }
    ///
    /// /// Equal weights across the universe, once every member has traded.
    /// pub struct EqualWeight { long: bool }
    ///
    /// #[gridtest::strategy(name = "doc_equal_weight")]
    /// impl Strategy for EqualWeight {
    ///     type Params = EqualParams;
    ///     type Feed = Bars;
    ///     fn new(p: &EqualParams) -> Self { Self { long: p.long } }
    ///     fn on_universe(&mut self, now: &Slice<'_, Bars>, targets: &mut [f64]) {
    ///         let ready = (0..now.len()).all(|m| now.has(m));
    ///         let w = if ready && self.long { 1.0 / now.len() as f64 } else { 0.0 };
    ///         targets.fill(w);
    ///     }
    /// }
    /// assert!(<EqualWeight as Strategy>::UNIVERSE);
    /// ```
    fn on_universe(&mut self, now: &Slice<'_, Self::Feed>, targets: &mut [f64]) {
        let _ = (now, targets);
        panic!(
            "{} trades one symbol at a time (on_data or on_orders): implement on_universe to \
             trade a universe",
            std::any::type_name::<Self>()
        )
    }

    /// Whether the lanes of this strategy can be saved between two slices of a history and
    /// restored later ([`Strategy::save_state`], [`Strategy::restore_state`]), so that a long
    /// history runs a slice of days at a time and an eviction loses at most a slice.
    /// `#[gridtest::strategy(name = "…", carry)]` sets it and implements both through serde
    /// (the type derives `Serialize` and `Deserialize`; `gridtest::serde` spares a dependency
    /// of its own). [`crate::engine::Chain`] runs such a strategy slice after slice.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::prelude::*;
    /// use gridtest::serde::{Deserialize, Serialize};
    ///
    /// #[derive(Params, Clone, Debug)]
    /// pub struct P { pub window: usize }
    ///
    /// #[derive(Serialize, Deserialize)]
    /// #[serde(crate = "gridtest::serde")]
    /// pub struct Trend { mean: RollingMean }
    ///
    /// #[gridtest::strategy(name = "doc_carried_trend", carry)]
    /// impl Strategy for Trend {
    ///     type Params = P;
    ///     type Feed = Ticks;
    ///     fn new(p: &P) -> Self { Self { mean: RollingMean::new(p.window) } }
    ///     fn lookback(&self) -> usize { self.mean.window() }
    ///     fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
    ///         self.mean.push(now.price(), now.price_back(self.mean.window()));
    ///         if now.price() > self.mean.mean() { 1.0 } else { 0.0 }
    ///     }
    /// }
    /// assert!(<Trend as Strategy>::CARRY);
    /// ```
    const CARRY: bool = false;

    /// The strategy's state, encoded. The default (a strategy that does not carry) refuses.
    ///
    /// # Errors
    /// [`CarryError::NotCarried`] unless the strategy declares [`Strategy::CARRY`].
    fn save_state(&self) -> Result<Vec<u8>, CarryError> {
        Err(CarryError::NotCarried {
            strategy: std::any::type_name::<Self>(),
        })
    }

    /// Replaces the state by one [`Strategy::save_state`] encoded.
    ///
    /// # Errors
    /// [`CarryError::NotCarried`] unless the strategy declares [`Strategy::CARRY`]; a state
    /// that does not decode.
    fn restore_state(&mut self, saved: &[u8]) -> Result<(), CarryError> {
        let _ = saved;
        Err(CarryError::NotCarried {
            strategy: std::any::type_name::<Self>(),
        })
    }

    /// The same strategy as CUDA C device code, for GPU scorers (gridtest-cuda). `None` (the
    /// default): the strategy runs on CPU scorers only. See [`GpuCode`] for the ABI.
    #[must_use]
    fn gpu_code() -> Option<GpuCode> {
        None
    }
}

/// A strategy's per-event step as CUDA C, run by gridtest-cuda with the same execution model as
/// the CPU engine (one thread per parameter set).
///
/// The source defines two device functions:
///
/// ```c
/// // Called once per lane before the first event. `state` has `state_len` doubles, zeroed.
/// __device__ void gt_init(double* state, const double* params);
/// // Called for every event; returns the target weight. `col[c][-k]` is column c (ticks:
/// // 0 price, 1 size; bars: 0 open .. 4 volume) k events back, for k up to the lane's
/// // lookback (0.0 before the shard's start); `index` counts events before this one.
/// __device__ double gt_step(double* state, const double* params,
///                           const double* const* col, long long index);
/// ```
///
/// `params` holds the lane's parameters as produced by `pack` (by default [`pack_numeric`]:
/// the `Params` fields in declaration order, ints and bools as doubles).
///
/// A strategy that declares shared means ([`Strategy::shared`] with [`SharedMean`]s) reads
/// them as on the CPU: `gt_shared(col, slot)` is `Cursor::shared(slot)`, the lane's series
/// `slot` at the current event. Each block computes each distinct mean of its lanes once per
/// staged stretch of events, bit-identical to the CPU's; other [`Series`] types have no
/// device form (the GPU path refuses the strategy, naming the series). The device code must
/// compute exactly what `on_data` computes: gridtest compiles it without FMA contraction, so
/// the same IEEE operations in the same order give the same bits.
#[derive(Clone, Copy, Debug)]
pub struct GpuCode {
    /// CUDA C defining `gt_init` and `gt_step`.
    pub source: &'static str,
    /// Doubles of per-lane state.
    pub state_len: usize,
    /// Packs one parameter set for the device.
    pub pack: fn(&ParamSet) -> Result<Vec<f64>, ParamError>,
}

/// Packs the fields of `P` in declaration order as doubles (ints and floats as values, bools as
/// 0/1); a `String` (choice) field cannot be packed.
///
/// # Errors
/// [`ParamError::Missing`] or [`ParamError::Mismatch`].
pub fn pack_numeric<P: Params>(set: &ParamSet) -> Result<Vec<f64>, ParamError> {
    P::schema()
        .iter()
        .map(|field| {
            let value = set.get(field.name).ok_or_else(|| ParamError::Missing {
                set: set.to_string(),
                field: field.name,
            })?;
            match value {
                ParamValue::Int(i) => Ok(*i as f64),
                ParamValue::Float(x) => Ok(*x),
                ParamValue::Bool(b) => Ok(f64::from(u8::from(*b))),
                ParamValue::Choice(_) => Err(ParamError::Mismatch {
                    set: set.to_string(),
                    field: field.name,
                    value: value.to_string(),
                    rust_type: "f64 (choices need a custom GpuCode::pack)",
                }),
            }
        })
        .collect()
}

/// A strategy registered with `#[gridtest::strategy]`: it has a name any node can find it by.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a registered strategy",
    label = "`{Self}` is not registered",
    note = "put `#[gridtest::strategy(name = \"…\")]` on its `impl Strategy for {Self}` block, \
            so that every node can find it by that name"
)]
pub trait RegisteredStrategy: Strategy {
    /// Registered name.
    const NAME: &'static str;
    /// Version (the `version = "…"` argument, or the defining crate's version).
    const VERSION: &'static str;
    /// The defining crate, `name version` (recorded in every sweep's spec).
    const CRATE: &'static str;
}
