//! Channel breakout on bars: go long when the close breaks above the highest high of the
//! previous `entry` bars, exit when it falls below the lowest low of the previous `exit` bars.
//! Optionally symmetric on the short side.

use gridtest::prelude::*;

/// Parameters.
#[derive(Params, Clone, Debug)]
pub struct BreakoutParams {
    /// Bars in the entry channel.
    pub entry: usize,
    /// Bars in the exit channel.
    pub exit: usize,
    /// Also trade short breakouts.
    pub short: bool,
}

/// State: the parameters and the current position.
#[derive(Debug)]
pub struct Breakout {
    entry: usize,
    exit: usize,
    short: bool,
    position: f64,
}

fn highest(now: &Cursor<'_, Bars>, from: usize, n: usize) -> f64 {
    (from..from + n)
        .map(|k| now.high_back(k))
        .fold(f64::MIN, f64::max)
}

fn lowest(now: &Cursor<'_, Bars>, from: usize, n: usize) -> f64 {
    (from..from + n)
        .map(|k| now.low_back(k))
        .fold(f64::MAX, f64::min)
}

#[gridtest::strategy(name = "breakout", version = "1")]
impl Strategy for Breakout {
    type Params = BreakoutParams;
    type Feed = Bars;

    fn new(p: &BreakoutParams) -> Self {
        assert!(
            p.entry > 0 && p.exit > 0,
            "channel lengths must be positive"
        );
        Self {
            entry: p.entry,
            exit: p.exit,
            short: p.short,
            position: 0.0,
        }
    }

    fn lookback(&self) -> usize {
        self.entry.max(self.exit)
    }

    fn on_data(&mut self, now: &Cursor<'_, Bars>) -> f64 {
        if now.index() < self.lookback() as u64 {
            return 0.0;
        }
        let close = now.close();
        let upper = highest(now, 1, self.entry);
        let lower = lowest(now, 1, self.entry);
        let exit_long = self.position > 0.0 && close < lowest(now, 1, self.exit);
        let exit_short = self.position < 0.0 && close > highest(now, 1, self.exit);
        if exit_long || exit_short {
            self.position = 0.0;
        }
        if close > upper {
            self.position = 1.0;
        } else if self.short && close < lower {
            self.position = -1.0;
        }
        self.position
    }
}
