//! SMA crossover on ticks, exactly the W1 reference workload: long when the fast simple moving
//! average is strictly above the slow one (both windows full), flat otherwise.

use gridtest::prelude::*;

/// Parameters: the two window lengths, in ticks.
#[derive(Params, Clone, Debug)]
pub struct SmaParams {
    /// Fast window.
    pub fast: usize,
    /// Slow window.
    pub slow: usize,
}

/// The strategy's state: two rolling means.
#[derive(Debug)]
pub struct SmaCrossover {
    fast: RollingMean,
    slow: RollingMean,
}

#[gridtest::strategy(name = "sma_crossover", version = "1")]
impl Strategy for SmaCrossover {
    type Params = SmaParams;
    type Feed = Ticks;

    fn new(p: &SmaParams) -> Self {
        Self {
            fast: RollingMean::new(p.fast),
            slow: RollingMean::new(p.slow),
        }
    }

    fn lookback(&self) -> usize {
        self.fast.window().max(self.slow.window())
    }

    #[inline(always)]
    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        let price = now.price();
        self.fast.push(price, now.price_back(self.fast.window()));
        self.slow.push(price, now.price_back(self.slow.window()));
        let full = now.index() + 1 >= self.slow.window().max(self.fast.window()) as u64;
        if full && self.fast.mean_gt(&self.slow) {
            1.0
        } else {
            0.0
        }
    }
}
