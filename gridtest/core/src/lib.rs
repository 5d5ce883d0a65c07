//! # gridtest-core
//!
//! The lowest layer of [gridtest](https://docs.rs/gridtest): what one parameter set over one
//! shard needs, with no actors, no network between nodes, no command line and no printing.
//! Users depend on `gridtest`, which re-exports these modules under the same paths
//! (`gridtest::engine`, `gridtest::data`, …); this crate exists so that Cargo, not a text scan,
//! keeps the layers above from being imported here.
//!
//! | module | what lives there |
//! | --- | --- |
//! | [`params`] | parameter sets, grids and their constraints (`GridError`, `ParamError`) |
//! | [`metrics`] | the figures of a cell and how they rank |
//! | [`storage`] | locations of data and results: local paths and S3 URLs (`LocationError`) |
//! | [`indicators`] | rolling indicators with pandas' conventions |
//! | [`research`] | statistics over many sets: DSR, effective trials, PBO, walk-forward |
//! | [`broker`] | the orders path's book of cash, trades and orders |
//! | [`progress`] | a sweep's progress and fleet snapshot as published |
//! | [`strategy`](mod@strategy) | the contract a researcher implements: `Strategy`, `Feed`, `Cursor`, `Slice` |
//! | [`data`] | datasets, the strict layout, shards, loading through DataFusion (`DataError`) |
//! | [`engine`] | one shard × many parameter sets: the hot loop, execution model, cell outcomes |
//! | [`registry`] | strategies by name (linkme) and their entry points (`StrategyError`) |

// The derive and attribute macros expand to `::gridtest::…` paths; inside this crate (its
// unit tests register strategies) that name is this crate.
extern crate self as gridtest;

pub mod broker;
pub mod data;
pub mod engine;
pub mod indicators;
pub mod metrics;
pub mod params;
pub mod progress;
pub mod registry;
pub mod research;
pub mod storage;
pub mod strategy;

pub use engine::ExecModel;
pub use gridtest_macros::{Choice, Params, strategy};
pub use metrics::{Metrics, RankMetric};
pub use params::{
    CmpOp, Constraint, Grid, GridError, Operand, ParamError, ParamKind, ParamSet, ParamSetId,
    ParamValue, Params,
};
pub use strategy::{
    Bars, Cursor, DataKind, Feed, GpuCode, MAX_SHARED, MeanKey, RegisteredStrategy, Series,
    SharedMean, SharedSeries, Slice, Strategy, Ticks, Tile, pack_numeric,
};

/// What the macros' expansions name; not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::params::{ParamField, ParamType, TypedField, typed};
    pub use crate::registry::{STRATEGIES, StrategyEntry, entry};
    pub use linkme;
}

/// serde, for `#[derive(Serialize, Deserialize)]` on a strategy that carries its state
/// (`#[serde(crate = "gridtest::serde")]`), without a dependency of its own.
pub use serde;

/// What a strategy author imports: the strategy contract, parameters and grids, indicators,
/// the orders path and the execution model's conventions. `gridtest::prelude` adds `Sweep`.
pub mod prelude {
    pub use crate::broker::{Broker, BrokerModel, Order, Size};
    pub use crate::indicators::{
        Atr, Bollinger, Ewm, RollingMax, RollingMean, RollingMin, RollingStd, Rsi, Sma, ZScore,
    };
    pub use crate::params::{Grid, ParamKind, ParamSet, ParamValue, float_range};
    pub use crate::strategy::{
        Bars, Cursor, Feed, GpuCode, Indicator, RegisteredStrategy, Series, SharedMean,
        SharedSeries, Slice, Strategy, Ticks, Tile, pack_numeric,
    };
    pub use crate::{Choice, Params};
    pub use crate::{ExecModel, RankMetric};

    pub use crate::engine::{
        ExposureBasis, FirstReturn, ProfitFactorBasis, RatioConvention, ReversalFee, ZeroDeviation,
    };
    pub use crate::metrics::DrawdownSign;
}
