//! Time-series momentum on ticks, long and short: long when the price is more than `threshold_bps`
//! above its level `window` ticks ago, short when it is that much below, flat in between. Ships a
//! CPU and a GPU implementation.

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

/// Parameters.
#[derive(Params, Clone, Debug)]
pub struct MomentumParams {
    /// Lookback, ticks.
    pub window: usize,
    /// Dead band, basis points.
    pub threshold_bps: f64,
}

/// State: the parameters, the threshold as a fraction.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct Momentum {
    window: usize,
    threshold: f64,
}

#[gridtest::strategy(name = "momentum", version = "1", carry)]
impl Strategy for Momentum {
    type Params = MomentumParams;
    type Feed = Ticks;

    fn new(p: &MomentumParams) -> Self {
        Self {
            window: p.window,
            threshold: p.threshold_bps / 10_000.0,
        }
    }

    fn lookback(&self) -> usize {
        self.window
    }

    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        if now.index() < self.window as u64 {
            return 0.0;
        }
        let change = now.price() / now.price_back(self.window) - 1.0;
        if change > self.threshold {
            1.0
        } else if change < -self.threshold {
            -1.0
        } else {
            0.0
        }
    }

    fn gpu_code() -> Option<GpuCode> {
        Some(GpuCode {
            source: MOMENTUM_CUDA,
            state_len: 1,
            pack: pack_numeric::<MomentumParams>,
        })
    }
}

/// The same strategy as CUDA C. `params = [window, threshold_bps]`, `state = [threshold]`.
pub const MOMENTUM_CUDA: &str = r#"
__device__ void gt_init(double* s, const double* p) { s[0] = p[1] / 10000.0; }

__device__ double gt_step(double* s, const double* p, const double* const* col, long long index) {
    long long window = (long long)p[0];
    if (index < window) return 0.0;
    const double* price = col[0];
    double change = price[0] / price[-window] - 1.0;
    if (change > s[0]) return 1.0;
    if (change < -s[0]) return -1.0;
    return 0.0;
}
"#;
