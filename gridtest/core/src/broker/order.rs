//! Orders: what a strategy on the orders path ([`crate::Strategy::on_orders`]) hands the
//! [`Broker`](super::Broker). Plain values, built with chained methods, copied into the book
//! without allocation.

/// How much an order trades. The broker rounds every size down to whole lots
/// ([`BrokerModel::lot_size`](super::BrokerModel::lot_size)); an order that rounds to nothing is
/// dropped.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Size {
    /// A number of units (shares, contracts).
    Units(f64),
    /// A fraction of the equity available (equity less the margin of open trades), in
    /// `(0, 1]`: as many lots as it pays for at the fill price, fees included (backtesting.py's
    /// relative sizes; its default `buy()` is `Size::Equity(1.0 - f64::EPSILON)`).
    Equity(f64),
    /// An amount of cash: as many lots as it pays for at the fill price, fees included.
    Cash(f64),
}

/// One order: a direction, a size, how it enters (market, limit, stop or stop-limit) and the
/// exits attached to the trade it opens (stop-loss, take-profit, trailing stop).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::broker::{Order, Size};
/// // Buy 100 units at the next open, with a stop 5 % below 100 and a target 10 % above.
/// let o = Order::buy(Size::Units(100.0)).stop_loss(95.0).take_profit(110.0);
/// assert_eq!(o.direction(), 1.0);
/// // Sell short half the equity if the price falls through 98 (a stop entry).
/// let s = Order::sell(Size::Equity(0.5)).stop(98.0);
/// assert_eq!((s.direction(), s.stop_price()), (-1.0, Some(98.0)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Order {
    pub(crate) direction: f64,
    pub(crate) size: Size,
    pub(crate) limit: Option<f64>,
    pub(crate) stop: Option<f64>,
    pub(crate) stop_loss: Option<f64>,
    pub(crate) take_profit: Option<f64>,
    pub(crate) trailing: Option<f64>,
}

impl Order {
    fn new(direction: f64, size: Size) -> Self {
        Self {
            direction,
            size,
            limit: None,
            stop: None,
            stop_loss: None,
            take_profit: None,
            trailing: None,
        }
    }

    /// A market order buying `size` at the next fill price.
    #[must_use]
    pub fn buy(size: Size) -> Self {
        Self::new(1.0, size)
    }

    /// A market order selling `size` (short, or closing longs) at the next fill price.
    #[must_use]
    pub fn sell(size: Size) -> Self {
        Self::new(-1.0, size)
    }

    /// Makes it a limit order: a buy fills at `price` or lower, a sell at `price` or higher.
    #[must_use]
    pub fn limit(mut self, price: f64) -> Self {
        self.limit = Some(price);
        self
    }

    /// Makes it a stop order: it becomes active when the price trades at `price` (a buy: at or
    /// above, a sell: at or below), then fills as a market order (or as its limit, if it has one:
    /// a stop-limit).
    #[must_use]
    pub fn stop(mut self, price: f64) -> Self {
        self.stop = Some(price);
        self
    }

    /// Attaches a stop-loss at `price` to the trade the order opens.
    #[must_use]
    pub fn stop_loss(mut self, price: f64) -> Self {
        self.stop_loss = Some(price);
        self
    }

    /// Attaches a take-profit at `price` to the trade the order opens.
    #[must_use]
    pub fn take_profit(mut self, price: f64) -> Self {
        self.take_profit = Some(price);
        self
    }

    /// Attaches a trailing stop `fraction` away from the best close since entry (e.g. `0.05`:
    /// a long's stop follows 5 % below its highest close). Combined with a stop-loss, the tighter
    /// one applies.
    #[must_use]
    pub fn trailing_stop(mut self, fraction: f64) -> Self {
        self.trailing = Some(fraction);
        self
    }

    /// `1.0` for a buy, `-1.0` for a sell.
    #[must_use]
    pub fn direction(&self) -> f64 {
        self.direction
    }

    /// The stop price, if it is a stop or stop-limit order.
    #[must_use]
    pub fn stop_price(&self) -> Option<f64> {
        self.stop
    }

    /// The limit price, if it is a limit or stop-limit order.
    #[must_use]
    pub fn limit_price(&self) -> Option<f64> {
        self.limit
    }

    /// Whether it is a market order (neither limit nor stop).
    #[must_use]
    pub fn is_market(&self) -> bool {
        self.limit.is_none() && self.stop.is_none()
    }

    /// Why the order cannot be placed (a non-finite or non-positive price or size, or exits on
    /// the wrong side), if it cannot.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let positive = |p: Option<f64>| p.is_none_or(|p| p.is_finite() && p > 0.0);
        let amount = match self.size {
            Size::Units(x) | Size::Cash(x) => x,
            Size::Equity(f) if f > 1.0 => return Err("an equity fraction above 1"),
            Size::Equity(f) => f,
        };
        if !(amount.is_finite() && amount > 0.0) {
            return Err("a size that is not a positive number");
        }
        let prices = [self.limit, self.stop, self.stop_loss, self.take_profit];
        if !prices.into_iter().all(positive) {
            return Err("a price that is not a positive number");
        }
        if self.trailing.is_some_and(|t| !(t > 0.0 && t < 1.0)) {
            return Err("a trailing stop outside (0, 1)");
        }
        let entry = self.limit.or(self.stop);
        let (below, above) = if self.direction > 0.0 {
            (self.stop_loss, self.take_profit)
        } else {
            (self.take_profit, self.stop_loss)
        };
        if let (Some(entry), Some(lo)) = (entry, below)
            && lo >= entry
        {
            return Err("an exit on the wrong side of the entry price");
        }
        if let (Some(entry), Some(hi)) = (entry, above)
            && hi <= entry
        {
            return Err("an exit on the wrong side of the entry price");
        }
        Ok(())
    }
}

/// Why a trade was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// An order the other way, or [`Broker::close`](super::Broker::close).
    Order,
    /// Its stop-loss (or trailing stop).
    StopLoss,
    /// Its take-profit.
    TakeProfit,
}

/// A closed trade of the orders path, as backtesting.py lists them (`stats._trades`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClosedTrade {
    /// Units, signed: positive long, negative short.
    pub size: f64,
    /// Event index of the entry fill.
    pub entry_index: u64,
    /// Event index of the exit fill.
    pub exit_index: u64,
    /// Entry price (after spread and slippage).
    pub entry_price: f64,
    /// Exit price (after spread and slippage).
    pub exit_price: f64,
    /// P&L in cash, both fees paid.
    pub pnl: f64,
    /// Return: `sign · (exit / entry − 1) − fees / (|size| · entry · multiplier)`.
    pub ret: f64,
    /// Both fees.
    pub fees: f64,
    /// What closed it.
    pub reason: ExitReason,
}
