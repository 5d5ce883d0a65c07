//! Channel breakout on bars: go long when the close breaks above the highest high of the
//! previous `entry` bars, exit when it falls below the lowest low of the previous `exit` bars.
//! Optionally symmetric on the short side. Ships a CPU and a GPU implementation (the GPU kernel's
//! bar path: fills at the open, marks at the close, intrabar moves).

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

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

/// State: the channels of the bars before the current one (monotonic deques: O(1) amortised
/// per bar, where a scan of the channel is O(entry + exit)) and the current position.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct Breakout {
    entry: usize,
    exit: usize,
    short: bool,
    entry_high: RollingMax,
    entry_low: RollingMin,
    exit_high: RollingMax,
    exit_low: RollingMin,
    position: f64,
}

#[gridtest::strategy(name = "breakout", version = "1", carry)]
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
            entry_high: RollingMax::new(p.entry),
            entry_low: RollingMin::new(p.entry),
            exit_high: RollingMax::new(p.exit),
            exit_low: RollingMin::new(p.exit),
            position: 0.0,
        }
    }

    fn lookback(&self) -> usize {
        self.entry.max(self.exit)
    }

    fn on_data(&mut self, now: &Cursor<'_, Bars>) -> f64 {
        // The channels hold the bars before this one; this bar joins them after the decision.
        let (upper, lower) = (self.entry_high.value(), self.entry_low.value());
        let (exit_upper, exit_lower) = (self.exit_high.value(), self.exit_low.value());
        let (high, low) = (now.high(), now.low());
        self.entry_high.push(high);
        self.entry_low.push(low);
        self.exit_high.push(high);
        self.exit_low.push(low);
        if now.index() < self.lookback() as u64 {
            return 0.0;
        }
        let channels = [upper, lower, exit_upper, exit_lower];
        self.position = channel_position(self.position, now.close(), channels, self.short);
        self.position
    }

    fn gpu_code() -> Option<GpuCode> {
        Some(GpuCode {
            source: BREAKOUT_CUDA,
            state_len: 1,
            pack: pack_numeric::<BreakoutParams>,
        })
    }
}

/// The position after a bar closing at `close`, from `position` before it and the channels of
/// the bars before it, `[entry high, entry low, exit high, exit low]`: out of a long below the
/// exit low (of a short above the exit high), then long above the entry high, or short below
/// the entry low when `short`.
#[must_use]
pub fn channel_position(position: f64, close: f64, channels: [f64; 4], short: bool) -> f64 {
    let [upper, lower, exit_upper, exit_lower] = channels;
    let exit_long = position > 0.0 && close < exit_lower;
    let exit_short = position < 0.0 && close > exit_upper;
    let mut position = if exit_long || exit_short {
        0.0
    } else {
        position
    };
    if close > upper {
        position = 1.0;
    } else if short && close < lower {
        position = -1.0;
    }
    position
}

/// The same strategy as CUDA C. `params = [entry, exit, short (0 or 1)]`, `state = [position]`;
/// bar columns `col[0..5]` = open, high, low, close, volume. Maxima and minima are exact, so
/// the decisions are the CPU's.
pub const BREAKOUT_CUDA: &str = r#"
__device__ void gt_init(double* s, const double* p) { s[0] = 0.0; }

__device__ double gt_highest(const double* high, long long from, long long n) {
    double m = -1.7976931348623157e308;
    for (long long k = from; k < from + n; ++k) m = fmax(m, high[-k]);
    return m;
}

__device__ double gt_lowest(const double* low, long long from, long long n) {
    double m = 1.7976931348623157e308;
    for (long long k = from; k < from + n; ++k) m = fmin(m, low[-k]);
    return m;
}

__device__ double gt_step(double* s, const double* p, const double* const* col, long long index) {
    long long entry = (long long)p[0];
    long long exit = (long long)p[1];
    int shorts = p[2] != 0.0;
    if (index < (entry > exit ? entry : exit)) return 0.0;
    const double* high = col[1];
    const double* low = col[2];
    double close = col[3][0];
    double upper = gt_highest(high, 1, entry);
    double lower = gt_lowest(low, 1, entry);
    int exit_long = s[0] > 0.0 && close < gt_lowest(low, 1, exit);
    int exit_short = s[0] < 0.0 && close > gt_highest(high, 1, exit);
    if (exit_long || exit_short) s[0] = 0.0;
    if (close > upper) {
        s[0] = 1.0;
    } else if (shorts && close < lower) {
        s[0] = -1.0;
    }
    return s[0];
}
"#;
