//! Pairs trading on a universe of two symbols: the z-score of the log spread
//! `ln(a) − ln(b)` over `window` slices; short the spread (short `a`, long `b`) when it is above
//! `entry`, long it below `−entry`, flat once it has reverted to within `exit` of the mean (or
//! beyond it). Each leg holds `gross/2` of equity.

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

/// Parameters.
#[derive(Params, Clone, Debug)]
pub struct PairsParams {
    /// Slices in the z-score's window.
    pub window: usize,
    /// |z| at which a position opens.
    pub entry: f64,
    /// The z-score the spread must revert to (towards and past 0) to close.
    pub exit: f64,
    /// Gross exposure, both legs together (a fraction of equity).
    pub gross: f64,
}

/// State: the spread's z-score and the side held (+1 long the spread, −1 short, 0 flat).
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct PairsZScore {
    z: ZScore,
    entry: f64,
    exit: f64,
    leg: f64,
    side: f64,
}

#[gridtest::strategy(name = "pairs_zscore", version = "1", carry)]
impl Strategy for PairsZScore {
    type Params = PairsParams;
    type Feed = Bars;

    fn new(p: &PairsParams) -> Self {
        assert!(
            p.exit < p.entry,
            "exit {} must be below entry {}",
            p.exit,
            p.entry
        );
        Self {
            z: ZScore::new(p.window),
            entry: p.entry,
            exit: p.exit,
            leg: p.gross / 2.0,
            side: 0.0,
        }
    }

    fn on_universe(&mut self, now: &Slice<'_, Bars>, targets: &mut [f64]) {
        assert_eq!(
            now.len(),
            2,
            "a pair has two symbols, not {:?}",
            now.symbols()
        );
        if !(now.has(0) && now.has(1)) || !(now.updated(0) || now.updated(1)) {
            return;
        }
        let z = self.z.push(now.close(0).ln() - now.close(1).ln());
        if z.is_nan() {
            return; // warming up (or a flat spread)
        }
        if self.side == 0.0 && z.abs() > self.entry {
            self.side = -z.signum();
        } else if self.side * z > -self.exit {
            self.side = 0.0;
        }
        targets[0] = self.side * self.leg;
        targets[1] = -self.side * self.leg;
    }
}
