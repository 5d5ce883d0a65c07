//! Building blocks for strategies' per-event state, cheap enough for the innermost loop: each
//! allocates once, when the strategy is built, and updates in O(1) (amortised for the rolling
//! extremes) without branching on warm-up beyond a counter.
//!
//! Their arithmetic is stated and matches pandas, operation for operation where it can, so that
//! a strategy ported from pandas (or from a backtester built on it, such as backtesting.py)
//! takes the same decisions on the same prices, ties included:
//!
//! | indicator | pandas expression it equals |
//! |---|---|
//! | [`Sma`] | `s.rolling(n).mean()` (bit for bit: the same compensated sums) |
//! | [`Ewm`] | `s.ewm(alpha=a, adjust=False).mean()`, [`Ewm::span`]: `s.ewm(span=n, adjust=False)` (bit for bit) |
//! | [`RollingStd`] | `s.rolling(n).std()` (sample, `ddof = 1`; the same update, to rounding) |
//! | [`RollingMax`], [`RollingMin`] | `s.rolling(n).max()`, `.min()` (exact) |
//! | [`Rsi`] | Wilder's RSI as `100 − 100 / (1 + g / l)`, `g`, `l` the `ewm(alpha=1/n, adjust=False)` means of the gains and losses of `s.diff()` |
//! | [`Atr`] | the `ewm(alpha=1/n, adjust=False)` mean of the true range `max(h − l, |h − c₋₁|, |l − c₋₁|)` (`h − l` on the first bar) |
//! | [`Bollinger`] | `mid = rolling(n).mean()`, `mid ± k · rolling(n).std()` |
//! | [`ZScore`] | `(s − rolling(n).mean()) / rolling(n).std()` |
//!
//! Each returns NaN where pandas does (before its window is full). `tests/indicators.rs`
//! compares them with pandas on decimal prices.
//!
//! Kept in a strategy, each costs one per parameter set; declared as a shared series
//! ([`Indicator`](crate::strategy::Indicator): `Indicator::sma(n)`, `Indicator::rsi(n)`, …),
//! each distinct one is computed once per unit for every set that reads it, with the same
//! values bit for bit.

mod bands;
mod ewm;
mod extreme;
mod ring;
mod rolling_mean;
mod sma;
mod wilder;

pub use bands::{Bollinger, RollingStd, ZScore};
pub use ewm::Ewm;
pub use extreme::{RollingMax, RollingMin};
pub use rolling_mean::RollingMean;
pub use sma::Sma;
pub use wilder::{Atr, Rsi};
