//! `Window`: the tile being processed, with the lookback carried in front of it, and what every
//! lane of the tile shares: the price ratios and the growth of a whole long weight.

use super::block::Growth;
use super::kernel::TILE;
use super::shared_pool::{SharedPool, Slots};
use crate::data::{FeedBatch, NS_PER_DAY};
use crate::strategy::{Cursor, Feed, MAX_COLUMNS, Tile};

/// The tile being processed, with the lookback carried in front of it.
pub(super) struct Window {
    pub(super) lookback: usize,
    pub(super) ts: Vec<i64>,
    pub(super) cols: Vec<Vec<f64>>,
    /// Events in the current tile.
    pub(super) len: usize,
    /// Fill price / previous mark, per event of the tile.
    pub(super) g_fill: Vec<f64>,
    /// Mark / fill (bars: close / open), per event of the tile.
    pub(super) g_hold: Vec<f64>,
    /// What every lane flat or long its whole equity shares, per event of the tile.
    pub(super) growth: Vec<Growth>,
    last_mark: f64,
    /// When recording days: the tile positions where a new day starts (never the shard's first
    /// event), and the day of the last event loaded.
    pub(super) day_starts: Vec<usize>,
    pub(super) day: Option<i64>,
}

impl Window {
    pub(super) fn new(lookback: usize, n_cols: usize) -> Self {
        Self {
            lookback,
            ts: vec![0; lookback + TILE],
            cols: vec![vec![0.0; lookback + TILE]; n_cols],
            len: 0,
            g_fill: vec![1.0; TILE],
            g_hold: vec![1.0; TILE],
            growth: vec![Growth::default(); TILE],
            last_mark: f64::NAN,
            day_starts: Vec::new(),
            day: None,
        }
    }

    /// Finds where days start in the current tile; returns the days that ended in it.
    pub(super) fn mark_days(&mut self, ended: &mut Vec<i64>) {
        self.day_starts.clear();
        let ts = &self.ts[self.lookback..self.lookback + self.len];
        for (j, t) in ts.iter().enumerate() {
            let day = t.div_euclid(NS_PER_DAY);
            match self.day {
                Some(d) if d == day => {}
                Some(d) => {
                    ended.push(d);
                    self.day_starts.push(j);
                    self.day = Some(day);
                }
                None => self.day = Some(day),
            }
        }
    }

    /// Shifts the last `lookback` events to the front and copies events `range` of `batch` after.
    pub(super) fn load<F: Feed>(&mut self, batch: &FeedBatch, range: std::ops::Range<usize>) {
        let (l, n) = (self.lookback, range.len());
        debug_assert!(n <= TILE);
        if l > 0 {
            self.ts.copy_within(self.len..self.len + l, 0);
            for c in &mut self.cols {
                c.copy_within(self.len..self.len + l, 0);
            }
        }
        self.ts[l..l + n].copy_from_slice(&batch.ts()[range.clone()]);
        for (dst, src) in self.cols.iter_mut().zip(batch.columns()) {
            dst[l..l + n].copy_from_slice(&src[range.clone()]);
        }
        self.len = n;
        let fill = &self.cols[F::FILL][l..l + n];
        let mark = &self.cols[F::MARK][l..l + n];
        let mut prev = self.last_mark;
        for j in 0..n {
            self.g_fill[j] = fill[j] / prev;
            prev = mark[j];
        }
        if F::INTRABAR {
            for j in 0..n {
                self.g_hold[j] = mark[j] / fill[j];
            }
        }
        for j in 0..n {
            self.growth[j] = Growth::new(F::INTRABAR, self.g_fill[j], self.g_hold[j]);
        }
        self.last_mark = prev;
    }

    fn columns(&self) -> [&[f64]; MAX_COLUMNS] {
        let end = self.lookback + self.len;
        let mut cols: [&[f64]; MAX_COLUMNS] = [&[]; MAX_COLUMNS];
        for (slot, c) in cols.iter_mut().zip(&self.cols) {
            *slot = &c[..end];
        }
        cols
    }

    /// A cursor over the tile (`seen` events of the shard before it), for a lane that reads
    /// no shared series.
    pub(super) fn cursor<F: Feed>(&self, seen: u64) -> Cursor<'_, F> {
        let end = self.lookback + self.len;
        Cursor::new(
            &self.ts[..end],
            self.columns(),
            self.lookback,
            self.lookback,
            seen,
        )
    }

    /// A cursor over the tile for the lane whose shared series `pool` holds at `slots`.
    #[inline(always)]
    pub(super) fn lane_cursor<'a, F: Feed>(
        &'a self,
        seen: u64,
        pool: &'a SharedPool<F>,
        slots: &Slots,
    ) -> Cursor<'a, F> {
        self.cursor(seen)
            .with_shared(pool.slices(slots, self.len), self.len)
    }

    /// The tile as shared series see it.
    pub(super) fn tile<F: Feed>(&self, seen: u64) -> Tile<'_, F> {
        let end = self.lookback + self.len;
        Tile::new(&self.ts[..end], self.columns(), self.lookback, seen)
    }
}

/// What a window carries from one slice of a history to the next: the events its lookback
/// still reads, the last mark and the day of the last event.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct WindowState {
    ts: Vec<i64>,
    cols: Vec<Vec<f64>>,
    last_mark: f64,
    day: Option<i64>,
}

impl Window {
    /// The state after the current tile.
    pub(super) fn save(&self) -> WindowState {
        let carried = self.len..self.len + self.lookback;
        WindowState {
            ts: self.ts[carried.clone()].to_vec(),
            cols: self
                .cols
                .iter()
                .map(|c| c[carried.clone()].to_vec())
                .collect(),
            last_mark: self.last_mark,
            day: self.day,
        }
    }

    /// Takes up `state` as if its events had just been loaded; `false` (nothing changed) when
    /// it is not a window of this lookback and these columns.
    pub(super) fn restore(&mut self, state: WindowState) -> bool {
        let l = self.lookback;
        let fits = state.ts.len() == l
            && state.cols.len() == self.cols.len()
            && state.cols.iter().all(|c| c.len() == l);
        if !fits {
            return false;
        }
        self.ts[..l].copy_from_slice(&state.ts);
        for (dst, src) in self.cols.iter_mut().zip(&state.cols) {
            dst[..l].copy_from_slice(src);
        }
        self.len = 0;
        self.last_mark = state.last_mark;
        self.day = state.day;
        true
    }
}

/// Where the tile that starts at event `start` of a batch of `len` ends, after `seen` events of
/// the shard: at the shard's next multiple of [`TILE`], or the batch's end.
pub(super) fn tile_end(seen: u64, start: usize, len: usize) -> usize {
    let to_boundary = TILE - usize::try_from(seen % TILE as u64).unwrap_or(0);
    (start + to_boundary).min(len)
}
