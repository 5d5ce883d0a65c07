//! Cross-sectional momentum over a universe: every `every` slices, rank the members by their
//! return over the last `lookback` slices and hold the best `top` with equal weights (the rest
//! flat), gross exposure 1.

use std::collections::VecDeque;

use gridtest::prelude::*;
use gridtest::serde::{Deserialize, Serialize};

/// Parameters.
#[derive(Params, Clone, Debug)]
pub struct RotationParams {
    /// Slices the momentum is measured over.
    pub lookback: usize,
    /// Members held.
    pub top: usize,
    /// Slices between rebalances.
    pub every: usize,
}

/// State: each member's recent marks, and scratch space for the ranking (sized once, at the
/// first slice).
#[derive(Debug, Serialize, Deserialize)]
#[serde(crate = "gridtest::serde")]
pub struct Rotation {
    lookback: usize,
    top: usize,
    every: u64,
    marks: Vec<VecDeque<f64>>,
    order: Vec<usize>,
    score: Vec<f64>,
}

#[gridtest::strategy(name = "rotation", version = "1", carry)]
impl Strategy for Rotation {
    type Params = RotationParams;
    type Feed = Bars;

    fn new(p: &RotationParams) -> Self {
        assert!(
            p.lookback > 0 && p.top > 0 && p.every > 0,
            "lookback, top and every must be > 0"
        );
        Self {
            lookback: p.lookback,
            top: p.top,
            every: p.every as u64,
            marks: Vec::new(),
            order: Vec::new(),
            score: Vec::new(),
        }
    }

    fn on_universe(&mut self, now: &Slice<'_, Bars>, targets: &mut [f64]) {
        let n = now.len();
        if self.marks.is_empty() {
            self.marks = (0..n)
                .map(|_| VecDeque::with_capacity(self.lookback + 1))
                .collect();
            self.order = (0..n).collect();
            self.score = vec![0.0; n];
        }
        for (m, marks) in self.marks.iter_mut().enumerate() {
            if now.has(m) {
                if marks.len() > self.lookback {
                    marks.pop_front();
                }
                marks.push_back(now.close(m));
            }
        }
        let ready = self.marks.iter().all(|q| q.len() > self.lookback);
        if !ready || now.index() % self.every != 0 {
            return;
        }
        for (score, q) in self.score.iter_mut().zip(&self.marks) {
            *score = q[q.len() - 1] / q[0] - 1.0;
        }
        let score = &self.score;
        self.order
            .sort_unstable_by(|&a, &b| score[b].total_cmp(&score[a]).then(a.cmp(&b)));
        let held = self.top.min(n);
        targets.fill(0.0);
        for &m in &self.order[..held] {
            targets[m] = 1.0 / held as f64;
        }
    }
}
