//! The README's orders strategy on bars: buy half the equity on a breakout above the highest
//! high of `window` bars, with a stop-loss `stop` below the entry bar's low and a take-profit
//! twice as far above the close; a close below the lowest low closes the trade. Its orders fill
//! with backtesting.py's intrabar rule (`docs/execution-model.md`, *Orders*).

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

/// Parameters.
#[derive(Params, Clone, Debug)]
pub struct Channel {
    /// Bars in the channel.
    pub window: usize,
    /// Stop distance below the entry bar's low, a fraction.
    pub stop: f64,
}

/// State: the channel of the bars before the current one.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct BreakoutOrders {
    high: RollingMax,
    low: RollingMin,
    channel: (f64, f64),
    stop: f64,
}

#[gridtest::strategy(name = "breakout_orders", version = "1", carry)]
impl Strategy for BreakoutOrders {
    type Params = Channel;
    type Feed = Bars;

    fn new(p: &Channel) -> Self {
        let (high, low) = (RollingMax::new(p.window), RollingMin::new(p.window));
        Self {
            high,
            low,
            channel: (f64::NAN, f64::NAN),
            stop: p.stop,
        }
    }

    fn on_orders(&mut self, now: &Cursor<'_, Bars>, broker: &mut Broker) {
        let (top, bottom) = self.channel; // the channel before this bar
        self.channel = (self.high.push(now.high()), self.low.push(now.low()));
        if broker.position() == 0.0 && broker.pending_orders() == 0 && now.close() > top {
            let stop = now.low() * (1.0 - self.stop);
            let target = now.close() + 2.0 * (now.close() - stop);
            broker.submit(
                Order::buy(Size::Equity(0.5))
                    .stop_loss(stop)
                    .take_profit(target),
            );
        } else if broker.position() > 0.0 && now.close() < bottom {
            broker.close();
        }
    }
}
