//! `CellTrace`: every fill and the equity after every event of one cell, for inspection
//! (`--replay <id> --cell <set>@<symbol> --trades FILE --equity FILE`). Recorded by a separate
//! loop (`engine::trace_cell`), so the sweep's hot loop never pays for it.

use serde::{Deserialize, Serialize};

use super::account::{fee_factor, growth};

/// Which way a fill traded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Bought units (the weight went up).
    Buy,
    /// Sold units (the weight went down).
    Sell,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Buy => "buy",
            Self::Sell => "sell",
        })
    }
}

/// One fill: the position changed at an event's fill price. Amounts are in units of the
/// starting equity (1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fill {
    /// Index of the event in the shard.
    pub index: u64,
    /// Its timestamp, nanoseconds since the epoch (UTC).
    pub ts: i64,
    /// The fill price.
    pub price: f64,
    /// Units of the asset traded (positive).
    pub units: f64,
    /// Which way.
    pub side: Side,
    /// The fee paid.
    pub fee: f64,
    /// Target weight after the fill.
    pub weight: f64,
    /// Equity right after the fill, fee paid.
    pub equity: f64,
    /// The member of a universe it traded (index into [`CellTrace::symbols`]; 0 for a single
    /// symbol).
    #[serde(default)]
    pub member: u32,
}

/// The fills and equity curve of one cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CellTrace {
    /// Every fill, in order.
    pub fills: Vec<Fill>,
    /// `(timestamp, equity)` after every event.
    pub equity: Vec<(i64, f64)>,
    /// A universe's symbols, which [`Fill::member`] indexes (empty for a single symbol).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<String>,
    /// The closed trades (orders path only: the targets path lists fills).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trades: Vec<crate::broker::ClosedTrade>,
}

impl CellTrace {
    /// Replays the fills with cash and units and marks the units at `last_price`: the P&L the
    /// fills imply (equals the cell's `total_return` up to rounding).
    #[must_use]
    ///
    /// For a single symbol only (a universe's fills are of several prices).
    pub fn pnl_of_fills(&self, last_price: f64) -> f64 {
        let (mut cash, mut units) = (1.0, 0.0);
        for f in &self.fills {
            let signed = match f.side {
                Side::Buy => f.units,
                Side::Sell => -f.units,
            };
            cash -= signed * f.price + f.fee;
            units += signed;
        }
        cash + units * last_price - 1.0
    }
}

/// The account's state before an event, to tell what a fill at it did.
#[derive(Clone, Copy, Debug)]
pub(super) struct Before {
    pub(super) equity: f64,
    pub(super) weight: f64,
}

/// The fill of event `index` (fill price `price`, price ratio to the previous mark `g_fill`),
/// which moved the target to `target`.
pub(super) fn fill(
    before: Before,
    (index, ts, price, g_fill): (u64, i64, f64, f64),
    target: f64,
    cost: f64,
) -> Fill {
    let w = before.weight;
    let (m, from) = if w == 0.0 {
        (1.0, 0.0)
    } else {
        let m = growth(w, g_fill);
        (m, if w == 1.0 { 1.0 } else { w * g_fill / m })
    };
    let marked = before.equity * m;
    let after = marked * fee_factor(from, target, cost);
    let notional = (target * after - from * marked).abs();
    Fill {
        index,
        ts,
        price,
        units: notional / price,
        side: if target > from { Side::Buy } else { Side::Sell },
        fee: marked - after,
        weight: target,
        equity: after,
        member: 0,
    }
}
