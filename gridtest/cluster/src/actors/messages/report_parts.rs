//! A unit's report in parts: a report whose cells carry long daily-return records can
//! outgrow a frame of the cluster's transport, so a scorer sends it as several messages of
//! whole cells (the ledger takes cells by key, whichever message brings them).

use super::{SetResult, UnitReport};

/// The most bytes a scorer puts in one message to the head: half the transport's default
/// frame (`--max-frame-mb`, 16 MiB; set no lower on a cluster).
pub const MAX_MESSAGE_BYTES: usize = 8 << 20;

/// Bytes one cell's result takes on the wire at most, besides its daily returns.
const CELL_WIRE_BYTES: usize = 512;

/// Bytes one daily return takes on the wire at most (a JSON number).
const DAY_WIRE_BYTES: usize = 24;

/// Bytes a round trip takes on the wire at most (ten JSON numbers and a tag, with their keys).
const TRADE_WIRE_BYTES: usize = 512;

impl UnitReport {
    /// The report as messages of at most about `max_bytes` each on the wire, each with whole
    /// cells (the ledger takes cells by key, whichever message brings them); the unit's
    /// evaluations and busy time are shared among them by cells. A failure, or a report that
    /// fits, is one message.
    #[must_use]
    pub fn into_parts(self, max_bytes: usize) -> Vec<Self> {
        let Ok(results) = &self.results else {
            return vec![self];
        };
        let size = |r: &SetResult| {
            CELL_WIRE_BYTES
                + r.day_returns.len() * DAY_WIRE_BYTES
                + r.trades.len() * TRADE_WIRE_BYTES
        };
        let mut bounds = vec![0];
        let mut filled = 0;
        for (i, r) in results.iter().enumerate() {
            if i > bounds[bounds.len() - 1] && filled + size(r) > max_bytes {
                bounds.push(i);
                filled = 0;
            }
            filled += size(r);
        }
        if bounds.len() == 1 {
            return vec![self];
        }
        let n = results.len() as u64;
        let rest = self.clone_without_results();
        let Ok(mut results) = self.results else {
            unreachable!("matched above")
        };
        let mut parts = Vec::with_capacity(bounds.len());
        for (k, first) in bounds.iter().enumerate().rev() {
            let cells = results.split_off(*first);
            let len = cells.len() as u64;
            let share = |x: u64| x * len / n.max(1);
            parts.push(Self {
                results: Ok(cells),
                evaluations: share(self.evaluations),
                busy_ms: share(self.busy_ms),
                parts_after: u32::try_from(bounds.len() - 1 - k).unwrap_or(u32::MAX),
                ..rest.clone_without_results()
            });
        }
        parts.reverse();
        parts
    }

    fn clone_without_results(&self) -> Self {
        Self {
            sweep_id: self.sweep_id.clone(),
            worker: self.worker.clone(),
            unit: self.unit,
            shard: self.shard.clone(),
            results: Ok(Vec::new()),
            evaluations: 0,
            busy_ms: 0,
            node_fault: self.node_fault.clone(),
            reads: self.reads,
            parts_after: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ParamSetId, SetPlace};
    use crate::sweep::{CellFailure, FailureKind, UnitId, WorkerId};

    /// A trade whose numbers are as long as JSON writes them.
    fn long_trade(k: usize) -> crate::engine::Trade {
        let x = -1.0 / (3.0 + k as f64);
        crate::engine::Trade {
            size: x,
            entry_index: u64::MAX - k as u64,
            entry_time: i64::MIN + k as i64,
            entry_price: x,
            exit_index: Some(u64::MAX),
            exit_time: Some(i64::MIN),
            exit_price: Some(x),
            pnl: x,
            ret: x,
            fees: x,
            end: crate::engine::TradeEnd::TakeProfit,
            member: u32::MAX,
        }
    }

    fn report(cells: usize, days: usize) -> UnitReport {
        report_with_trades(cells, days, 0)
    }

    fn report_with_trades(cells: usize, days: usize, trades: usize) -> UnitReport {
        let result = |i: usize| SetResult {
            place: SetPlace {
                index: i as u64,
                position: i as u64,
            },
            param_set: ParamSetId(i as u64),
            outcome: Err(CellFailure::new(FailureKind::Panic, "x")),
            // Returns as long as JSON writes them (about 22 characters).
            day_returns: (0..days)
                .map(|d| (d as f64 * 0.37).sin() * 1e-3 - 1e-9)
                .collect(),
            trades: (0..trades).map(long_trade).collect(),
        };
        UnitReport {
            sweep_id: "0123456789abcdef".parse().unwrap(),
            worker: WorkerId::new("n1", "0"),
            unit: UnitId(3),
            shard: crate::data::Shard::new(
                "S",
                "2024-01-02".parse().unwrap(),
                "2024-01-03".parse().unwrap(),
            ),
            results: Ok((0..cells).map(result).collect()),
            evaluations: 1_000,
            busy_ms: 100,
            node_fault: None,
            reads: None,
            parts_after: 0,
        }
    }

    #[test]
    fn a_report_over_the_budget_goes_in_parts_of_whole_cells_that_fit_it() {
        // 955 cells of 5 040 days: about 115 MB as the wire writes it.
        parts_fit(&report(955, 5_040));
        // 200 cells of 2 000 trades each, every number as long as JSON writes it.
        parts_fit(&report_with_trades(200, 0, 2_000));
    }

    fn parts_fit(whole: &UnitReport) {
        let json = serde_json::to_vec(&whole).unwrap().len();
        assert!(json > 16 << 20, "{json}");
        let parts = whole.clone().into_parts(MAX_MESSAGE_BYTES);
        let whole = whole.clone();
        assert!(parts.len() > 1);
        let mut cells = Vec::new();
        for (k, part) in parts.iter().enumerate() {
            let bytes = serde_json::to_vec(part).unwrap().len();
            assert!(bytes <= MAX_MESSAGE_BYTES, "part {k}: {bytes} bytes");
            assert_eq!(part.parts_after as usize, parts.len() - 1 - k);
            cells.extend(part.results.clone().unwrap());
        }
        assert_eq!(Ok(cells), whole.results, "every cell once, in order");
        let evaluations: u64 = parts.iter().map(|p| p.evaluations).sum();
        assert!(evaluations <= 1_000 && evaluations > 1_000 - parts.len() as u64);
    }

    #[test]
    fn a_report_that_fits_or_a_failure_is_one_message() {
        assert_eq!(report(955, 0).into_parts(MAX_MESSAGE_BYTES).len(), 1);
        let failed = UnitReport {
            results: Err(CellFailure::new(FailureKind::Data, "corrupt")),
            ..report(955, 5_040)
        };
        assert_eq!(failed.into_parts(MAX_MESSAGE_BYTES).len(), 1);
    }
}
