//! `Trade`: one round trip of a cell, in the one format both paths share — what a sweep with
//! `--trades` writes for every cell (`trades/*.parquet`). The targets path folds its fills into
//! round trips as its metrics count them ([`TargetTrades`]); the orders path lists its broker's
//! closed trades and the trades still open ([`OrderTrades`]).

use serde::{Deserialize, Serialize};

use super::trace::Fill;
use crate::broker::{ClosedTrade, ExitReason};

/// How a round trip ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TradeEnd {
    /// The strategy's target went to zero or changed sign (targets path).
    Target,
    /// An order the other way, or a close (orders path).
    Order,
    /// Its stop-loss or trailing stop (orders path).
    StopLoss,
    /// Its take-profit (orders path).
    TakeProfit,
    /// Still open after the last event: its P&L and return are marked to the last price.
    Open,
}

impl TradeEnd {
    /// Its name in files (`target`, `order`, `stop_loss`, `take_profit`, `open`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Target => "target",
            Self::Order => "order",
            Self::StopLoss => "stop_loss",
            Self::TakeProfit => "take_profit",
            Self::Open => "open",
        }
    }
}

impl From<ExitReason> for TradeEnd {
    fn from(reason: ExitReason) -> Self {
        match reason {
            ExitReason::Order => Self::Order,
            ExitReason::StopLoss => Self::StopLoss,
            ExitReason::TakeProfit => Self::TakeProfit,
        }
    }
}

/// One round trip of one cell. Money is in units of the starting equity (the targets path's
/// equity starts at 1; the orders path's cash is divided by its initial cash), so the trades
/// of any two cells compare.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trade {
    /// Units of the asset at entry, signed: positive long, negative short (the targets path
    /// trades units of a starting equity of 1).
    pub size: f64,
    /// Event index of the entry fill in the shard (on a universe: the index of its slice, a
    /// distinct timestamp of the merged members).
    pub entry_index: u64,
    /// Its timestamp, nanoseconds since the epoch (UTC).
    pub entry_time: i64,
    /// The entry fill price.
    pub entry_price: f64,
    /// Event index of the exit fill; `None` while open.
    pub exit_index: Option<u64>,
    /// Its timestamp; `None` while open.
    pub exit_time: Option<i64>,
    /// The exit fill price; `None` while open.
    pub exit_price: Option<f64>,
    /// Profit, fees paid, as a fraction of the starting equity.
    pub pnl: f64,
    /// The trade's return, fees included (the targets path: equity after the exit over equity
    /// before the entry's fee, minus 1, as its win rate and profit factor count it).
    pub ret: f64,
    /// Fees paid on its fills, as a fraction of the starting equity.
    pub fees: f64,
    /// How it ended.
    pub end: TradeEnd,
    /// The symbol traded: its place among the shard's [`symbols`](crate::data::Shard::symbols)
    /// (0 on a single symbol; a universe's member otherwise).
    #[serde(default)]
    pub member: u32,
}

impl Trade {
    /// Whether it is still open after the last event.
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.end == TradeEnd::Open
    }
}

/// The open round trip of a lane (of one member, on the universe path).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Entry {
    size: f64,
    index: u64,
    ts: i64,
    price: f64,
    /// Equity before the entry's fee (what the account measures the trade from).
    equity: f64,
    fees: f64,
}

impl Entry {
    /// The round trip from this entry: closed at `exit` (`(event index, timestamp, price)`,
    /// ended by the target) or still open (`None`), with its P&L, return and the fee of its
    /// exit, on the shard's `member`.
    fn trade(
        self,
        exit: Option<(u64, i64, f64)>,
        (pnl, ret, exit_fee): (f64, f64, f64),
        member: usize,
    ) -> Trade {
        Trade {
            size: self.size,
            entry_index: self.index,
            entry_time: self.ts,
            entry_price: self.price,
            exit_index: exit.map(|(index, _, _)| index),
            exit_time: exit.map(|(_, ts, _)| ts),
            exit_price: exit.map(|(_, _, price)| price),
            pnl,
            ret,
            fees: self.fees + exit_fee,
            end: if exit.is_some() {
                TradeEnd::Target
            } else {
                TradeEnd::Open
            },
            member: u32::try_from(member).unwrap_or(u32::MAX),
        }
    }
}

/// The round trips of one targets-path lane, built fill by fill as the account books them
/// (`Account::book_trade`): a trade opens when the lane leaves flat, resizes without closing,
/// and closes when the target reaches zero or changes sign (a reversal closes one trade and
/// opens the next at the same fill, whose whole fee the closed trade pays).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct TargetTrades {
    open: Option<Entry>,
    closed: Vec<Trade>,
    /// The cost rate of a reversal's opening part when the round trip it opens pays it
    /// ([`ReversalFee::Split`](super::ReversalFee::Split)); 0 otherwise.
    reversal_cost: f64,
}

impl TargetTrades {
    /// A book whose reversals charge `reversal_cost` of the new position to the trip they open.
    pub(super) fn new(reversal_cost: f64) -> Self {
        Self {
            reversal_cost,
            ..Self::default()
        }
    }

    /// Books `fill`, which moved the target from `held` to `now`; `entry_equity` is the
    /// account's reference after it (`Account::entry_equity`): the equity before the fee of an
    /// entry, the equity after a closing fill.
    pub(super) fn on_fill(&mut self, fill: &Fill, held: f64, now: f64, entry_equity: f64) {
        let entry = |size: f64, equity: f64, fees: f64| Entry {
            size: size.copysign(now),
            index: fill.index,
            ts: fill.ts,
            price: fill.price,
            equity,
            fees,
        };
        if held == 0.0 {
            self.open = Some(entry(fill.units, entry_equity, fill.fee));
            return;
        }
        let Some(open) = self.open.as_mut() else {
            return;
        };
        if now != 0.0 && now.signum() == held.signum() {
            open.fees += fill.fee;
            return;
        }
        let after = entry_equity;
        let opening = self.reversal_cost * now.abs() * fill.equity;
        let exit = (fill.index, fill.ts, fill.price);
        let (pnl, ret) = (after - open.equity, after / open.equity - 1.0);
        self.closed
            .push(open.trade(Some(exit), (pnl, ret, fill.fee - opening), 0));
        let units = now.abs() * fill.equity / fill.price;
        self.open = (now != 0.0).then(|| entry(units, after, opening));
    }

    /// Round trips closed so far.
    pub(super) fn held(&self) -> usize {
        self.closed.len()
    }

    /// The round trips, the open one marked at `equity` (the lane's equity after the last
    /// event).
    pub(super) fn finish(self, equity: f64) -> Vec<Trade> {
        let mut trades = self.closed;
        if let Some(open) = self.open {
            let (pnl, ret) = (equity - open.equity, equity / open.equity - 1.0);
            trades.push(open.trade(None, (pnl, ret, 0.0), 0));
        }
        trades
    }
}

/// The timestamps of an orders-path lane's fills (its broker's closed trades name events by
/// index only): `(event index, timestamp)` of every event at which the broker filled.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct OrderTrades {
    fills_seen: u64,
    times: Vec<(u64, i64)>,
}

/// An open trade of the orders path as the broker holds it: signed units, entry index and
/// price, and the entry fee of the part still open.
pub(super) type OpenOrderTrade = (f64, u64, f64, f64);

impl OrderTrades {
    /// Notes event `index` at `ts` when the broker's fill count moved past what was seen.
    #[inline(always)]
    pub(super) fn after_event(&mut self, fills: u64, index: u64, ts: i64) {
        if fills != self.fills_seen {
            self.fills_seen = fills;
            self.times.push((index, ts));
        }
    }

    /// Fills timed so far (a closed trade has two).
    pub(super) fn held(&self) -> usize {
        self.times.len()
    }

    fn time_of(&self, index: u64) -> i64 {
        let i = self.times.partition_point(|&(at, _)| at < index);
        self.times.get(i).map_or(i64::MIN, |&(_, ts)| ts)
    }

    /// The closed trades and the open ones (marked at `mark`, after paying their entry fee)
    /// in one format, money over `initial` cash; `multiplier` is the contract's.
    pub(super) fn finish(
        &self,
        closed: &[ClosedTrade],
        open: impl Iterator<Item = OpenOrderTrade>,
        (mark, initial, multiplier): (f64, f64, f64),
    ) -> Vec<Trade> {
        let mut trades: Vec<Trade> = closed
            .iter()
            .map(|t| Trade {
                size: t.size,
                entry_index: t.entry_index,
                entry_time: self.time_of(t.entry_index),
                entry_price: t.entry_price,
                exit_index: Some(t.exit_index),
                exit_time: Some(self.time_of(t.exit_index)),
                exit_price: Some(t.exit_price),
                pnl: t.pnl / initial,
                ret: t.ret,
                fees: t.fees / initial,
                end: t.reason.into(),
                member: 0,
            })
            .collect();
        trades.extend(open.map(|(size, index, price, fee)| {
            let notional = size.abs() * price * multiplier;
            let pnl = size * (mark - price) * multiplier - fee;
            Trade {
                size,
                entry_index: index,
                entry_time: self.time_of(index),
                entry_price: price,
                exit_index: None,
                exit_time: None,
                exit_price: None,
                pnl: pnl / initial,
                ret: (mark / price - 1.0) * size.signum() - fee / notional,
                fees: fee / initial,
                end: TradeEnd::Open,
                member: 0,
            }
        }));
        trades
    }
}

/// The round trips of one universe-path lane, per member, booked by its
/// [`Book`](super::book::Book) as it fills: a member's trip opens when it leaves flat, pays the
/// fees of its resizes, and closes at flat or at a flip with the P&L and return the book counts
/// (a flip opens the next trip at the same fill). Indices are the universe's slices
/// (distinct timestamps), as in its traces.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct UniverseTrips {
    open: Vec<Option<Entry>>,
    closed: Vec<Trade>,
}

impl UniverseTrips {
    pub(super) fn new(members: usize) -> Self {
        Self {
            open: vec![None; members],
            closed: Vec::new(),
        }
    }

    /// Member `m` leaves flat holding `units` (signed), at slice `index` (`ts`) and `price`,
    /// paying `fees`; `equity` is what its return is measured from.
    pub(super) fn open(&mut self, m: usize, units: f64, at: (u64, i64), price: f64, fees: f64) {
        self.open[m] = Some(Entry {
            size: units,
            index: at.0,
            ts: at.1,
            price,
            equity: 0.0,
            fees,
        });
    }

    /// Member `m`'s open trip pays `fee` for a resize.
    pub(super) fn resize(&mut self, m: usize, fee: f64) {
        if let Some(open) = self.open[m].as_mut() {
            open.fees += fee;
        }
    }

    /// Member `m`'s open trip closes at slice `index` (`ts`) and `price` with `pnl` and `ret`
    /// as the book counts them, paying `fee`.
    pub(super) fn close(
        &mut self,
        m: usize,
        at: (u64, i64),
        price: f64,
        (pnl, ret, fee): (f64, f64, f64),
    ) {
        let Some(open) = self.open[m].take() else {
            return;
        };
        let exit = (at.0, at.1, price);
        self.closed.push(open.trade(Some(exit), (pnl, ret, fee), m));
    }

    /// Round trips closed so far.
    pub(super) fn held(&self) -> usize {
        self.closed.len()
    }

    /// The round trips, closed ones first, then each member's open one with `pnl_ret(m)`: its
    /// P&L and return marked at the last prices.
    pub(super) fn finish(self, pnl_ret: impl Fn(usize) -> (f64, f64)) -> Vec<Trade> {
        let mut trades = self.closed;
        for (m, open) in self.open.into_iter().enumerate() {
            let Some(open) = open else { continue };
            let (pnl, ret) = pnl_ret(m);
            trades.push(open.trade(None, (pnl, ret, 0.0), m));
        }
        trades
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Side;

    fn fill(index: u64, price: f64, fee: f64) -> Fill {
        Fill {
            index,
            ts: i64::try_from(index).unwrap() * 10,
            price,
            units: 1.0,
            side: Side::Buy,
            fee,
            weight: 0.0,
            equity: 0.0,
            member: 0,
        }
    }

    #[test]
    fn a_reversal_closes_one_trade_and_opens_the_next_at_the_same_fill() {
        let mut t = TargetTrades::default();
        t.on_fill(&fill(1, 100.0, 0.01), 0.0, 1.0, 1.0);
        t.on_fill(&fill(2, 105.0, 0.005), 1.0, 0.5, 1.05);
        let reversal = Fill {
            equity: 1.08,
            ..fill(3, 110.0, 0.02)
        };
        t.on_fill(&reversal, 0.5, -1.0, 1.08);
        let trades = t.finish(1.0);
        assert_eq!(trades.len(), 2);
        let (first, second) = (trades[0], trades[1]);
        assert_eq!(first.size, 1.0);
        assert_eq!((first.entry_index, first.exit_index), (1, Some(3)));
        assert!((first.pnl - 0.08).abs() < 1e-15);
        assert!((first.fees - 0.035).abs() < 1e-15);
        assert_eq!(first.end, TradeEnd::Target);
        assert_eq!(second.end, TradeEnd::Open);
        assert!((second.size + 1.08 / 110.0).abs() < 1e-15);
        assert_eq!((second.entry_time, second.exit_time), (30, None));
        assert!((second.ret - (1.0 / 1.08 - 1.0)).abs() < 1e-15);
    }

    #[test]
    fn a_universe_books_each_members_trips_and_they_sum_to_its_equity() {
        use crate::engine::book::Book;
        let cost = 0.001;
        let mut book = Book::new(2).splitting_reversals(true).logging_trips();
        let mut fees = 0.0;
        let mut step = |book: &mut Book, targets: [f64; 2], fills: &[(usize, f64, u64)], marks| {
            book.targets.copy_from_slice(&targets);
            book.take_targets(0, 10.0);
            for &(m, price, index) in fills {
                let at = (index, i64::try_from(index).unwrap() * 10);
                fees += book.fill(m, (price, at), marks, cost).unwrap().fee;
            }
        };
        step(&mut book, [1.0, 0.0], &[(0, 100.0, 1)], &[100.0, 50.0]);
        // member 0 reverses (its fee split by notional), member 1 opens
        step(
            &mut book,
            [-1.0, 0.5],
            &[(0, 110.0, 2), (1, 50.0, 2)],
            &[110.0, 50.0],
        );
        step(&mut book, [0.0, 0.5], &[(0, 105.0, 3)], &[105.0, 50.0]);
        let marks = [105.0, 55.0];
        let equity = book.end_slice(&marks, false, false);
        let round_trips = book.raw().round_trips;
        let trades = book.take_trips(&marks);
        let ends: Vec<_> = trades
            .iter()
            .map(|t| (t.member, t.end, t.entry_index))
            .collect();
        assert_eq!(
            ends,
            [
                (0, TradeEnd::Target, 1),
                (0, TradeEnd::Target, 2),
                (1, TradeEnd::Open, 2)
            ]
        );
        assert_eq!(round_trips, 2);
        assert!(trades[0].size > 0.0 && trades[1].size < 0.0);
        assert_eq!(
            (trades[0].exit_index, trades[1].exit_price),
            (Some(2), Some(105.0))
        );
        let pnl: f64 = trades.iter().map(|t| t.pnl).sum();
        assert!((pnl - (equity - 1.0)).abs() < 1e-15, "{pnl} vs {equity}");
        let paid: f64 = trades.iter().map(|t| t.fees).sum();
        assert!((paid - fees).abs() < 1e-15, "{paid} vs {fees}");
        let opening = cost * trades[1].size.abs() * 110.0;
        assert!((trades[1].fees - opening - cost * trades[1].size.abs() * 105.0).abs() < 1e-12);
    }

    #[test]
    fn an_open_order_trade_pays_its_entry_fee_in_its_marked_return() {
        let mut times = OrderTrades::default();
        times.after_event(1, 4, 40);
        times.after_event(1, 5, 50);
        times.after_event(2, 6, 60);
        let open = [(-2.0, 6, 50.0, 1.0)];
        let trades = times.finish(&[], open.into_iter(), (45.0, 1_000.0, 1.0));
        assert_eq!(trades[0].entry_time, 60);
        assert!((trades[0].pnl - 0.009).abs() < 1e-15);
        assert!((trades[0].ret - (0.1 - 0.01)).abs() < 1e-15);
    }
}
