//! Eight of pandas' indicators in one bars strategy, kept per parameter set ([`IndicatorMix`])
//! and declared shared ([`IndicatorMixShared`]): the same decisions from the same values, so
//! every cell is bit-identical, while the shared form computes each distinct indicator once
//! per unit (the EMA, z-score and channel of a window are shared by every `periods` and `k`).

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

/// Parameters: the window of the averages, bands and channel, the periods of the RSI and ATR,
/// and the bands' width in standard deviations.
#[derive(Params, Clone, Debug)]
pub struct MixParams {
    /// Window of the EMA (its span), the z-score, the channel and the Bollinger bands, in bars.
    pub window: usize,
    /// Periods of the RSI and the ATR.
    pub periods: usize,
    /// Width of the Bollinger bands, in standard deviations.
    pub k: f64,
}

/// The indicators' values at one bar.
#[derive(Clone, Copy, Debug)]
struct Values {
    ewm: f64,
    z: f64,
    high: f64,
    low: f64,
    rsi: f64,
    atr: f64,
    upper: f64,
    lower: f64,
}

impl Values {
    /// Long on a majority of bullish votes, short on a majority of bearish ones, flat between
    /// (and until every indicator has a value).
    #[inline(always)]
    fn target(&self, close: f64) -> f64 {
        let v = *self;
        let all = [v.ewm, v.z, v.high, v.low, v.rsi, v.atr, v.upper, v.lower];
        if all.iter().any(|x| x.is_nan()) {
            return 0.0;
        }
        let up = i32::from(close > v.ewm)
            + i32::from(v.rsi > 50.0)
            + i32::from(close > 0.5 * (v.high + v.low))
            + i32::from(close > v.upper)
            + i32::from(v.z > 0.5)
            + i32::from(v.atr > 0.25 * (v.upper - v.lower));
        let down = i32::from(close < v.lower) + i32::from(v.z < -0.5);
        match up - down {
            4.. => 1.0,
            ..=1 => -1.0,
            _ => 0.0,
        }
    }
}

/// Every indicator kept by the parameter set.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct IndicatorMix {
    ewm: Ewm,
    z: ZScore,
    high: RollingMax,
    low: RollingMin,
    rsi: Rsi,
    atr: Atr,
    bands: Bollinger,
}

#[gridtest::strategy(name = "indicator_mix", version = "1", carry)]
impl Strategy for IndicatorMix {
    type Params = MixParams;
    type Feed = Bars;

    fn new(p: &MixParams) -> Self {
        Self {
            ewm: Ewm::span(p.window),
            z: ZScore::new(p.window),
            high: RollingMax::new(p.window),
            low: RollingMin::new(p.window),
            rsi: Rsi::new(p.periods),
            atr: Atr::new(p.periods),
            bands: Bollinger::new(p.window, p.k),
        }
    }

    fn on_data(&mut self, now: &Cursor<'_, Bars>) -> f64 {
        let close = now.close();
        let (lower, _, upper) = self.bands.push(close);
        let values = Values {
            ewm: self.ewm.push(close),
            z: self.z.push(close),
            high: self.high.push(now.high()),
            low: self.low.push(now.low()),
            rsi: self.rsi.push(close),
            atr: self.atr.push(now.high(), now.low(), close),
            upper,
            lower,
        };
        values.target(close)
    }
}

/// [`IndicatorMix`] with its indicators declared shared, in eight slots.
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct IndicatorMixShared;

#[gridtest::strategy(name = "indicator_mix_shared", version = "1", carry)]
impl Strategy for IndicatorMixShared {
    type Params = MixParams;
    type Feed = Bars;

    fn new(_: &MixParams) -> Self {
        Self
    }

    fn shared(p: &MixParams, series: &mut SharedSeries<Bars>) {
        series.add(Indicator::ewm_span(p.window));
        series.add(Indicator::zscore(p.window));
        series.add(Indicator::rolling_max(p.window).of_column(Bars::HIGH));
        series.add(Indicator::rolling_min(p.window).of_column(Bars::LOW));
        series.add(Indicator::rsi(p.periods));
        series.add(Indicator::atr(p.periods));
        series.add(Indicator::bollinger_upper(p.window, p.k));
        series.add(Indicator::bollinger_lower(p.window, p.k));
    }

    fn on_data(&mut self, now: &Cursor<'_, Bars>) -> f64 {
        let values = Values {
            ewm: now.shared(0),
            z: now.shared(1),
            high: now.shared(2),
            low: now.shared(3),
            rsi: now.shared(4),
            atr: now.shared(5),
            upper: now.shared(6),
            lower: now.shared(7),
        };
        values.target(now.close())
    }
}
