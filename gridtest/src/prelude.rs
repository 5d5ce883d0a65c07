//! Everything a strategy author needs: `use gridtest::prelude::*;`.

pub use crate::broker::{Broker, BrokerModel, Order, Size};
pub use crate::indicators::{
    Atr, Bollinger, Ewm, RollingMax, RollingMean, RollingMin, RollingStd, Rsi, Sma, ZScore,
};
pub use crate::params::{Grid, ParamKind, ParamSet, ParamValue, float_range};
pub use crate::strategy::{
    Bars, Cursor, Feed, GpuCode, Indicator, RegisteredStrategy, Series, SharedMean, SharedSeries,
    Slice, Strategy, Ticks, Tile, pack_numeric,
};
pub use crate::sweep::Sweep;
pub use crate::{Choice, Params};
pub use crate::{ExecModel, RankMetric};

/// The execution model's conventions, to match a peer (`docs/execution-model.md`,
/// *Conventions*): `ExecModel::default().with_ratios(RatioConvention::Geometric)`.
pub use crate::engine::{
    ExposureBasis, FirstReturn, ProfitFactorBasis, RatioConvention, ReversalFee, ZeroDeviation,
};
pub use crate::metrics::DrawdownSign;
