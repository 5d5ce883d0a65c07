//! SMA crossover on ticks, exactly the W1 reference workload: long when the fast simple moving
//! average is strictly above the slow one (both windows full), flat otherwise.

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

/// Parameters: the two window lengths, in ticks.
#[derive(Params, Clone, Debug)]
pub struct SmaParams {
    /// Fast window.
    pub fast: usize,
    /// Slow window.
    pub slow: usize,
}

/// The strategy's state: two rolling means.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct SmaCrossover {
    fast: RollingMean,
    slow: RollingMean,
}

#[gridtest::strategy(name = "sma_crossover", version = "1", carry)]
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

    fn gpu_code() -> Option<GpuCode> {
        Some(GpuCode {
            source: SMA_CUDA,
            state_len: 2,
            pack: pack_numeric::<SmaParams>,
        })
    }
}

/// The same strategy as CUDA C: the same operations in the same order as `RollingMean`, so a
/// GPU scorer makes exactly the CPU's decisions. `params = [fast, slow]`,
/// `state = [fast window sum, slow window sum]`.
pub const SMA_CUDA: &str = r#"
__device__ void gt_init(double* s, const double* p) { s[0] = 0.0; s[1] = 0.0; }

/// RollingMean::mean_gt: compare sa/wa > sb/wb as IEEE divisions would, dividing only near ties.
__device__ int gt_mean_gt(double sa, double wa, double sb, double wb) {
    double a = sa * (1.0 / wa);
    double b = sb * (1.0 / wb);
    double m = 8.0 * 2.220446049250313e-16 * fmax(fabs(a), fabs(b));
    if (a - b > m) return 1;
    if (b - a > m) return 0;
    return sa / wa > sb / wb;
}

__device__ double gt_step(double* s, const double* p, const double* const* col, long long index) {
    const double* price = col[0];
    long long fast = (long long)p[0];
    long long slow = (long long)p[1];
    double x = price[0];
    s[0] += x - price[-fast];
    s[1] += x - price[-slow];
    long long full = fast > slow ? fast : slow;
    if (index + 1 >= full && gt_mean_gt(s[0], p[0], s[1], p[1])) return 1.0;
    return 0.0;
}
"#;

/// The same decisions through the orders path: a market order for all the equity (whole
/// units) when the fast average rises above the slow one, a close when it no longer is. Its
/// trades are the crossover's; what it measures is the orders path's cost
/// (`examples/orders_bench.rs`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct SmaCrossoverOrders {
    signal: SmaCrossover,
    long: bool,
}

#[gridtest::strategy(name = "sma_crossover_orders", version = "1", carry)]
impl Strategy for SmaCrossoverOrders {
    type Params = SmaParams;
    type Feed = Ticks;

    fn new(p: &SmaParams) -> Self {
        Self {
            signal: SmaCrossover::new(p),
            long: false,
        }
    }

    fn lookback(&self) -> usize {
        self.signal.lookback()
    }

    #[inline(always)]
    fn on_orders(&mut self, now: &Cursor<'_, Ticks>, broker: &mut Broker) {
        let long = self.signal.on_data(now) > 0.0;
        if long != self.long {
            self.long = long;
            if long {
                broker.submit(Order::buy(Size::Equity(1.0)));
            } else {
                broker.close();
            }
        }
    }
}
