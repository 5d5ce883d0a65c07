//! `Indicator`: the pandas-exact indicators of [`crate::indicators`] as shared series, keyed by
//! their parameters.

use serde::{Deserialize, Serialize};

use super::{Feed, Series, Tile};
use crate::indicators::{
    Atr, Bollinger, Ewm, RollingMax, RollingMin, RollingStd, Rsi, Sma, ZScore,
};

/// One of the pandas-exact indicators of [`crate::indicators`] declared as a shared series: each
/// distinct one (same kind, parameters and column) is computed once per unit, by the very
/// indicator a lane would keep (the same `push`, event after event), and every parameter set
/// that declared an equal one reads its values ([`Cursor::shared`](super::Cursor::shared)). So
/// a lane reading it decides exactly as a lane keeping its own — bit for bit, ties included —
/// and as pandas does (the table of [`crate::indicators`]).
///
/// Values are NaN where pandas' are (before the window is full): a comparison with NaN is
/// false, so a strategy needs no warm-up count of its own.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::prelude::*;
///
/// #[derive(Params, Clone, Debug)]
/// pub struct CrossParams { pub fast: usize, pub slow: usize }
///
/// /// Long while pandas' `rolling(fast).mean()` of the price is above `rolling(slow).mean()`.
/// pub struct Cross;
///
/// #[gridtest::strategy(name = "doc_indicator_cross")]
/// impl Strategy for Cross {
///     type Params = CrossParams;
///     type Feed = Ticks;
///     fn new(_: &CrossParams) -> Self { Self }
///     fn shared(p: &CrossParams, series: &mut SharedSeries<Ticks>) {
///         series.add(Indicator::sma(p.fast)); // slot 0, computed once for every set with this `fast`
///         series.add(Indicator::sma(p.slow)); // slot 1
///     }
///     fn on_data(&mut self, now: &Cursor<'_, Ticks>) -> f64 {
///         if now.shared(0) > now.shared(1) { 1.0 } else { 0.0 }
///     }
/// }
/// # let _ = Cross;
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Indicator {
    kind: Kind,
    /// The column it reads (`None`: the feed's mark, ticks `price`, bars `close`).
    column: Option<usize>,
    state: State,
}

/// What an indicator computes, with its parameters: with the column, its key.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
enum Kind {
    Sma(usize),
    Ewm(f64),
    RollingStd(usize),
    ZScore(usize),
    RollingMax(usize),
    RollingMin(usize),
    Rsi(usize),
    Atr(usize),
    BollingerUpper(usize, f64),
    BollingerLower(usize, f64),
}

/// The running indicator.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum State {
    Sma(Sma),
    Ewm(Ewm),
    RollingStd(RollingStd),
    ZScore(ZScore),
    RollingMax(RollingMax),
    RollingMin(RollingMin),
    Rsi(Rsi),
    Atr(Atr),
    /// The bands, and whether the series is the upper one.
    Bollinger(Bollinger, bool),
}

impl Indicator {
    fn of(kind: Kind, state: State) -> Self {
        Self {
            kind,
            column: None,
            state,
        }
    }

    /// pandas' `s.rolling(window).mean()` ([`Sma`]).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn sma(window: usize) -> Self {
        Self::of(Kind::Sma(window), State::Sma(Sma::new(window)))
    }

    /// pandas' `s.ewm(alpha=alpha, adjust=False).mean()` ([`Ewm`]).
    ///
    /// # Panics
    /// If `alpha` is not in (0, 1].
    #[must_use]
    pub fn ewm(alpha: f64) -> Self {
        Self::of(Kind::Ewm(alpha), State::Ewm(Ewm::new(alpha)))
    }

    /// pandas' `s.ewm(span=span, adjust=False).mean()` ([`Ewm::span`]; equal to
    /// [`Indicator::ewm`] of its `alpha`, and shared with it).
    ///
    /// # Panics
    /// If `span` is 0.
    #[must_use]
    pub fn ewm_span(span: usize) -> Self {
        let ewm = Ewm::span(span);
        Self::of(Kind::Ewm(ewm.alpha()), State::Ewm(ewm))
    }

    /// pandas' `s.rolling(window).std()` ([`RollingStd`]).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn rolling_std(window: usize) -> Self {
        let std = RollingStd::new(window);
        Self::of(Kind::RollingStd(window), State::RollingStd(std))
    }

    /// `(s − rolling(window).mean()) / rolling(window).std()` ([`ZScore`]).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn zscore(window: usize) -> Self {
        Self::of(Kind::ZScore(window), State::ZScore(ZScore::new(window)))
    }

    /// pandas' `s.rolling(window).max()` ([`RollingMax`]).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn rolling_max(window: usize) -> Self {
        let max = RollingMax::new(window);
        Self::of(Kind::RollingMax(window), State::RollingMax(max))
    }

    /// pandas' `s.rolling(window).min()` ([`RollingMin`]).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn rolling_min(window: usize) -> Self {
        let min = RollingMin::new(window);
        Self::of(Kind::RollingMin(window), State::RollingMin(min))
    }

    /// Wilder's RSI of `periods` periods ([`Rsi`]).
    ///
    /// # Panics
    /// If `periods` is 0.
    #[must_use]
    pub fn rsi(periods: usize) -> Self {
        Self::of(Kind::Rsi(periods), State::Rsi(Rsi::new(periods)))
    }

    /// Wilder's average true range of `periods` events ([`Atr`]), from the feed's high, low and
    /// close (ticks: the price for all three).
    ///
    /// # Panics
    /// If `periods` is 0.
    #[must_use]
    pub fn atr(periods: usize) -> Self {
        Self::of(Kind::Atr(periods), State::Atr(Atr::new(periods)))
    }

    /// The upper Bollinger band, `rolling(window).mean() + k · rolling(window).std()`
    /// ([`Bollinger`]; the middle band is [`Indicator::sma`]).
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn bollinger_upper(window: usize, k: f64) -> Self {
        let bands = Bollinger::new(window, k);
        Self::of(
            Kind::BollingerUpper(window, k),
            State::Bollinger(bands, true),
        )
    }

    /// The lower Bollinger band, `rolling(window).mean() − k · rolling(window).std()`.
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn bollinger_lower(window: usize, k: f64) -> Self {
        let bands = Bollinger::new(window, k);
        Self::of(
            Kind::BollingerLower(window, k),
            State::Bollinger(bands, false),
        )
    }

    /// The same indicator of column `column` of the feed ([`Feed::COLUMNS`] order: ticks
    /// `price`, `size`; bars `open` … `volume`) rather than of its mark (ticks `price`, bars
    /// `close`): `Indicator::rolling_max(20).of_column(Bars::HIGH)`.
    ///
    /// # Panics
    /// On [`Indicator::atr`], which reads the high, the low and the close.
    #[must_use]
    pub fn of_column(self, column: usize) -> Self {
        assert!(
            !matches!(self.kind, Kind::Atr(_)),
            "an ATR reads the feed's high, low and close: it has no column to choose"
        );
        Self {
            column: Some(column),
            ..self
        }
    }

    /// The column of feed `F` it reads (`None` for an ATR, which reads the high, low and
    /// close).
    pub(crate) fn column_in<F: Feed>(&self) -> Option<usize> {
        match self.kind {
            Kind::Atr(_) => None,
            _ => Some(self.column.unwrap_or(F::MARK)),
        }
    }

    /// Its column and window, if it is a rolling mean ([`Indicator::sma`]); the column `None`
    /// for the feed's mark.
    pub(crate) fn mean_window(&self) -> Option<(Option<usize>, usize)> {
        match self.kind {
            Kind::Sma(window) => Some((self.column, window)),
            _ => None,
        }
    }

    /// Its running mean, if it is a rolling mean ([`Indicator::sma`]).
    pub(crate) fn mean_mut(&mut self) -> Option<&mut Sma> {
        match &mut self.state {
            State::Sma(sma) => Some(sma),
            _ => None,
        }
    }

    /// Takes up the state of a rolling mean whose last values (up to its window) are `last`,
    /// every sum of them exact: its indicator fed them afresh, which gives the same exact sum,
    /// zero compensations, ring and counts. Nothing for another kind.
    pub(crate) fn take_up_mean(&mut self, last: &[f64]) {
        if let Kind::Sma(window) = self.kind {
            let mut sma = Sma::new(window);
            for &x in last {
                sma.push(x);
            }
            self.state = State::Sma(sma);
        }
    }
}

impl PartialEq for Indicator {
    /// Equal kind, parameters and column: the series' key, whatever their running state.
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.column == other.column
    }
}

impl<F: Feed> Series<F> for Indicator {
    /// None, but for a rolling mean its window: the indicator keeps what it needs of the past
    /// itself, and the engine fills a mean from the window's values while it can (see
    /// `engine::exact_means`).
    fn lookback(&self) -> usize {
        match self.kind {
            Kind::Sma(window) => window,
            _ => 0,
        }
    }

    fn fill(&mut self, tile: &Tile<'_, F>, out: &mut [f64]) {
        let events = tile.lookback()..tile.lookback() + out.len();
        let values = &tile.column(self.column.unwrap_or(F::MARK))[events.clone()];
        match &mut self.state {
            State::Sma(sma) => each(values, out, |x| sma.push(x)),
            State::Ewm(ewm) => each(values, out, |x| ewm.push(x)),
            State::RollingStd(std) => each(values, out, |x| std.push(x)),
            State::ZScore(z) => each(values, out, |x| z.push(x)),
            State::RollingMax(max) => each(values, out, |x| max.push(x)),
            State::RollingMin(min) => each(values, out, |x| min.push(x)),
            State::Rsi(rsi) => each(values, out, |x| rsi.push(x)),
            State::Bollinger(bands, true) => each(values, out, |x| bands.push(x).2),
            State::Bollinger(bands, false) => each(values, out, |x| bands.push(x).0),
            State::Atr(atr) => {
                let high = &tile.column(F::HIGH)[events.clone()];
                let low = &tile.column(F::LOW)[events.clone()];
                let close = &tile.column(F::MARK)[events];
                for (j, value) in out.iter_mut().enumerate() {
                    *value = atr.push(high[j], low[j], close[j]);
                }
            }
        }
    }
}

/// `out[j] = push(values[j])`, in order: one tight loop per indicator kind.
#[inline(always)]
fn each(values: &[f64], out: &mut [f64], mut push: impl FnMut(f64) -> f64) {
    for (value, &x) in out.iter_mut().zip(values) {
        *value = push(x);
    }
}

#[cfg(test)]
mod tests {
    use super::Indicator;
    use crate::indicators::{
        Atr, Bollinger, Ewm, RollingMax, RollingMin, RollingStd, Rsi, Sma, ZScore,
    };
    use crate::strategy::{Bars, MAX_COLUMNS, Series, Tile};

    /// Bars whose closes repeat and tie, over three tiles of uneven length.
    fn bars() -> Vec<[f64; 5]> {
        (0..700)
            .map(|i| {
                let close = 100.0 + f64::from((i * 37) % 23) * 0.1 - f64::from(i % 7) * 0.01;
                let close = if i % 50 < 12 { 101.3 } else { close };
                [close - 0.05, close + 0.2, close - 0.3, close, 1.0]
            })
            .collect()
    }

    /// The indicator's values over `bars`, filled tile by tile as the shared pool does.
    fn filled(mut indicator: Indicator, bars: &[[f64; 5]]) -> Vec<f64> {
        let columns: Vec<Vec<f64>> = (0..5)
            .map(|c| bars.iter().map(|b| b[c]).collect())
            .collect();
        let ts = vec![0i64; bars.len()];
        let mut values = vec![f64::NAN; bars.len()];
        for (start, end) in [(0, 1), (1, 300), (300, bars.len())] {
            let mut cols: [&[f64]; MAX_COLUMNS] = [&[]; MAX_COLUMNS];
            for (slot, column) in cols.iter_mut().zip(&columns) {
                *slot = &column[start..end];
            }
            let tile = Tile::<Bars>::new(&ts[start..end], cols, 0, start as u64);
            Series::<Bars>::fill(&mut indicator, &tile, &mut values[start..end]);
        }
        values
    }

    fn same_bits(shared: &[f64], own: &[f64], what: &str) {
        assert_eq!(shared.len(), own.len());
        for (i, (s, o)) in shared.iter().zip(own).enumerate() {
            assert_eq!(s.to_bits(), o.to_bits(), "{what} at bar {i}: {s} vs {o}");
        }
        assert!(
            own.iter().any(|v| v.is_finite()),
            "{what} never has a value"
        );
    }

    /// Every kind filled tile by tile equals the indicator pushed bar by bar, bit for bit.
    #[test]
    fn each_kind_fills_as_its_indicator_pushes() {
        let bars = bars();
        let closes: Vec<f64> = bars.iter().map(|b| b[3]).collect();
        let highs: Vec<f64> = bars.iter().map(|b| b[1]).collect();
        let lows: Vec<f64> = bars.iter().map(|b| b[2]).collect();
        let own = |mut push: Box<dyn FnMut(f64) -> f64>, xs: &[f64]| -> Vec<f64> {
            xs.iter().map(|&x| push(x)).collect()
        };
        let mut sma = Sma::new(20);
        let mut ewm = Ewm::span(9);
        let mut std = RollingStd::new(15);
        let mut z = ZScore::new(15);
        let mut max = RollingMax::new(30);
        let mut min = RollingMin::new(30);
        let mut rsi = Rsi::new(14);
        let mut up = Bollinger::new(20, 2.0);
        let mut down = Bollinger::new(20, 2.0);
        let cases: [(&str, Indicator, Vec<f64>); 9] = [
            (
                "sma",
                Indicator::sma(20),
                own(Box::new(|x| sma.push(x)), &closes),
            ),
            (
                "ewm",
                Indicator::ewm_span(9),
                own(Box::new(|x| ewm.push(x)), &closes),
            ),
            (
                "std",
                Indicator::rolling_std(15),
                own(Box::new(|x| std.push(x)), &closes),
            ),
            (
                "zscore",
                Indicator::zscore(15),
                own(Box::new(|x| z.push(x)), &closes),
            ),
            (
                "max of highs",
                Indicator::rolling_max(30).of_column(1),
                own(Box::new(|x| max.push(x)), &highs),
            ),
            (
                "min of lows",
                Indicator::rolling_min(30).of_column(2),
                own(Box::new(|x| min.push(x)), &lows),
            ),
            (
                "rsi",
                Indicator::rsi(14),
                own(Box::new(|x| rsi.push(x)), &closes),
            ),
            (
                "upper band",
                Indicator::bollinger_upper(20, 2.0),
                own(Box::new(|x| up.push(x).2), &closes),
            ),
            (
                "lower band",
                Indicator::bollinger_lower(20, 2.0),
                own(Box::new(|x| down.push(x).0), &closes),
            ),
        ];
        for (what, indicator, own) in cases {
            same_bits(&filled(indicator, &bars), &own, what);
        }
        let mut atr = Atr::new(14);
        let own: Vec<f64> = bars.iter().map(|b| atr.push(b[1], b[2], b[3])).collect();
        same_bits(&filled(Indicator::atr(14), &bars), &own, "atr");
    }

    #[test]
    fn the_key_is_kind_parameters_and_column() {
        assert_eq!(Indicator::sma(5), Indicator::sma(5));
        assert_ne!(Indicator::sma(5), Indicator::sma(6));
        assert_ne!(Indicator::sma(5), Indicator::rolling_max(5));
        assert_ne!(Indicator::sma(5), Indicator::sma(5).of_column(1));
        assert_eq!(Indicator::ewm_span(9), Indicator::ewm(0.2));
        assert_ne!(
            Indicator::bollinger_upper(20, 2.0),
            Indicator::bollinger_lower(20, 2.0)
        );
        let mut pushed = Indicator::sma(5);
        let tile = Tile::<Bars>::new(&[0], [&[1.0], &[1.0], &[1.0], &[1.0], &[1.0]], 0, 0);
        Series::<Bars>::fill(&mut pushed, &tile, &mut [0.0]);
        assert_eq!(pushed, Indicator::sma(5), "running state aside");
    }
}
