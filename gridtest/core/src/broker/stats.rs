//! `TradeStats`: what the closed trades of a lane add up to.

use super::order::ClosedTrade;

/// Counts and sums over a lane's closed trades.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The events from entry to exit of the closed trades, counted once each.
    #[serde(default)]
    pub(crate) spans: ClosedSpans,
}

/// The union of the closed trades' events, from each one's entry to its exit inclusive
/// (backtesting.py's *Exposure Time*): the stretches a trade still open may yet join (at most
/// a few: those closed while an earlier trade stays open), and the events of those no later
/// trade can reach.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ClosedSpans {
    settled: u64,
    /// The last event of the stretches settled: a trade opened at the event that settled them
    /// (a reversal) shares it.
    settled_to: Option<u64>,
    /// Disjoint stretches, in order.
    open: Vec<(u64, u64)>,
}

impl ClosedSpans {
    /// Adds a trade closed over events `entry..=exit`; `earliest_open` is the entry of the
    /// earliest trade still open (`None` when flat). A later closed trade reaches no further
    /// back than that entry or this exit, so the stretches before both are settled.
    pub(crate) fn add(&mut self, entry: u64, exit: u64, earliest_open: Option<u64>) {
        let entry = self.settled_to.map_or(entry, |to| entry.max(to + 1));
        if entry <= exit {
            let mut merged = (entry, exit);
            self.open.retain(|&(from, to)| {
                let apart = to.saturating_add(1) < merged.0 || merged.1.saturating_add(1) < from;
                if !apart {
                    merged = (merged.0.min(from), merged.1.max(to));
                }
                apart
            });
            let at = self.open.partition_point(|&(from, _)| from < merged.0);
            self.open.insert(at, merged);
        }
        let reach = earliest_open.unwrap_or(u64::MAX);
        let done = self.open.partition_point(|&(_, to)| to < reach);
        for (from, to) in self.open.drain(..done) {
            self.settled += to - from + 1;
            self.settled_to = Some(to);
        }
    }

    /// Events covered by a closed trade.
    pub(crate) fn events(&self) -> u64 {
        self.settled
            + self
                .open
                .iter()
                .map(|(from, to)| to - from + 1)
                .sum::<u64>()
    }
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

#[cfg(test)]
mod tests {
    use super::ClosedSpans;

    /// The union of `trades` (entry, exit, earliest entry still open after it) by brute force
    /// and by the spans.
    fn both(trades: &[(u64, u64, Option<u64>)]) -> (u64, u64) {
        let mut spans = ClosedSpans::default();
        let mut covered = std::collections::BTreeSet::new();
        for &(entry, exit, open) in trades {
            spans.add(entry, exit, open);
            covered.extend(entry..=exit);
        }
        (spans.events(), covered.len() as u64)
    }

    #[test]
    fn closed_spans_count_each_event_once_in_any_closing_order() {
        // In order, apart, touching, reversals sharing their event (the next trade opened
        // before or after the close is booked).
        let (a, b) = both(&[
            (1, 5, None),
            (8, 9, None),
            (10, 12, None),
            (12, 20, Some(20)),
        ]);
        assert_eq!(a, b);
        let (a, b) = both(&[(1, 5, None), (5, 9, None), (9, 9, None), (9, 12, Some(12))]);
        assert_eq!((a, b), (12, 12));
        // A later trade stopped out inside an earlier one that is still open, then another
        // after it, then the earlier one closed.
        let (a, b) = both(&[(20, 30, Some(10)), (40, 50, Some(10)), (10, 100, None)]);
        assert_eq!((a, b), (91, 91));
        // … and when the earlier one never closes, the stretches stay apart.
        let (a, b) = both(&[(20, 30, Some(10)), (40, 50, Some(10)), (60, 61, Some(10))]);
        assert_eq!((a, b), (24, 24));
    }
}
