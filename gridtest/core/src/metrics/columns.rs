//! The one table of metric columns: name, kind and accessor of every figure of [`Metrics`], in
//! output order. CSV and Parquet output, replay's bitwise comparison and ranking all read it, so
//! a new metric is added here once.

use super::Metrics;

/// A metric's value: a count or a real number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricValue {
    /// A count (events, trades).
    Count(u64),
    /// A real number (returns, ratios).
    Real(f64),
}

impl MetricValue {
    /// The value's bits, for bit-for-bit comparison (NaN equals NaN of the same bits).
    #[must_use]
    pub fn bits(self) -> u64 {
        match self {
            Self::Count(n) => n,
            Self::Real(x) => x.to_bits(),
        }
    }

    /// The value as a count (a real is truncated toward zero, saturating).
    #[must_use]
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "documented: truncation and saturation"
    )]
    pub fn as_count(self) -> u64 {
        match self {
            Self::Count(n) => n,
            Self::Real(x) => x as u64,
        }
    }

    /// The value as `f64`.
    #[must_use]
    #[allow(
        clippy::cast_precision_loss,
        reason = "counts are far below 2^53 in practice"
    )]
    pub fn as_f64(self) -> f64 {
        match self {
            Self::Count(n) => n as f64,
            Self::Real(x) => x,
        }
    }
}

impl std::fmt::Display for MetricValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Count(n) => n.fmt(f),
            Self::Real(x) => x.fmt(f),
        }
    }
}

/// One metric column.
#[derive(Clone, Copy, Debug)]
pub struct MetricColumn {
    /// Column name in the results.
    pub name: &'static str,
    /// Whether it is a count (else a real number).
    pub is_count: bool,
    /// Its value in a cell's metrics.
    pub value: fn(&Metrics) -> MetricValue,
    /// Sets it in a cell's metrics (a count from a real is truncated, and the reverse widened).
    pub set: fn(&mut Metrics, MetricValue),
}

/// Every metric column, in output order.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::metrics::METRIC_COLUMNS;
/// let names: Vec<&str> = METRIC_COLUMNS.iter().map(|c| c.name).collect();
/// assert_eq!(names[..3], ["n_ticks", "trades", "total_return"]);
/// ```
pub const METRIC_COLUMNS: [MetricColumn; 11] = [
    MetricColumn {
        name: "n_ticks",
        is_count: true,
        value: |m| MetricValue::Count(m.n_ticks),
        set: |m, v| m.n_ticks = v.as_count(),
    },
    MetricColumn {
        name: "trades",
        is_count: true,
        value: |m| MetricValue::Count(m.trades),
        set: |m, v| m.trades = v.as_count(),
    },
    MetricColumn {
        name: "total_return",
        is_count: false,
        value: |m| MetricValue::Real(m.total_return),
        set: |m, v| m.total_return = v.as_f64(),
    },
    MetricColumn {
        name: "max_drawdown",
        is_count: false,
        value: |m| MetricValue::Real(m.max_drawdown),
        set: |m, v| m.max_drawdown = v.as_f64(),
    },
    MetricColumn {
        name: "sharpe",
        is_count: false,
        value: |m| MetricValue::Real(m.sharpe),
        set: |m, v| m.sharpe = v.as_f64(),
    },
    MetricColumn {
        name: "sortino",
        is_count: false,
        value: |m| MetricValue::Real(m.sortino),
        set: |m, v| m.sortino = v.as_f64(),
    },
    MetricColumn {
        name: "round_trips",
        is_count: true,
        value: |m| MetricValue::Count(m.round_trips),
        set: |m, v| m.round_trips = v.as_count(),
    },
    MetricColumn {
        name: "win_rate",
        is_count: false,
        value: |m| MetricValue::Real(m.win_rate),
        set: |m, v| m.win_rate = v.as_f64(),
    },
    MetricColumn {
        name: "profit_factor",
        is_count: false,
        value: |m| MetricValue::Real(m.profit_factor),
        set: |m, v| m.profit_factor = v.as_f64(),
    },
    MetricColumn {
        name: "exposure",
        is_count: false,
        value: |m| MetricValue::Real(m.exposure),
        set: |m, v| m.exposure = v.as_f64(),
    },
    MetricColumn {
        name: "open_at_end",
        is_count: true,
        value: |m| MetricValue::Count(u64::from(m.open_at_end)),
        set: |m, v| m.open_at_end = v.as_count() != 0,
    },
];

/// The column named `name`.
#[must_use]
pub fn metric_column(name: &str) -> Option<&'static MetricColumn> {
    METRIC_COLUMNS.iter().find(|c| c.name == name)
}

/// Metrics from their column values: `value(k, column)` gives the value of the `k`-th column
/// of [`METRIC_COLUMNS`].
#[must_use]
pub fn metrics_from(value: impl Fn(usize, &MetricColumn) -> MetricValue) -> Metrics {
    let mut m = Metrics::default();
    for (k, c) in METRIC_COLUMNS.iter().enumerate() {
        (c.set)(&mut m, value(k, c));
    }
    m
}

/// Whether two cells' metrics are identical bit for bit, column by column.
#[must_use]
pub fn bitwise_equal(a: &Metrics, b: &Metrics) -> bool {
    METRIC_COLUMNS
        .iter()
        .all(|c| (c.value)(a).bits() == (c.value)(b).bits())
}
