//! Everything a strategy author needs: `use gridtest::prelude::*;`.

pub use crate::Params;
pub use crate::broker::{Broker, BrokerModel, Order, Size};
pub use crate::indicators::{
    Atr, Bollinger, Ewm, RollingMax, RollingMean, RollingMin, RollingStd, Rsi, Sma, ZScore,
};
pub use crate::params::{Grid, ParamKind, ParamSet, ParamValue};
pub use crate::strategy::{
    Bars, Cursor, GpuCode, RegisteredStrategy, Slice, Strategy, Ticks, pack_numeric,
};
pub use crate::sweep::Sweep;
pub use crate::{ExecModel, RankMetric};
