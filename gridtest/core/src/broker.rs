//! The orders path: a book of cash, open trades and pending orders per lane, for strategies
//! that trade through orders ([`Strategy::on_orders`](crate::Strategy::on_orders)) rather than
//! targets.
//!
//! A strategy places [`Order`]s (market, limit, stop, stop-limit; with a stop-loss,
//! take-profit or trailing stop attached) or a whole-lot [`Broker::target`], and reads its
//! position, cash and equity. Each event fills what it can with the intrabar rule of
//! backtesting.py (open, then the range, then the close), so its trades can be compared with
//! that tool's trade for trade (`docs/execution-model.md`, *Orders*). Sizes are whole lots of a
//! [`BrokerModel`], fees are per order, per unit and in basis points, with a minimum.
//!
//! The book allocates when a lane is built; per event it only reads and updates its few open
//! trades and orders in place.

mod book;
mod matching;
mod model;
mod order;
mod stats;

pub use book::Broker;
pub use model::BrokerModel;
pub use order::{ClosedTrade, ExitReason, Order, Size};
pub(crate) use stats::TradeStats;

#[cfg(test)]
mod tests;
