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
        }
    }

    /// Whether the GPU kernels compute these conventions (they produce the arithmetic ratios and
    /// the profit factor from P&L only); a unit under other conventions runs on the CPU engine.
    #[must_use]
    pub fn runs_on_devices(&self) -> bool {
        self.ratios == RatioConvention::Arithmetic && self.profit_factor == ProfitFactorBasis::Pnl
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
