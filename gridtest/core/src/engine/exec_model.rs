//! `ExecModel`: how targets become fills, and what they cost.

use serde::{Deserialize, Serialize};

use crate::broker::BrokerModel;
use crate::metrics::DrawdownSign;

/// Version of the execution semantics below; part of every sweep spec. Bump it when the
/// arithmetic of fills, costs or metrics changes.
pub const EXEC_MODEL_VERSION: u32 = 1;

/// The execution model (see `docs/execution-model.md` for the full arithmetic).
///
/// * A target returned on event `t` is executed at event `t+1`: at the next tick's price, or at
///   the next bar's open. The last event's target is never executed.
/// * The position is rebalanced only when the target changes; between changes the units are held
///   and the weight drifts with the price.
/// * Commission and slippage are charged in basis points of traded notional, out of equity
///   ("fully invested" buys `E / (1 + c)` of notional).
/// * Targets are fractions of equity, clamped to `[-max_leverage, max_leverage]`.
/// * A position open at the end is marked to market at the last price, not closed.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::ExecModel;
/// let m = ExecModel::default().with_commission_bps(1.0).with_slippage_bps(0.5);
/// assert!((m.cost_rate() - 1.5e-4).abs() < 1e-18);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecModel {
    /// Commission, basis points of traded notional.
    pub commission_bps: f64,
    /// Slippage, basis points of traded notional.
    pub slippage_bps: f64,
    /// Largest absolute target weight (1 = no leverage).
    pub max_leverage: f64,
    /// Trading days per year, for annualising Sharpe and Sortino: `A = days · events / distinct
    /// dates` events per year (unless `periods_per_year` is set).
    pub trading_days_per_year: f64,
    /// Events per year, stated: `A` for every shard, whatever its events per date (e.g.
    /// `252.0` for daily bars, `8760.0` for hourly bars of a market open 24 × 365).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub periods_per_year: Option<f64>,
    /// Annual risk-free rate (a fraction) subtracted in Sharpe and Sortino ratios.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub risk_free_rate: f64,
    /// How Sharpe and Sortino ratios are computed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ratios: RatioConvention,
    /// Whether the profit factor sums trades' P&L or their returns.
    #[serde(default, skip_serializing_if = "is_default")]
    pub profit_factor: ProfitFactorBasis,
    /// Whether the per-event ratios count the first event's return (0) as vectorbt does.
    #[serde(default, skip_serializing_if = "is_default")]
    pub first_return: FirstReturn,
    /// What a per-event ratio whose deviation is 0 is.
    #[serde(default, skip_serializing_if = "is_default")]
    pub zero_deviation: ZeroDeviation,
    /// What `exposure` measures.
    #[serde(default, skip_serializing_if = "is_default")]
    pub exposure: ExposureBasis,
    /// Which round trip pays the fee of a reversal (targets and universe paths).
    #[serde(default, skip_serializing_if = "is_default")]
    pub reversal_fee: ReversalFee,
    /// How the printed leaderboard and the report show drawdowns (stored positive everywhere).
    #[serde(default, skip_serializing_if = "is_default")]
    pub drawdown_sign: DrawdownSign,
    /// Cash, lots and fees of the orders path (strategies with `on_orders`).
    #[serde(default, skip_serializing_if = "BrokerModel::is_default")]
    pub broker: BrokerModel,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

/// How Sharpe and Sortino ratios are computed (`docs/execution-model.md`, *Metrics*).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RatioConvention {
    /// Per-event returns: `(mean − rf / A) / std · √A` (the usual one, and the default).
    #[default]
    Arithmetic,
    /// backtesting.py's: daily returns of the equity at each date's close, the geometric mean
    /// annualised over the trading days, `((1 + g)^D − 1 − rf) / σ_ann` with
    /// `σ_ann = √((var + (1 + g)²)^D − (1 + g)^{2D})`.
    Geometric,
}

/// Whether the per-event (arithmetic) Sharpe and Sortino ratios count a return for the first
/// event, which only decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FirstReturn {
    /// `n − 1` returns over `n` events (the default).
    #[default]
    Skipped,
    /// `n` returns, the first 0 (vectorbt's `returns()`, whose first value is the first bar's
    /// change from the initial cash).
    Zero,
}

/// What a per-event (arithmetic) Sharpe or Sortino ratio is when its deviation is 0 (a set that
/// never trades, or returns that never vary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZeroDeviation {
    /// 0 (the default: such a set ranks with those that earn nothing).
    #[default]
    Zero,
    /// `+inf`, whatever the mean (vectorbt's `sharpe_ratio` and `sortino_ratio`).
    Infinite,
}

impl ZeroDeviation {
    /// `num / den` under this convention (`den` a deviation, never negative).
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::engine::ZeroDeviation;
    /// assert_eq!(ZeroDeviation::Zero.ratio(0.5, 0.0), 0.0);
    /// assert_eq!(ZeroDeviation::Infinite.ratio(0.0, 0.0), f64::INFINITY);
    /// assert_eq!(ZeroDeviation::Infinite.ratio(1.0, 4.0), 0.25);
    /// ```
    #[must_use]
    pub fn ratio(self, num: f64, den: f64) -> f64 {
        match self {
            _ if den > 0.0 => num / den,
            Self::Zero => 0.0,
            Self::Infinite => f64::INFINITY,
        }
    }
}

/// What the `exposure` metric measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExposureBasis {
    /// The share of return periods with a position held before or after the event (the
    /// default).
    #[default]
    Position,
    /// backtesting.py's *Exposure Time*: the share of all events that lie between a closed
    /// trade's entry and its exit, both included (a trade still open at the end counts for
    /// nothing). Orders path only.
    ClosedTrades,
}

/// Which round trip pays the fee of a fill that reverses a position (long to short or short to
/// long) on the targets and universe paths; the equity is the same either way, only the
/// round trips' P&L and returns (win rate, profit factor, `trades.parquet`) differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReversalFee {
    /// The round trip it closes pays the whole fee (the default).
    #[default]
    Closing,
    /// Each pays for its part of the notional: the one it closes for the units sold back, the
    /// one it opens for the units of the new position (as the orders path, backtesting.py and
    /// vectorbt split an order that reverses).
    Split,
}

/// What the profit factor sums over closed trades.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfitFactorBasis {
    /// Gross profit over gross loss, in money (the default).
    #[default]
    Pnl,
    /// Sum of positive trade returns over the negated sum of negative ones (backtesting.py's).
    /// On the targets path a round trip's return is its closing equity over the equity before
    /// its opening fee, minus 1.
    Returns,
}

/// How Sharpe and Sortino ratios are annualised: by a stated number of events per year, or by
/// events per year derived from each shard (`trading days · events / distinct dates`).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::ExecModel;
/// let derived = ExecModel::default().annualisation();
/// assert_eq!(derived.per_year(50_000 * 20, 20), 252.0 * 50_000.0);
/// let stated = ExecModel::default().with_periods_per_year(24.0 * 365.0).annualisation();
/// assert_eq!(stated.per_year(1_000, 3), 8760.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Annualisation {
    trading_days_per_year: f64,
    periods_per_year: Option<f64>,
    risk_free_rate: f64,
    first_return: FirstReturn,
    zero_deviation: ZeroDeviation,
}

impl Annualisation {
    /// Events per year of a shard of `n_events` events over `n_days` distinct dates (0 for a
    /// shard without dates, when not stated).
    #[must_use]
    pub fn per_year(&self, n_events: u64, n_days: u32) -> f64 {
        match self.periods_per_year {
            Some(stated) => stated,
            None if n_days == 0 => 0.0,
            None => self.trading_days_per_year * n_events as f64 / f64::from(n_days),
        }
    }

    /// Trading days per year (the annualisation of daily returns).
    #[must_use]
    pub fn trading_days_per_year(&self) -> f64 {
        self.trading_days_per_year
    }

    /// The annual risk-free rate.
    #[must_use]
    pub fn risk_free_rate(&self) -> f64 {
        self.risk_free_rate
    }

    /// Whether the per-event ratios count the first event's return.
    #[must_use]
    pub fn first_return(&self) -> FirstReturn {
        self.first_return
    }

    /// What a per-event ratio with no deviation is.
    #[must_use]
    pub fn zero_deviation(&self) -> ZeroDeviation {
        self.zero_deviation
    }
}

impl Default for ExecModel {
    /// 1 bp commission, no slippage, no leverage, 252 trading days.
    fn default() -> Self {
        Self {
            commission_bps: 1.0,
            slippage_bps: 0.0,
            max_leverage: 1.0,
            trading_days_per_year: 252.0,
            periods_per_year: None,
            risk_free_rate: 0.0,
            ratios: RatioConvention::Arithmetic,
            profit_factor: ProfitFactorBasis::Pnl,
            first_return: FirstReturn::Skipped,
            zero_deviation: ZeroDeviation::Zero,
            exposure: ExposureBasis::Position,
            reversal_fee: ReversalFee::Closing,
            drawdown_sign: DrawdownSign::Positive,
            broker: BrokerModel::default(),
        }
    }
}

impl ExecModel {
    /// Sets the commission in basis points.
    #[must_use]
    pub fn with_commission_bps(mut self, bps: f64) -> Self {
        self.commission_bps = bps;
        self
    }

    /// Sets the slippage in basis points.
    #[must_use]
    pub fn with_slippage_bps(mut self, bps: f64) -> Self {
        self.slippage_bps = bps;
        self
    }

    /// Sets the largest absolute target weight.
    #[must_use]
    pub fn with_max_leverage(mut self, max: f64) -> Self {
        self.max_leverage = max;
        self
    }

    /// Sets the trading days per year (annualisation derived per shard, see
    /// [`ExecModel::annualisation`]).
    #[must_use]
    pub fn with_trading_days_per_year(mut self, days: f64) -> Self {
        self.trading_days_per_year = days;
        self
    }

    /// States the events per year that annualise Sharpe and Sortino ratios, for every shard.
    #[must_use]
    pub fn with_periods_per_year(mut self, periods: f64) -> Self {
        self.periods_per_year = Some(periods);
        self
    }

    /// Sets the annual risk-free rate (a fraction, e.g. `0.02`).
    #[must_use]
    pub fn with_risk_free_rate(mut self, rate: f64) -> Self {
        self.risk_free_rate = rate;
        self
    }

    /// Sets how Sharpe and Sortino ratios are computed.
    #[must_use]
    pub fn with_ratios(mut self, ratios: RatioConvention) -> Self {
        self.ratios = ratios;
        self
    }

    /// Sets whether the per-event ratios count the first event's return (0).
    #[must_use]
    pub fn with_first_return(mut self, first: FirstReturn) -> Self {
        self.first_return = first;
        self
    }

    /// Sets what a per-event ratio with no deviation is.
    #[must_use]
    pub fn with_zero_deviation(mut self, zero: ZeroDeviation) -> Self {
        self.zero_deviation = zero;
        self
    }

    /// Sets what `exposure` measures.
    #[must_use]
    pub fn with_exposure(mut self, basis: ExposureBasis) -> Self {
        self.exposure = basis;
        self
    }

    /// Sets which round trip pays the fee of a reversal.
    #[must_use]
    pub fn with_reversal_fee(mut self, fee: ReversalFee) -> Self {
        self.reversal_fee = fee;
        self
    }

    /// The cost rate a reversal's opening part is charged at when [`ReversalFee::Split`]
    /// splits it (0 otherwise).
    pub(crate) fn reversal_cost(&self) -> f64 {
        match self.reversal_fee {
            ReversalFee::Closing => 0.0,
            ReversalFee::Split => self.cost_rate(),
        }
    }

    /// Sets how the printed leaderboard and the report show drawdowns.
    #[must_use]
    pub fn with_drawdown_sign(mut self, sign: DrawdownSign) -> Self {
        self.drawdown_sign = sign;
        self
    }

    /// Sets what the profit factor sums.
    #[must_use]
    pub fn with_profit_factor(mut self, basis: ProfitFactorBasis) -> Self {
        self.profit_factor = basis;
        self
    }

    /// Sets the cash, lots and fees of the orders path.
    #[must_use]
    pub fn with_broker(mut self, broker: BrokerModel) -> Self {
        self.broker = broker;
        self
    }

    /// How ratios are annualised.
    #[must_use]
    pub fn annualisation(&self) -> Annualisation {
        Annualisation {
            trading_days_per_year: self.trading_days_per_year,
            periods_per_year: self.periods_per_year,
            risk_free_rate: self.risk_free_rate,
            first_return: self.first_return,
            zero_deviation: self.zero_deviation,
        }
    }

    /// Whether the GPU kernels compute these conventions (they produce the arithmetic ratios and
    /// the profit factor from P&L only); a unit under other conventions runs on the CPU engine.
    #[must_use]
    pub fn runs_on_devices(&self) -> bool {
        self.ratios == RatioConvention::Arithmetic
            && self.profit_factor == ProfitFactorBasis::Pnl
            && self.reversal_fee == ReversalFee::Closing
    }

    /// Total cost per unit of traded notional: `(commission + slippage) / 10 000`.
    #[must_use]
    pub fn cost_rate(&self) -> f64 {
        (self.commission_bps + self.slippage_bps) / 10_000.0
    }

    /// Checks that every setting is finite and in range.
    ///
    /// # Errors
    /// A message per bad setting.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut bad = Vec::new();
        let mut check = |name: &str, v: f64, ok: bool| {
            if !(v.is_finite() && ok) {
                bad.push(format!("{name} = {v} is out of range"));
            }
        };
        check(
            "commission_bps",
            self.commission_bps,
            (0.0..10_000.0).contains(&self.commission_bps),
        );
        check(
            "slippage_bps",
            self.slippage_bps,
            (0.0..10_000.0).contains(&self.slippage_bps),
        );
        check("max_leverage", self.max_leverage, self.max_leverage > 0.0);
        check(
            "trading_days_per_year",
            self.trading_days_per_year,
            self.trading_days_per_year > 0.0,
        );
        if let Some(p) = self.periods_per_year {
            check("periods_per_year", p, p > 0.0);
        }
        check(
            "risk_free_rate",
            self.risk_free_rate,
            self.risk_free_rate > -1.0 && self.risk_free_rate < 1.0,
        );
        bad.extend(self.broker.problems());
        if bad.is_empty() { Ok(()) } else { Err(bad) }
    }
}
