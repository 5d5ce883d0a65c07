//! `BrokerModel`: cash, lots and costs of the orders path.

use serde::{Deserialize, Serialize};

/// The account and costs of the orders path (strategies with [`crate::Strategy::on_orders`]):
/// the cash it starts with, how sizes round, and what a fill costs. The commission rate in basis
/// points and the slippage are the execution model's (`ExecModel::commission_bps`,
/// `slippage_bps`); see `docs/execution-model.md` for every formula.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::broker::BrokerModel;
/// let ib = BrokerModel::default()
///     .with_initial_cash(100_000.0)
///     .with_commission_per_unit(0.005)
///     .with_commission_min(1.0);
/// // 100 shares at 50 with 1 bp: max(1, 0 + 100·0.005 + 100·50·1e-4) = 1.0
/// assert_eq!(ib.fee(100.0, 50.0, 1e-4), 1.0);
/// assert_eq!(ib.fee(1000.0, 50.0, 1e-4), 10.0);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BrokerModel {
    /// Cash at the start of each shard.
    pub initial_cash: f64,
    /// Commission per unit traded (on top of the rate in basis points).
    pub commission_per_unit: f64,
    /// Commission per order filled (fixed).
    pub commission_per_order: f64,
    /// Smallest commission of a fill.
    pub commission_min: f64,
    /// Bid-ask spread in basis points of the price: a buy fills half of it above the price, a
    /// sell half below.
    pub spread_bps: f64,
    /// Sizes round down to a multiple of it (1: whole units; 0: any fraction of a unit).
    pub lot_size: f64,
    /// Currency per unit per point of price (contract multiplier).
    pub multiplier: f64,
    /// Each new order first cancels the pending orders and closes the open trades
    /// (backtesting.py's `exclusive_orders`).
    pub exclusive_orders: bool,
}

impl Default for BrokerModel {
    /// 100 000 in cash, whole units, no fees beyond the rate, no spread, multiplier 1.
    fn default() -> Self {
        Self {
            initial_cash: 100_000.0,
            commission_per_unit: 0.0,
            commission_per_order: 0.0,
            commission_min: 0.0,
            spread_bps: 0.0,
            lot_size: 1.0,
            multiplier: 1.0,
            exclusive_orders: false,
        }
    }
}

impl BrokerModel {
    /// Sets the cash at the start of each shard.
    #[must_use]
    pub fn with_initial_cash(mut self, cash: f64) -> Self {
        self.initial_cash = cash;
        self
    }

    /// Sets the commission per unit.
    #[must_use]
    pub fn with_commission_per_unit(mut self, fee: f64) -> Self {
        self.commission_per_unit = fee;
        self
    }

    /// Sets the fixed commission per order.
    #[must_use]
    pub fn with_commission_per_order(mut self, fee: f64) -> Self {
        self.commission_per_order = fee;
        self
    }

    /// Sets the smallest commission of a fill.
    #[must_use]
    pub fn with_commission_min(mut self, fee: f64) -> Self {
        self.commission_min = fee;
        self
    }

    /// Sets the bid-ask spread in basis points.
    #[must_use]
    pub fn with_spread_bps(mut self, bps: f64) -> Self {
        self.spread_bps = bps;
        self
    }

    /// Sets the lot size (0: fractional units).
    #[must_use]
    pub fn with_lot_size(mut self, lot: f64) -> Self {
        self.lot_size = lot;
        self
    }

    /// Sets the contract multiplier.
    #[must_use]
    pub fn with_multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = multiplier;
        self
    }

    /// Makes every new order cancel the pending ones and close the open trades first.
    #[must_use]
    pub fn with_exclusive_orders(mut self, exclusive: bool) -> Self {
        self.exclusive_orders = exclusive;
        self
    }

    /// The commission of a fill of `units` at `price` with `rate` (a fraction of notional):
    /// `max(min, per_order + |units| · price · multiplier · rate + |units| · per_unit)`.
    #[must_use]
    pub fn fee(&self, units: f64, price: f64, rate: f64) -> f64 {
        let units = units.abs();
        let fee = self.commission_per_order
            + units * (price * self.multiplier) * rate
            + units * self.commission_per_unit;
        fee.max(self.commission_min)
    }

    /// Rounds `units` (non-negative) down to whole lots.
    #[must_use]
    pub fn round_lots(&self, units: f64) -> f64 {
        if self.lot_size > 0.0 {
            (units / self.lot_size).floor() * self.lot_size
        } else {
            units
        }
    }

    /// The units `budget` buys at `unit_cost` each: whole units as backtesting.py sizes them
    /// (Python's `budget // unit_cost`) when sizes come in lots, else the largest fraction whose
    /// cost stays within the budget.
    #[must_use]
    pub(crate) fn units_within(&self, budget: f64, unit_cost: f64) -> f64 {
        if self.lot_size > 0.0 {
            return py_floordiv(budget, unit_cost);
        }
        let units = budget / unit_cost;
        if units * unit_cost > budget {
            units.next_down()
        } else {
            units
        }
    }

    /// Checks that every setting is finite and in range; one message per bad setting.
    pub(crate) fn problems(&self) -> Vec<String> {
        let checks = [
            ("initial_cash", self.initial_cash, self.initial_cash > 0.0),
            (
                "commission_per_unit",
                self.commission_per_unit,
                self.commission_per_unit >= 0.0,
            ),
            (
                "commission_per_order",
                self.commission_per_order,
                self.commission_per_order >= 0.0,
            ),
            (
                "commission_min",
                self.commission_min,
                self.commission_min >= 0.0,
            ),
            (
                "spread_bps",
                self.spread_bps,
                (0.0..10_000.0).contains(&self.spread_bps),
            ),
            ("lot_size", self.lot_size, self.lot_size >= 0.0),
            ("multiplier", self.multiplier, self.multiplier > 0.0),
        ];
        checks
            .iter()
            .filter(|(_, v, ok)| !(v.is_finite() && *ok))
            .map(|(name, v, _)| format!("{name} = {v} is out of range"))
            .collect()
    }

    /// Whether every setting is the default (the spec then omits it).
    pub(crate) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// Python's float floor division `a // b` (CPython's `float_floor_div`), which the sizing of
/// backtesting.py uses: `(a − fmod(a, b)) / b`, rounded to the nearest integer.
#[must_use]
fn py_floordiv(a: f64, b: f64) -> f64 {
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        m += b;
        div -= 1.0;
    }
    let _ = m;
    if div == 0.0 {
        return 0.0_f64.copysign(a / b);
    }
    let floor = div.floor();
    if div - floor > 0.5 {
        floor + 1.0
    } else {
        floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_follows_python() {
        // Values checked with CPython: 7.0 // 2.0, 1.0 // 0.1, 10000.0 // 3.3, -7.0 // 2.0
        assert_eq!(py_floordiv(7.0, 2.0), 3.0);
        assert_eq!(py_floordiv(1.0, 0.1), 9.0);
        assert_eq!(py_floordiv(10_000.0, 3.3), 3030.0);
        assert_eq!(py_floordiv(-7.0, 2.0), -4.0);
    }

    #[test]
    fn lots_round_down_and_zero_means_fractional() {
        let m = BrokerModel::default().with_lot_size(100.0);
        assert_eq!(m.round_lots(1_999.0), 1_900.0);
        assert_eq!(m.with_lot_size(0.0).round_lots(12.34), 12.34);
    }
}
