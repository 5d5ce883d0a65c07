//! `Account`: one parameter set's portfolio and metric accumulators, updated once per event.
//!
//! Equity `E` starts at 1. Each event the account builds one multiplicative factor `m`
//! (mark the held weight to the fill price, apply the trade's cost, mark to the close for bars)
//! and sets `E *= m`, so the return of the period is `m - 1` and no division happens per event
//! unless the weight is fractional. With a weight of exactly 0 or 1 the factors are those of the
//! W1 reference (`1/(1+c)`, `g`, `g·(1-c)`), so equity matches it bit for bit.

use super::raw::RawAccount;
use crate::metrics::{Drawdown, Moments};

/// Portfolio and accumulators of one lane (one parameter set).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Account {
    equity: f64,
    /// Fraction of equity held, as of the last mark.
    weight: f64,
    /// Last executed target.
    held: f64,
    /// Target to execute at the next event.
    pending: f64,

    // Return moments of the current tile, shifted by `shift` (the mean so far) for accuracy.
    shift: f64,
    s1: f64,
    s2: f64,
    active: u32,
    moments: Moments,
    downside2: f64,
    drawdown: Drawdown,

    trades: u64,
    exposed: u64,
    entry_equity: f64,
    round_trips: u64,
    wins: u64,
    gross_win: f64,
    gross_loss: f64,
    /// Sums of the round trips' positive returns and of their negative ones (negated).
    gross_win_ret: f64,
    gross_loss_ret: f64,
    bad_target: Option<(u64, f64)>,
    /// The cost rate of a reversal's opening part, which the round trip it opens pays
    /// ([`ReversalFee::Split`](super::ReversalFee::Split)); 0: the closed one pays it all.
    #[serde(default)]
    reversal_cost: f64,
}

/// The per-event state of one lane as a lane block holds it (see `super::block`): what
/// [`Account::step`] updates on an event without a trade. Counts are `f64` so that a block
/// updates them with the same vector instructions as the rest (exact below 2^53).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Hot {
    pub(super) equity: f64,
    pub(super) weight: f64,
    pub(super) held: f64,
    pub(super) shift: f64,
    pub(super) s1: f64,
    pub(super) s2: f64,
    pub(super) downside2: f64,
    pub(super) active: f64,
    pub(super) exposed: f64,
    pub(super) peak: f64,
    pub(super) trough: f64,
    pub(super) max: f64,
}

/// Growth of equity holding weight `w` while the price moves by ratio `g`.
#[inline(always)]
pub(super) fn growth(w: f64, g: f64) -> f64 {
    if w == 1.0 { g } else { 1.0 + w * (g - 1.0) }
}

/// Equity after rebalancing from weight `from` to `to` over equity before, paying
/// `cost`·|traded notional| out of itself (see the module docs).
#[inline(always)]
pub(super) fn fee_factor(from: f64, to: f64, cost: f64) -> f64 {
    if to > from {
        (1.0 + cost * from) / (1.0 + cost * to)
    } else {
        (1.0 - cost * from) / (1.0 - cost * to)
    }
}

impl Account {
    pub(crate) fn new() -> Self {
        Self {
            equity: 1.0,
            weight: 0.0,
            held: 0.0,
            pending: 0.0,
            shift: 0.0,
            s1: 0.0,
            s2: 0.0,
            active: 0,
            moments: Moments::default(),
            downside2: 0.0,
            drawdown: Drawdown::new(1.0),
            trades: 0,
            exposed: 0,
            entry_equity: 1.0,
            round_trips: 0,
            wins: 0,
            gross_win: 0.0,
            gross_loss: 0.0,
            gross_win_ret: 0.0,
            gross_loss_ret: 0.0,
            bad_target: None,
            reversal_cost: 0.0,
        }
    }

    /// An account whose reversals charge the round trip they open `cost` of its notional
    /// ([`ExecModel::reversal_cost`](super::ExecModel)).
    pub(crate) fn with_reversal_cost(mut self, cost: f64) -> Self {
        self.reversal_cost = cost;
        self
    }

    /// Records the strategy's target for the next event. `NaN` is remembered as a failure
    /// (and ignored); out-of-range targets are clamped.
    #[inline(always)]
    pub(crate) fn set_target(&mut self, target: f64, index: u64, max_leverage: f64) {
        if target.abs() <= max_leverage {
            self.pending = target;
        } else if target.is_nan() {
            if self.bad_target.is_none() {
                self.bad_target = Some((index, target));
            }
        } else {
            self.pending = target.clamp(-max_leverage, max_leverage);
        }
    }

    /// Advances one period: marks the held position to the fill (`g_fill` = fill / previous
    /// mark), executes the pending target, and for bars marks to the close (`g_hold` = close /
    /// open).
    #[inline(always)]
    pub(crate) fn step<const INTRABAR: bool>(&mut self, g_fill: f64, g_hold: f64, cost: f64) {
        let target = self.pending;
        if self.held == 0.0 && target == 0.0 {
            return; // flat: the period's return is exactly 0 (counted at the end of the tile)
        }
        let mut m = 1.0;
        let w = self.weight;
        let mut exposed = w != 0.0;
        if exposed {
            m = growth(w, g_fill);
            if w != 1.0 {
                self.weight = w * g_fill / m;
            }
        }
        if target != self.held {
            m = self.trade(m, target, cost);
        }
        if INTRABAR && self.weight != 0.0 {
            exposed = true;
            let w = self.weight;
            let g = growth(w, g_hold);
            if w != 1.0 {
                self.weight = w * g_hold / g;
            }
            m *= g;
        }
        self.exposed += u64::from(exposed);
        let equity = self.equity * m;
        self.equity = equity;
        let r = m - 1.0;
        let d = r - self.shift;
        self.s1 += d;
        self.s2 += d * d;
        let down = r.min(0.0);
        self.downside2 += down * down;
        self.active += 1;
        self.drawdown.update(equity);
    }

    /// The target the next event executes.
    #[inline(always)]
    pub(crate) fn pending(&self) -> f64 {
        self.pending
    }

    /// The state [`Account::step`] changes while no trade happens, for a lane block.
    #[inline(always)]
    pub(super) fn hot(&self) -> Hot {
        let (peak, trough, max) = self.drawdown.parts();
        Hot {
            equity: self.equity,
            weight: self.weight,
            held: self.held,
            shift: self.shift,
            s1: self.s1,
            s2: self.s2,
            downside2: self.downside2,
            active: f64::from(self.active),
            // Exact: a count of events stays far below 2^53.
            #[allow(clippy::cast_precision_loss, reason = "event counts are below 2^53")]
            exposed: self.exposed as f64,
            peak,
            trough,
            max,
        }
    }

    /// Writes back the state a lane block stepped (see [`Account::hot`]).
    #[inline(always)]
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "the counts were read from this account as exact integers and only incremented"
    )]
    pub(super) fn set_hot(&mut self, hot: &Hot) {
        self.equity = hot.equity;
        self.weight = hot.weight;
        self.held = hot.held;
        self.s1 = hot.s1;
        self.s2 = hot.s2;
        self.downside2 = hot.downside2;
        self.active = hot.active as u32;
        self.exposed = hot.exposed as u64;
        self.drawdown = Drawdown::from_parts(hot.peak, hot.trough, hot.max);
    }

    /// Rebalances from the current weight to `target` at the fill; returns the period factor.
    #[inline(never)]
    fn trade(&mut self, m: f64, target: f64, cost: f64) -> f64 {
        let k = fee_factor(self.weight, target, cost);
        let before_fee = self.equity * m;
        let m = m * k;
        let after = self.equity * m;
        self.book_trade(self.held, target, before_fee, after);
        self.held = target;
        self.weight = target;
        m
    }

    /// Records a trade from `held` to `target` (equity `before_fee` before its fee, `after`
    /// after it): its count and, where it opens a position, the entry equity, where it closes
    /// or reverses one, the round trip.
    #[inline(always)]
    pub(super) fn book_trade(&mut self, held: f64, target: f64, before_fee: f64, after: f64) {
        if held == 0.0 {
            self.entry_equity = before_fee;
        } else if target == 0.0 || target.signum() != held.signum() {
            // A reversal's fee is its closing part's and its opening part's, `cost · |target| ·
            // after`: the closed trip ends before the opening part when it is split off.
            let after = if target == 0.0 {
                after
            } else {
                after * (1.0 + self.reversal_cost * target.abs())
            };
            let pnl = after - self.entry_equity;
            self.round_trips += 1;
            if pnl > 0.0 {
                self.wins += 1;
                self.gross_win += pnl;
            } else {
                self.gross_loss -= pnl;
            }
            let ret = after / self.entry_equity - 1.0;
            if ret > 0.0 {
                self.gross_win_ret += ret;
            } else {
                self.gross_loss_ret -= ret;
            }
            self.entry_equity = after;
        }
        self.trades += 1;
    }

    /// Folds the current tile of `periods` return periods into the running moments.
    pub(crate) fn end_tile(&mut self, periods: u32) {
        if periods == 0 {
            return;
        }
        let flats = f64::from(periods - self.active);
        let (s1, s2) = (
            self.s1 - flats * self.shift,
            self.s2 + flats * self.shift * self.shift,
        );
        let n = f64::from(periods);
        let tile = Moments::from_parts(
            u64::from(periods),
            self.shift + s1 / n,
            (s2 - s1 * s1 / n).max(0.0),
        );
        self.moments.merge(&tile);
        self.shift = self.moments.mean();
        self.s1 = 0.0;
        self.s2 = 0.0;
        self.active = 0;
    }

    /// Equity now (1 at the start).
    #[inline(always)]
    pub(crate) fn equity(&self) -> f64 {
        self.equity
    }

    /// Fraction of equity held as of the last mark, and the last executed target.
    #[inline(always)]
    pub(crate) fn position(&self) -> (f64, f64) {
        (self.weight, self.held)
    }

    /// What the current round trip is measured from: the equity before the fee of the fill
    /// that opened it (after a closing fill, the equity after it).
    pub(super) fn entry_equity(&self) -> f64 {
        self.entry_equity
    }

    /// The lane's accumulators.
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
            gross_ret: (self.gross_win_ret, self.gross_loss_ret),
            bad_target: self.bad_target,
            held: self.held,
        }
    }
}
