//! A strategy with an edge planted in the data for exactly one of its parameter sets, to test
//! and measure searches (successive halving, random search, the deflated Sharpe ratio).
//!
//! Every set `(a, b)` holds long or short on each tick by a pseudo-random coin of its key and
//! the tick's index, so the sets' returns are independent noise: except on data written by
//! [`planted_prices`] for one key, whose log-returns carry that key's coin, so that one set
//! earns `edge` per tick on average and no other set earns anything.

use gridtest::prelude::*;

/// Parameters: two coordinates; only their key matters.
#[derive(Params, Clone, Debug)]
pub struct PlantedParams {
    /// First coordinate.
    pub a: u32,
    /// Second coordinate.
    pub b: u32,
}

/// State: the set's key.
#[derive(Debug)]
pub struct Planted {
    key: u64,
}

/// The key of the set `(a, b)`.
#[must_use]
pub fn planted_key(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// SplitMix64's finaliser.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The side (+1 long, −1 short) the set with `key` takes on the event with `index`.
#[inline]
#[must_use]
pub fn planted_side(key: u64, index: u64) -> f64 {
    if mix(mix(key) ^ index) & 1 == 1 {
        1.0
    } else {
        -1.0
    }
}

#[gridtest::strategy(name = "planted", version = "1")]
impl Strategy for Planted {
    type Params = PlantedParams;
    type Feed = Ticks;

    fn new(p: &PlantedParams) -> Self {
        Self {
            key: planted_key(p.a, p.b),
        }
    }

    fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
        planted_side(self.key, now.index())
    }
}

/// `n` prices (from 100) whose log-returns are `vol` times Gaussian noise of `seed`, plus
/// `edge` times the side the set with `key` took two events before (a decision on event `i`
/// is filled at event `i + 1` and earns the move to `i + 2`).
#[must_use]
pub fn planted_prices(key: u64, n: usize, edge: f64, vol: f64, seed: u64) -> Vec<f64> {
    let mut state = mix(seed ^ 0x5eed);
    let mut uniform = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        (mix(state) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut price = 100.0_f64;
    let mut prices = Vec::with_capacity(n);
    for i in 0..n as u64 {
        if i > 0 {
            // Box–Muller: one standard normal per event.
            let (u, v) = (uniform().max(f64::MIN_POSITIVE), uniform());
            let noise = (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            let planted = if i >= 2 {
                edge * planted_side(key, i - 2)
            } else {
                0.0
            };
            price *= (vol * noise + planted).exp();
        }
        prices.push(price);
    }
    prices
}
