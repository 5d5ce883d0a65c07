//! `Book`: one parameter set's account over a universe — shared cash, units per member — and its
//! metric accumulators, updated per fill and per slice (distinct timestamp).
//!
//! Equity starts at 1. A member's target `w` fills at that member's next event price `p`: with
//! `E` the equity valued at `p` for this member and at the latest marks for the others, and
//! `from` the member's current weight `units·p / E`, the fee is paid out of equity exactly as on
//! the single-symbol path (`E' = E · fee_factor(from, w, c)`), and the member then holds
//! `w · E' / p` units. So a universe of one symbol gives the single-symbol cell (up to
//! rounding). A round trip is per member: opened from flat, closed at flat or at a flip; its
//! P&L is the cash it took and gave, fees included (a flip's whole fee goes to the closing
//! trip, as on the single-symbol path), its return that P&L over the equity when it opened.

use super::account::fee_factor;
use super::raw::RawAccount;
use super::trades::{Trade, UniverseTrips};
use crate::metrics::{Drawdown, Moments};

/// Shared cash and units per member, and the accumulators of one lane.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Book {
    cash: f64,
    units: Vec<f64>,
    /// Last executed target per member.
    held: Vec<f64>,
    /// Targets to execute at each member's next event.
    pending: Vec<f64>,
    /// What the strategy writes (kept between calls).
    pub(crate) targets: Vec<f64>,
    /// Cash spent on the open position of each member (units bought less sold, fees), and the
    /// equity when it opened.
    basis: Vec<f64>,
    entry: Vec<f64>,
    /// Members with units, now and at the start of the slice.
    open: usize,
    open_at_start: bool,
    equity: f64,

    moments: Moments,
    downside2: f64,
    drawdown: Drawdown,
    trades: u64,
    exposed: u64,
    round_trips: u64,
    wins: u64,
    gross_win: f64,
    gross_loss: f64,
    gross_ret: (f64, f64),
    bad_target: Option<(u64, f64)>,
    /// Whether a reversal's opening part (`cost · |target| · after`) is charged to the round
    /// trip it opens rather than the one it closes.
    #[serde(default)]
    split_reversals: bool,
    /// Each member's round trips, when a sweep keeps them (`--trades`).
    trips: Option<Box<UniverseTrips>>,
}

impl Book {
    pub(crate) fn new(members: usize) -> Self {
        Self {
            cash: 1.0,
            units: vec![0.0; members],
            held: vec![0.0; members],
            pending: vec![0.0; members],
            targets: vec![0.0; members],
            basis: vec![0.0; members],
            entry: vec![1.0; members],
            open: 0,
            open_at_start: false,
            equity: 1.0,
            moments: Moments::default(),
            downside2: 0.0,
            drawdown: Drawdown::new(1.0),
            trades: 0,
            exposed: 0,
            round_trips: 0,
            wins: 0,
            gross_win: 0.0,
            gross_loss: 0.0,
            gross_ret: (0.0, 0.0),
            bad_target: None,
            split_reversals: false,
            trips: None,
        }
    }

    /// A book whose reversals charge their opening part to the round trip they open.
    pub(crate) fn splitting_reversals(mut self, split: bool) -> Self {
        self.split_reversals = split;
        self
    }

    /// A book that keeps each member's round trips ([`Book::take_trips`]).
    pub(crate) fn logging_trips(mut self) -> Self {
        self.trips = Some(Box::new(UniverseTrips::new(self.units.len())));
        self
    }

    /// Each member's round trips so far, the open ones marked at `marks` (none unless
    /// logging).
    pub(crate) fn take_trips(&mut self, marks: &[f64]) -> Vec<Trade> {
        let Some(trips) = self.trips.take() else {
            return Vec::new();
        };
        trips.finish(|m| {
            let pnl = self.units[m] * marks[m] - self.basis[m];
            (pnl, pnl / self.entry[m])
        })
    }

    /// Round trips booked so far (0 unless logging).
    pub(crate) fn trips_held(&self) -> usize {
        self.trips.as_ref().map_or(0, |t| t.held())
    }

    /// Notes whether a position is open as a slice begins (for exposure).
    #[inline(always)]
    pub(crate) fn begin_slice(&mut self) {
        self.open_at_start = self.open > 0;
    }

    /// Executes member `m`'s pending target at its event's fill `price`, the other members
    /// valued at `marks`; `at` is the slice index and timestamp (for the round trips). Returns
    /// the fill `(units traded, fee)` if the position changed.
    #[inline]
    pub(crate) fn fill(
        &mut self,
        m: usize,
        (price, at): (f64, (u64, i64)),
        marks: &[f64],
        cost: f64,
    ) -> Option<Fill> {
        let target = self.pending[m];
        if target == self.held[m] {
            return None;
        }
        let (u0, h) = (self.units[m], self.held[m]);
        let others: f64 = marks
            .iter()
            .zip(&self.units)
            .enumerate()
            .filter(|&(j, _)| j != m)
            .map(|(_, (p, u))| p * u)
            .sum();
        let e = self.cash + others + u0 * price;
        let from = if e == 0.0 { 0.0 } else { u0 * price / e };
        let after = e * fee_factor(from, target, cost);
        let fee = e - after;
        let u1 = target * after / price;
        let flow = (u1 - u0) * price + fee;
        self.cash -= flow;
        let trips = self.trips.as_deref_mut();
        if h == 0.0 {
            self.entry[m] = e;
            self.basis[m] = flow;
            if let Some(trips) = trips {
                trips.open(m, u1, at, price, fee);
            }
        } else if target == 0.0 || target.signum() != h.signum() {
            let opening = if self.split_reversals {
                cost * target.abs() * after
            } else {
                0.0
            };
            let pnl = -(self.basis[m] - u0 * price + fee - opening);
            let ret = pnl / self.entry[m];
            if let Some(trips) = trips {
                trips.close(m, at, price, (pnl, ret, fee - opening));
                if target != 0.0 {
                    trips.open(m, u1, at, price, opening);
                }
            }
            self.close_trip(pnl, ret);
            self.entry[m] = after + opening;
            self.basis[m] = u1 * price + opening;
        } else {
            self.basis[m] += flow;
            if let Some(trips) = trips {
                trips.resize(m, fee);
            }
        }
        self.open = self.open + usize::from(u1 != 0.0) - usize::from(u0 != 0.0);
        self.units[m] = u1;
        self.held[m] = target;
        self.trades += 1;
        Some(Fill {
            units: u1 - u0,
            fee,
            equity: after,
            target: target + 0.0, // a target of −0.0 reads 0
        })
    }

    fn close_trip(&mut self, pnl: f64, ret: f64) {
        self.round_trips += 1;
        if pnl > 0.0 {
            self.wins += 1;
            self.gross_win += pnl;
        } else {
            self.gross_loss -= pnl;
        }
        if ret > 0.0 {
            self.gross_ret.0 += ret;
        } else {
            self.gross_ret.1 -= ret;
        }
    }

    /// Values the book at `marks` at the end of a slice and, after the first slice, records
    /// the period's return. `intrabar`: a position opened at a bar's open counts as exposure.
    #[inline]
    pub(crate) fn end_slice(&mut self, marks: &[f64], first: bool, intrabar: bool) -> f64 {
        let value: f64 = marks.iter().zip(&self.units).map(|(p, u)| p * u).sum();
        let equity = self.cash + value;
        if !first {
            let r = equity / self.equity - 1.0;
            self.moments.update(r);
            let down = r.min(0.0);
            self.downside2 += down * down;
            self.drawdown.update(equity);
            self.exposed += u64::from(self.open_at_start || (intrabar && self.open > 0));
        }
        self.equity = equity;
        equity
    }

    /// Takes the strategy's targets for the next fills: `NaN` is remembered as a failure (the
    /// member keeps its target), values beyond `max_leverage` are clamped.
    #[inline]
    pub(crate) fn take_targets(&mut self, slice: u64, max_leverage: f64) {
        for (pending, &t) in self.pending.iter_mut().zip(&self.targets) {
            if t.abs() <= max_leverage {
                *pending = t;
            } else if t.is_nan() {
                if self.bad_target.is_none() {
                    self.bad_target = Some((slice, t));
                }
            } else {
                *pending = t.clamp(-max_leverage, max_leverage);
            }
        }
    }

    /// Equity as of the last slice (1 at the start).
    pub(crate) fn equity(&self) -> f64 {
        self.equity
    }

    /// The accumulators, as the single-symbol path reports them. `held` is the largest
    /// absolute target still executed at the end (non-zero: a position is open).
    pub(crate) fn raw(&self) -> RawAccount {
        RawAccount {
            equity: self.equity,
            moments: self.moments,
            downside2: self.downside2,
            drawdown: self.drawdown,
            trades: self.trades,
            exposed: self.exposed,
            round_trips: self.round_trips,
            wins: self.wins,
            gross_win: self.gross_win,
            gross_loss: self.gross_loss,
            bad_target: self.bad_target,
            held: self.held.iter().fold(0.0, |a: f64, h| a.max(h.abs())),
            gross_ret: self.gross_ret,
        }
    }
}

/// What one fill did.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fill {
    /// Units traded (signed: positive bought).
    pub(crate) units: f64,
    /// The fee paid.
    pub(crate) fee: f64,
    /// Equity right after it.
    pub(crate) equity: f64,
    /// The target it executed.
    pub(crate) target: f64,
}
