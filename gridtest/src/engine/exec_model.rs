//! `ExecModel`: how targets become fills, and what they cost.

use serde::{Deserialize, Serialize};

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
    /// dates` events per year.
    pub trading_days_per_year: f64,
}

impl Default for ExecModel {
    /// 1 bp commission, no slippage, no leverage, 252 trading days.
    fn default() -> Self {
        Self {
            commission_bps: 1.0,
            slippage_bps: 0.0,
            max_leverage: 1.0,
            trading_days_per_year: 252.0,
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
        if bad.is_empty() { Ok(()) } else { Err(bad) }
    }
}
