//! `RollingMax`, `RollingMin`: the extremes of a window by a monotonic deque, O(1) amortised
//! per value (a channel scan is O(window)).

/// The largest of the last `window` values (pandas' `s.rolling(window).max()`), NaN before the
/// window is full.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::indicators::RollingMax;
/// let mut high = RollingMax::new(3);
/// let got: Vec<f64> = [1.0, 3.0, 2.0, 1.0, 0.5].iter().map(|&x| high.push(x)).collect();
/// assert!(got[0].is_nan() && got[1].is_nan());
/// assert_eq!(&got[2..], [3.0, 3.0, 2.0]);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RollingMax {
    deque: Deque,
}

/// The smallest of the last `window` values (pandas' `s.rolling(window).min()`), NaN before the
/// window is full.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RollingMin {
    deque: Deque,
}

impl RollingMax {
    /// Over `window` values.
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn new(window: usize) -> Self {
        Self {
            deque: Deque::new(window),
        }
    }

    /// Adds the next value; the window's largest.
    #[inline]
    pub fn push(&mut self, x: f64) -> f64 {
        self.deque.push(x, |kept, new| kept <= new)
    }

    /// The latest maximum.
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> f64 {
        self.deque.value()
    }
}

impl RollingMin {
    /// Over `window` values.
    ///
    /// # Panics
    /// If `window` is 0.
    #[must_use]
    pub fn new(window: usize) -> Self {
        Self {
            deque: Deque::new(window),
        }
    }

    /// Adds the next value; the window's smallest.
    #[inline]
    pub fn push(&mut self, x: f64) -> f64 {
        self.deque.push(x, |kept, new| kept >= new)
    }

    /// The latest minimum.
    #[inline(always)]
    #[must_use]
    pub fn value(&self) -> f64 {
        self.deque.value()
    }
}

/// Candidates for the extreme, oldest first, in a ring of `window` slots: each value is the
/// extreme of the window from its index on.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Deque {
    slots: Box<[(u64, f64)]>,
    head: usize,
    len: usize,
    seen: u64,
    window: u64,
}

impl Deque {
    fn new(window: usize) -> Self {
        assert!(window > 0, "a rolling extreme needs a window of at least 1");
        Self {
            slots: vec![(0, 0.0); window].into_boxed_slice(),
            head: 0,
            len: 0,
            seen: 0,
            window: window as u64,
        }
    }

    #[inline(always)]
    fn at(&self, k: usize) -> usize {
        (self.head + k) % self.slots.len()
    }

    /// Adds `x`, dropping the candidates it beats (`beaten(kept, x)`) and those out of the
    /// window.
    #[inline]
    fn push(&mut self, x: f64, beaten: impl Fn(f64, f64) -> bool) -> f64 {
        let index = self.seen;
        self.seen += 1;
        while self.len > 0 && beaten(self.slots[self.at(self.len - 1)].1, x) {
            self.len -= 1;
        }
        if self.len > 0 && self.slots[self.head].0 + self.window <= index {
            self.head = self.at(1);
            self.len -= 1;
        }
        let tail = self.at(self.len);
        self.slots[tail] = (index, x);
        self.len += 1;
        self.value()
    }

    #[inline(always)]
    fn value(&self) -> f64 {
        if self.seen < self.window || self.len == 0 {
            f64::NAN
        } else {
            self.slots[self.head].1
        }
    }
}
