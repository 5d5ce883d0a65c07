//! The book's rules on hand-computed cases (backtesting.py's are checked against it in
//! `tests/backtesting_py.rs`).

use super::{Broker, BrokerModel, ExitReason, Order, Size};

fn book(model: BrokerModel) -> Broker {
    Broker::new(model.with_initial_cash(10_000.0), 0.0, 0.0).recording()
}

/// A bar `[open, high, low, close]`.
fn bar(o: f64, h: f64, l: f64, c: f64) -> [f64; 4] {
    [o, h, l, c]
}

#[test]
fn a_trailing_stop_follows_the_best_close_and_fills_at_it() {
    let mut b = book(BrokerModel::default());
    b.submit(Order::buy(Size::Units(10.0)).trailing_stop(0.1));
    b.on_event(bar(100.0, 101.0, 99.0, 100.0), 1);
    b.on_event(bar(110.0, 121.0, 109.0, 120.0), 2); // best close 120: stop 108
    b.on_event(bar(115.0, 116.0, 107.0, 110.0), 3); // low 107 ≤ 108: out at 108
    let t = b.take_record();
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].exit_price, t[0].exit_index), (108.0, 3));
    assert_eq!(t[0].reason, ExitReason::StopLoss);
    assert_eq!(b.cash(), 10_000.0 + 10.0 * 8.0);
}

#[test]
fn cash_sizes_round_to_lots_and_pay_the_minimum_fee() {
    let model = BrokerModel::default()
        .with_lot_size(100.0)
        .with_commission_min(5.0);
    let mut b = book(model);
    b.submit(Order::buy(Size::Cash(10_000.0)));
    b.on_event(bar(30.0, 30.0, 30.0, 31.0), 1);
    // ⌊(10 000 − 5) / 30⌋ = 333 units → 300 in lots of 100; the fee is the minimum, 5.
    assert_eq!(b.position(), 300.0);
    assert_eq!(b.cash(), 10_000.0 - 5.0);
    assert_eq!(b.equity(), 10_000.0 - 5.0 + 300.0);
}

#[test]
fn the_spread_costs_half_on_each_fill_and_the_multiplier_scales_pnl() {
    let model = BrokerModel::default()
        .with_spread_bps(20.0)
        .with_multiplier(50.0);
    let mut b = book(model);
    b.submit(Order::buy(Size::Units(1.0)));
    b.on_event(bar(100.0, 100.0, 100.0, 100.0), 1);
    b.close();
    b.on_event(bar(101.0, 101.0, 101.0, 101.0), 2);
    let t = b.take_record()[0];
    assert_eq!(t.entry_price, 100.0 * (1.0 + 0.001));
    assert_eq!(t.exit_price, 101.0 * (1.0 - 0.001));
    let pnl = 1.0 * (101.0 * (1.0 - 0.001) - 100.0 * (1.0 + 0.001)) * 50.0;
    assert_eq!(t.pnl, pnl);
    assert_eq!(b.cash(), 10_000.0 + pnl);
}

#[test]
fn an_order_the_other_way_nets_first_in_first_out() {
    let mut b = book(BrokerModel::default());
    b.submit(Order::buy(Size::Units(10.0)));
    b.on_event(bar(100.0, 100.0, 100.0, 100.0), 1);
    b.submit(Order::sell(Size::Units(4.0)));
    b.on_event(bar(102.0, 102.0, 102.0, 102.0), 2);
    assert_eq!((b.position(), b.open_trades()), (6.0, 1));
    b.submit(Order::sell(Size::Units(10.0)));
    b.on_event(bar(99.0, 99.0, 99.0, 99.0), 3);
    assert_eq!(b.position(), -4.0);
    let sizes: Vec<f64> = b.take_record().iter().map(|t| t.size).collect();
    assert_eq!(sizes, [4.0, 6.0]);
    assert_eq!(b.cash(), 10_000.0 + 4.0 * 2.0 - 6.0);
}

#[test]
fn limits_fill_at_the_better_of_open_and_limit_and_stops_trigger_on_the_range() {
    let mut b = book(BrokerModel::default());
    b.submit(Order::buy(Size::Units(1.0)).limit(97.0));
    b.on_event(bar(99.0, 99.5, 98.0, 99.0), 1); // low 98 > 97: waits
    assert_eq!(b.pending_orders(), 1);
    b.on_event(bar(95.0, 96.0, 94.0, 95.5), 2); // gapped below: fills at the open
    b.submit(Order::sell(Size::Units(1.0)).stop(94.5));
    b.on_event(bar(95.0, 95.2, 94.0, 94.2), 3); // low 94 ≤ 94.5: sells at 94.5
    let t = b.take_record()[0];
    assert_eq!((t.entry_price, t.exit_price), (95.0, 94.5));
}

#[test]
fn when_a_bar_holds_both_exits_the_stop_loss_wins() {
    let mut b = book(BrokerModel::default());
    b.submit(
        Order::buy(Size::Units(1.0))
            .stop_loss(95.0)
            .take_profit(105.0),
    );
    b.on_event(bar(100.0, 106.0, 94.0, 100.0), 1);
    let t = b.take_record()[0];
    assert_eq!((t.exit_price, t.reason), (95.0, ExitReason::StopLoss));
}

#[test]
fn invalid_orders_and_nan_targets_are_rejected_with_the_event() {
    let mut b = book(BrokerModel::default());
    b.index = 7;
    b.submit(Order::buy(Size::Equity(1.5)));
    assert_eq!(b.rejected(), Some((7, "an equity fraction above 1")));
    let mut b = book(BrokerModel::default());
    b.submit(Order::buy(Size::Units(1.0)).limit(100.0).stop_loss(101.0));
    assert!(b.rejected().is_some());
    let mut b = book(BrokerModel::default());
    b.target(f64::NAN);
    assert_eq!(b.rejected(), Some((0, "a NaN target")));
}

#[test]
fn a_target_trades_whole_units_of_the_equity() {
    let mut b = book(BrokerModel::default());
    b.target(0.5);
    b.on_event(bar(30.0, 30.0, 30.0, 30.0), 1);
    assert_eq!(b.position(), 166.0); // ⌊5 000 / 30⌋
    b.target(-0.25);
    b.on_event(bar(30.0, 30.0, 30.0, 30.0), 2);
    assert_eq!(b.position(), -83.0); // ⌊2 500 / 30⌋
}

#[test]
fn a_repeated_signal_closes_and_reopens_in_one_event() {
    let mut b = book(BrokerModel::default());
    b.submit(Order::buy(Size::Units(10.0)));
    b.on_event(bar(100.0, 100.0, 100.0, 100.0), 1);
    b.close();
    b.submit(Order::buy(Size::Units(10.0)));
    b.on_event(bar(104.0, 104.0, 104.0, 104.0), 2);
    let t = b.take_record();
    assert_eq!((t.len(), t[0].exit_price, t[0].exit_index), (1, 104.0, 2));
    assert_eq!((b.position(), b.open_trades()), (10.0, 1));
    assert_eq!(b.cash(), 10_000.0 + 40.0);
}

#[test]
fn exclusive_orders_cancel_the_waiting_ones_and_close_the_book() {
    let mut b = book(BrokerModel::default().with_exclusive_orders(true));
    b.submit(Order::buy(Size::Units(10.0)));
    b.on_event(bar(100.0, 100.0, 100.0, 100.0), 1);
    b.submit(Order::buy(Size::Units(5.0)).limit(90.0));
    b.submit(Order::sell(Size::Units(3.0)));
    assert_eq!(b.pending_orders(), 1);
    b.on_event(bar(101.0, 101.0, 101.0, 101.0), 2);
    assert_eq!(b.position(), -3.0);
    assert_eq!(b.take_record()[0].exit_price, 101.0);
}

#[test]
fn a_lot_size_of_zero_trades_fractions_of_a_unit_on_every_sizing() {
    let fractional = || book(BrokerModel::default().with_lot_size(0.0));
    // An equity fraction: 5 000 of 10 000 at 1.0873 (EURUSD-like), 4 598.55… units.
    let mut b = fractional();
    b.submit(Order::buy(Size::Equity(0.5)));
    b.on_event(bar(1.0873, 1.0873, 1.0873, 1.0873), 1);
    let units = b.position();
    assert_ne!(units, units.floor(), "{units} is a whole number");
    assert!(units * 1.0873 <= 5_000.0 && (units * 1.0873 - 5_000.0).abs() < 1e-9);
    // All of the equity: the cost stays within it, to the last bit.
    let mut b = fractional();
    b.submit(Order::buy(Size::Equity(1.0)));
    b.on_event(bar(3.0, 3.0, 3.0, 3.0), 1);
    assert!(b.position() * 3.0 <= 10_000.0 && b.position() > 3_333.33);
    // Cash and a target.
    let mut b = fractional();
    b.submit(Order::buy(Size::Cash(1_000.0)));
    b.on_event(bar(30.0, 30.0, 30.0, 30.0), 1);
    assert_eq!(b.position(), 1_000.0 / 30.0);
    let mut b = fractional();
    b.target(0.5);
    b.on_event(bar(30.0, 30.0, 30.0, 30.0), 1);
    let units = b.position();
    assert!(
        units * 30.0 <= 5_000.0 && (units - 5_000.0 / 30.0).abs() < 1e-12,
        "{units}"
    );
    // Whole units (the default lot of 1) size as backtesting.py does.
    let mut b = book(BrokerModel::default());
    b.submit(Order::buy(Size::Equity(0.5)));
    b.on_event(bar(1.0873, 1.0873, 1.0873, 1.0873), 1);
    assert_eq!(b.position(), 4_598.0);
}
