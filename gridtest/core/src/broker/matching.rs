//! How one event fills the book's orders: the intrabar rule of `docs/execution-model.md`
//! (*Orders*), which is backtesting.py's.

use super::book::{Broker, Fresh, OpenTrade};
use super::order::{ExitReason, Order, Size};

/// What became of a pending order at an event.
enum Outcome {
    /// Not triggered: it stays (possibly changed: a triggered stop-limit keeps its limit).
    Waiting(Order),
    /// Filled, or dropped (it sized to nothing, or there was not enough margin).
    Done { reprocess: bool },
}

impl Broker {
    /// Advances the book by one event `[open, high, low, close]` (a tick: its price four times)
    /// with index `index`: closes what [`Broker::close`] asked for, then stop-losses, pending
    /// orders in the order they were placed, a [`Broker::target`], take-profits; then the exits of
    /// trades a market order opened at this event (stop-loss first); then marks at the close.
    pub fn on_event(&mut self, bar: [f64; 4], index: u64) {
        self.index = index;
        let idle = self.orders.is_empty() && self.target.is_none() && !self.close_all;
        if idle && self.trades.iter().all(OpenTrade::without_exits) {
            // Nothing can fill at this event: only the mark moves.
            self.mark = bar[3];
            return;
        }
        let open = bar[0];
        if self.close_all {
            self.close_all = false;
            while let Some(t) = self.trades.first() {
                let (size, price) = (t.size, self.exit_price(open, t.size));
                self.close_trade(0, size, price, ExitReason::Order);
            }
        }
        self.check_exits(bar, ExitReason::StopLoss, false);
        let mut reprocess = false;
        let mut i = 0;
        while i < self.orders.len() {
            match self.try_order(self.orders[i], bar) {
                Outcome::Waiting(order) => {
                    self.orders[i] = order;
                    i += 1;
                }
                Outcome::Done { reprocess: r } => {
                    self.orders.remove(i);
                    reprocess |= r;
                }
            }
        }
        if let Some(weight) = self.target.take() {
            self.rebalance(weight, open);
        }
        self.check_exits(bar, ExitReason::TakeProfit, false);
        if reprocess {
            self.check_exits(bar, ExitReason::StopLoss, true);
            self.check_exits(bar, ExitReason::TakeProfit, true);
        }
        let close = bar[3];
        for t in &mut self.trades {
            t.fresh = Fresh::No;
            t.best = if t.size > 0.0 {
                t.best.max(close)
            } else {
                t.best.min(close)
            };
        }
        self.mark = close;
    }

    /// The price a trade of `size` is closed at when the market trades at `price`.
    fn exit_price(&self, price: f64, size: f64) -> f64 {
        price * (1.0 - 1.0_f64.copysign(size) * self.adverse)
    }

    /// Closes the trades whose stop-loss (or take-profit) the event reaches. A stop fills at the
    /// stop, or at the open if the price gapped through it; a take-profit at its price, or at the
    /// open if it gapped beyond. `fresh`: only the trades a market order opened at this event.
    fn check_exits(&mut self, bar: [f64; 4], kind: ExitReason, fresh: bool) {
        let [open, high, low, _] = bar;
        let mut i = 0;
        while i < self.trades.len() {
            let t = self.trades[i];
            let checked = if fresh {
                t.fresh == Fresh::Now
            } else {
                t.fresh == Fresh::No
            };
            let long = t.size > 0.0;
            let hit = match kind {
                _ if !checked => None,
                ExitReason::StopLoss => t.stop().and_then(|s| match long {
                    true if low <= s => Some(open.min(s)),
                    false if high >= s => Some(open.max(s)),
                    _ => None,
                }),
                ExitReason::TakeProfit => t.take_profit.and_then(|p| match long {
                    true if high >= p => Some(open.max(p)),
                    false if low <= p => Some(open.min(p)),
                    _ => None,
                }),
                ExitReason::Order => None,
            };
            match hit {
                Some(price) => {
                    let price = self.exit_price(price, t.size);
                    self.close_trade(i, t.size, price, kind);
                }
                None => i += 1,
            }
        }
    }

    /// Fills `order` at this event if it triggers: a stop order triggers when the range reaches
    /// its stop (then acts as a market order, or as its limit); a limit order fills when the range
    /// reaches its limit, at the limit or the open if better; a market order at the open. A
    /// stop-limit whose limit is reached only "before" its stop (a buy's limit at or below the
    /// stop) waits, as a limit order, for a later event.
    fn try_order(&mut self, mut order: Order, bar: [f64; 4]) -> Outcome {
        let [open, high, low, _] = bar;
        let long = order.direction > 0.0;
        let stop = order.stop;
        if let Some(s) = stop {
            let hit = if long { high >= s } else { low <= s };
            if !hit {
                return Outcome::Waiting(order);
            }
            order.stop = None;
        }
        let price = if let Some(limit) = order.limit {
            let hit = if long { low <= limit } else { high >= limit };
            let before_stop = stop.is_some_and(|s| if long { limit <= s } else { limit >= s });
            if !hit || before_stop {
                return Outcome::Waiting(order);
            }
            let from = stop.unwrap_or(open);
            if long {
                from.min(limit)
            } else {
                from.max(limit)
            }
        } else {
            match stop {
                Some(s) if long => open.max(s),
                Some(s) => open.min(s),
                None => open,
            }
        };
        let Some(trade) = self.execute(&order, price) else {
            return Outcome::Done { reprocess: false };
        };
        let has_exits =
            order.stop_loss.is_some() || order.take_profit.is_some() || order.trailing.is_some();
        let now = if order.limit.is_none() && stop.is_none() {
            has_exits
        } else {
            // A stop entry whose take-profit the same event reaches, its stop-loss not: the
            // order of the two is not ambiguous, so the take-profit fills at once.
            let sl = order.stop_loss;
            order.limit.is_none()
                && order.take_profit.is_some_and(|tp| {
                    if long {
                        tp <= high && sl.is_none_or(|sl| sl < low)
                    } else {
                        tp >= low && sl.is_none_or(|sl| sl > high)
                    }
                })
        };
        if now {
            self.trades[trade].fresh = Fresh::Now;
        }
        Outcome::Done { reprocess: now }
    }

    /// The price paid per unit at fill `price` with `adjusted` the price after spread and
    /// slippage, fees included as for an order of `per` units (backtesting.py's
    /// `adjusted_price_plus_commission`).
    fn price_with_fees(&self, adjusted: f64, price: f64, per: f64) -> f64 {
        adjusted + self.model.fee(per, price, self.rate) / per
    }

    /// The most units `cash` pays for at `adjusted` (fill price `price`) with their fee:
    /// `⌊min((cash − per_order) / (adjusted·m + price·m·rate + per_unit), (cash − min) /
    /// (adjusted·m))⌋`.
    fn units_for_cash(&self, cash: f64, adjusted: f64, price: f64) -> f64 {
        let b = &self.model;
        let per_unit_fee = price * b.multiplier * self.rate + b.commission_per_unit;
        let with_fees = (cash - b.commission_per_order) / (adjusted * b.multiplier + per_unit_fee);
        let with_min = (cash - b.commission_min) / (adjusted * b.multiplier);
        let units = with_fees.min(with_min).max(0.0);
        if b.lot_size > 0.0 {
            units.floor()
        } else {
            units
        }
    }

    /// Equity less the margin of the open trades, both valued at `price`.
    fn margin_available(&self, price: f64) -> f64 {
        let used: f64 = self
            .trades
            .iter()
            .map(|t| t.size.abs() * price * self.model.multiplier / self.leverage)
            .sum();
        (self.equity_at(price) - used).max(0.0)
    }

    /// Executes `order` at market price `price`: sizes it, closes opposite trades first in first
    /// out, and opens a trade with the rest if the margin allows. Returns the new trade's slot.
    fn execute(&mut self, order: &Order, price: f64) -> Option<usize> {
        let d = order.direction;
        let adjusted = price * (1.0 + d * self.adverse);
        let per_unit = self.model.multiplier;
        let (apc, units) = match order.size {
            Size::Units(u) => (self.price_with_fees(adjusted, price, u), u),
            Size::Equity(f) => {
                let apc = self.price_with_fees(adjusted, price, f);
                let budget = self.margin_available(price) * self.leverage * f;
                (apc, self.model.units_within(budget, apc * per_unit))
            }
            Size::Cash(c) => (adjusted, self.units_for_cash(c, adjusted, price)),
        };
        let units = self.model.round_lots(units);
        if units <= 0.0 {
            return None;
        }
        let mut need = d * units;
        while let Some(i) = self.trades.iter().position(|t| t.size * need < 0.0) {
            let size = self.trades[i].size;
            let exit = self.exit_price(price, size);
            if need.abs() >= size.abs() {
                self.close_trade(i, size, exit, ExitReason::Order);
                need += size;
            } else {
                self.close_trade(i, -need, exit, ExitReason::Order);
                need = 0.0;
            }
            if need == 0.0 {
                return None;
            }
        }
        // What the units cost: as backtesting.py reckons it for an equity fraction (its
        // price with fees per unit), else the notional and the actual fee.
        let cost = match order.size {
            Size::Equity(_) => need.abs() * apc * per_unit,
            Size::Units(_) | Size::Cash(_) => {
                need.abs() * adjusted * per_unit + self.model.fee(need, price, self.rate)
            }
        };
        if cost > self.margin_available(price) * self.leverage {
            return None;
        }
        let entry_fee = self.model.fee(need, price, self.rate);
        self.cash -= entry_fee;
        self.fills += 1;
        self.trades.push(OpenTrade {
            size: need,
            entry_price: adjusted,
            entry_index: self.index,
            entry_fee,
            stop_loss: order.stop_loss,
            take_profit: order.take_profit,
            trailing: order.trailing,
            best: adjusted,
            fresh: Fresh::Later,
        });
        Some(self.trades.len() - 1)
    }

    /// Trades to `weight` × equity (valued at `price`) in whole lots (any fraction with a lot
    /// size of 0), as one market order.
    fn rebalance(&mut self, weight: f64, price: f64) {
        let d = if weight < 0.0 { -1.0 } else { 1.0 };
        let adjusted = price * (1.0 + d * self.adverse);
        let apc = self.price_with_fees(adjusted, price, 1.0);
        let equity = self.equity_at(price) * self.leverage * weight.abs();
        let units = self.model.units_within(equity, apc * self.model.multiplier);
        let wanted = d * self.model.round_lots(units);
        let delta = wanted - self.position();
        if delta != 0.0 {
            let order = if delta > 0.0 {
                Order::buy(Size::Units(delta))
            } else {
                Order::sell(Size::Units(-delta))
            };
            if let Some(i) = self.execute(&order, price) {
                self.trades[i].fresh = Fresh::No;
            }
        }
    }
}
