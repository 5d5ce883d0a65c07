//! `TradeStats`: what the closed trades of a lane add up to.

use super::order::ClosedTrade;

/// Counts and sums over a lane's closed trades.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct TradeStats {
    /// Closed trades (a partial close counts as one).
    pub(crate) closed: u64,
    /// Closed trades with a positive P&L.
    pub(crate) wins: u64,
    /// Sum of the positive P&Ls, and of the negative ones (negated).
    pub(crate) gross_win: f64,
    pub(crate) gross_loss: f64,
    /// Sum of the positive trade returns, and of the negative ones (negated).
    pub(crate) gross_win_ret: f64,
    pub(crate) gross_loss_ret: f64,
}

impl TradeStats {
    pub(crate) fn add(&mut self, t: &ClosedTrade) {
        self.closed += 1;
        if t.pnl > 0.0 {
            self.wins += 1;
            self.gross_win += t.pnl;
        } else {
            self.gross_loss -= t.pnl;
        }
        if t.ret > 0.0 {
            self.gross_win_ret += t.ret;
        } else {
            self.gross_loss_ret -= t.ret;
        }
    }
}
