//! `Broker`: the cash, open trades and pending orders of one lane on the orders path, and what
//! the strategy may read and do with them.

use std::borrow::Cow;

use super::model::BrokerModel;
use super::order::{ClosedTrade, ExitReason, Order};
use super::stats::TradeStats;

/// Pending orders and open trades a lane keeps room for without allocating.
const ROOM: usize = 8;

/// When the exits of a trade opened at the current event are first checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Fresh {
    /// Opened before this event.
    No,
    /// Opened at this event, its exits checked in the same event (a market entry).
    Now,
    /// Opened at this event by a stop or limit entry: its exits wait for the next event.
    Later,
}

/// One open trade (backtesting.py's `Trade`): a signed size at an entry price, with its exits.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct OpenTrade {
    pub(super) size: f64,
    pub(super) entry_price: f64,
    pub(super) entry_index: u64,
    /// Commission paid at entry, for the part still open.
    pub(super) entry_fee: f64,
    pub(super) stop_loss: Option<f64>,
    pub(super) take_profit: Option<f64>,
    pub(super) trailing: Option<f64>,
    /// Best close since entry (highest for a long), for the trailing stop.
    pub(super) best: f64,
    /// Opened by the current event's processing, and when its exits are first checked.
    pub(super) fresh: Fresh,
}

impl OpenTrade {
    /// Whether it has no stop-loss, take-profit or trailing stop.
    pub(super) fn without_exits(&self) -> bool {
        self.stop_loss.is_none() && self.take_profit.is_none() && self.trailing.is_none()
    }

    /// The stop that applies now: the stop-loss or the trailing stop, whichever is tighter.
    pub(super) fn stop(&self) -> Option<f64> {
        let trail = self.trailing.map(|t| {
            if self.size > 0.0 {
                self.best * (1.0 - t)
            } else {
                self.best * (1.0 + t)
            }
        });
        match (self.stop_loss, trail) {
            (Some(s), Some(t)) if self.size > 0.0 => Some(s.max(t)),
            (Some(s), Some(t)) => Some(s.min(t)),
            (s, t) => s.or(t),
        }
    }
}

/// The book of one lane on the orders path: cash, open trades (netted first in, first out) and
/// pending orders. A strategy reads it and places orders through it in
/// [`Strategy::on_orders`](crate::Strategy::on_orders); the engine fills the orders at the next
/// event (see `docs/execution-model.md`, *Orders*).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::broker::{Broker, BrokerModel, Order, Size};
/// let mut b = Broker::new(BrokerModel::default().with_initial_cash(10_000.0), 0.0, 0.0);
/// b.submit(Order::buy(Size::Equity(1.0)));
/// // The next event opens at 99, trades between 98 and 101, closes at 100.
/// b.on_event([99.0, 101.0, 98.0, 100.0], 1);
/// assert_eq!(b.position(), 101.0); // ⌊10 000 / 99⌋ units
/// assert_eq!(b.cash(), 10_000.0); // no fees: cash moves only by realised P&L
/// assert_eq!(b.equity(), 10_000.0 + 101.0 * (100.0 - 99.0));
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Broker {
    pub(super) model: BrokerModel,
    /// Commission as a fraction of notional.
    pub(super) rate: f64,
    /// Adverse price move per fill: half the spread plus the slippage, as a fraction.
    pub(super) adverse: f64,
    /// Notional per unit of equity the open trades may reach (`ExecModel::max_leverage`).
    pub(super) leverage: f64,
    pub(super) cash: f64,
    pub(super) trades: Vec<OpenTrade>,
    pub(super) orders: Vec<Order>,
    /// A target (fraction of equity) to reach at the next fill, in whole lots.
    pub(super) target: Option<f64>,
    pub(super) close_all: bool,
    /// The last close (marks the open trades).
    pub(super) mark: f64,
    pub(super) index: u64,
    /// Fills so far (entries, exits, partial closes).
    pub(super) fills: u64,
    pub(super) stats: TradeStats,
    /// The closed trades, when recording them.
    pub(super) record: Option<Vec<ClosedTrade>>,
    /// The first order that could not be placed: event index and why.
    pub(super) rejected: Option<(u64, Cow<'static, str>)>,
}

impl Broker {
    /// A book with `model`'s cash, a commission `rate` (fraction of notional) and a slippage
    /// (fraction of the price, against the order).
    #[must_use]
    pub fn new(model: BrokerModel, rate: f64, slippage: f64) -> Self {
        let adverse = model.spread_bps / 20_000.0 + slippage;
        Self {
            cash: model.initial_cash,
            model,
            rate,
            adverse,
            leverage: 1.0,
            trades: Vec::with_capacity(ROOM),
            orders: Vec::with_capacity(ROOM),
            target: None,
            close_all: false,
            mark: f64::NAN,
            index: 0,
            fills: 0,
            stats: TradeStats::default(),
            record: None,
            rejected: None,
        }
    }

    /// Lets the open trades' notional reach `leverage` × equity (backtesting.py's `1 / margin`).
    #[must_use]
    pub fn with_leverage(mut self, leverage: f64) -> Self {
        self.leverage = leverage;
        self
    }

    /// Keeps every closed trade (for tracing a cell).
    pub(crate) fn recording(mut self) -> Self {
        self.record = Some(Vec::new());
        self
    }

    /// The first order that could not be placed: event index and why.
    pub(crate) fn rejected(&self) -> Option<(u64, &str)> {
        self.rejected.as_ref().map(|(i, why)| (*i, why.as_ref()))
    }

    /// Fills so far.
    pub(crate) fn fills(&self) -> u64 {
        self.fills
    }

    /// What the closed trades add up to.
    pub(crate) fn stats(&self) -> &super::TradeStats {
        &self.stats
    }

    /// The open trades as `(signed units, entry index, entry price, entry fee still owed)`.
    pub(crate) fn open_trade_entries(&self) -> impl Iterator<Item = (f64, u64, f64, f64)> + '_ {
        self.trades
            .iter()
            .map(|t| (t.size, t.entry_index, t.entry_price, t.entry_fee))
    }

    /// The last close, the initial cash and the contract multiplier: what values the open
    /// trades.
    pub(crate) fn valuation(&self) -> (f64, f64, f64) {
        (self.mark, self.model.initial_cash, self.model.multiplier)
    }

    /// How many closed trades are recorded.
    pub(crate) fn recorded(&self) -> usize {
        self.record.as_ref().map_or(0, Vec::len)
    }

    /// The closed trades recorded (empty unless recording).
    pub(crate) fn take_record(&mut self) -> Vec<super::ClosedTrade> {
        self.record.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Places an order, filled from the next event on (see [`Order`]). With
    /// [`BrokerModel::exclusive_orders`], it first cancels the pending orders and closes the open
    /// trades. An invalid order (a size or price that is not a positive number, exits on the wrong
    /// side) fails the cell, naming the event.
    pub fn submit(&mut self, order: Order) {
        if let Err(why) = order.check() {
            self.rejected
                .get_or_insert((self.index, Cow::Borrowed(why)));
            return;
        }
        if self.model.exclusive_orders {
            self.orders.clear();
            self.target = None;
            self.close_all = !self.trades.is_empty();
        }
        self.orders.push(order);
    }

    /// Closes every open trade at the next fill price.
    pub fn close(&mut self) {
        self.close_all = !self.trades.is_empty();
    }

    /// Cancels the pending orders (not the exits attached to open trades).
    pub fn cancel_orders(&mut self) {
        self.orders.clear();
        self.target = None;
    }

    /// Trades to `weight` × equity at the next fill, in whole lots (the target path's meaning
    /// with cash and lots): the position becomes `⌊|weight| · equity / (price + fees per unit)⌋`
    /// lots with the sign of `weight`, equity valued at the fill price. A NaN weight fails the
    /// cell.
    pub fn target(&mut self, weight: f64) {
        if weight.is_nan() {
            self.rejected
                .get_or_insert((self.index, Cow::Borrowed("a NaN target")));
            return;
        }
        self.target = Some(weight);
    }

    /// Units held, signed (positive long, negative short).
    #[must_use]
    pub fn position(&self) -> f64 {
        self.trades.iter().map(|t| t.size).sum()
    }

    /// Cash: the initial cash plus realised P&L, less commissions.
    #[must_use]
    pub fn cash(&self) -> f64 {
        self.cash
    }

    /// Equity at the last close: cash plus the open trades' P&L.
    #[must_use]
    pub fn equity(&self) -> f64 {
        self.equity_at(self.mark)
    }

    /// The position's value as a signed fraction of equity, at the last close (0 when flat).
    #[must_use]
    pub fn weight(&self) -> f64 {
        let equity = self.equity();
        if equity == 0.0 {
            0.0
        } else {
            self.position() * self.mark * self.model.multiplier / equity
        }
    }

    /// Open trades (more than one when orders the same way add to a position).
    #[must_use]
    pub fn open_trades(&self) -> usize {
        self.trades.len()
    }

    /// Orders waiting to fill.
    #[must_use]
    pub fn pending_orders(&self) -> usize {
        self.orders.len()
    }

    /// Closed trades so far.
    #[must_use]
    pub fn closed_trades(&self) -> u64 {
        self.stats.closed
    }

    /// Equity with the open trades marked at `price`: `cash + (price · Σ size − Σ size · entry)
    /// · multiplier` (backtesting.py's arithmetic).
    pub(super) fn equity_at(&self, price: f64) -> f64 {
        if self.trades.is_empty() {
            return self.cash;
        }
        let (mut units, mut cost) = (0.0, 0.0);
        for t in &self.trades {
            units += t.size;
            cost += t.size * t.entry_price;
        }
        self.cash + (price * units - cost) * self.model.multiplier
    }

    /// Closes `units` (signed like the trade, at most its size) of open trade `i` at `price`.
    pub(super) fn close_trade(&mut self, i: usize, units: f64, price: f64, reason: ExitReason) {
        let multiplier = self.model.multiplier;
        let exit_fee = self.model.fee(units, price, self.rate);
        let trade = self.trades[i];
        let gross = units * (price - trade.entry_price) * multiplier;
        self.cash += gross - exit_fee;
        let share = if units == trade.size {
            1.0
        } else {
            units / trade.size
        };
        let entry_fee = trade.entry_fee * share;
        let fees = exit_fee + entry_fee;
        let sign = 1.0_f64.copysign(units);
        let closed = ClosedTrade {
            size: units,
            entry_index: trade.entry_index,
            exit_index: self.index,
            entry_price: trade.entry_price,
            exit_price: price,
            pnl: units * (price - trade.entry_price) * multiplier - fees,
            ret: sign * (price / trade.entry_price - 1.0)
                - fees / (units.abs() * trade.entry_price * multiplier),
            fees,
            reason,
        };
        self.stats.add(&closed);
        self.fills += 1;
        if let Some(record) = &mut self.record {
            record.push(closed);
        }
        if units == trade.size {
            self.trades.remove(i);
        } else {
            let t = &mut self.trades[i];
            t.size -= units;
            t.entry_fee -= entry_fee;
        }
        let earliest_open = self.trades.iter().map(|t| t.entry_index).min();
        self.stats
            .spans
            .add(trade.entry_index, self.index, earliest_open);
    }
}
