//! A fixed-capacity ring of the last `n` values: what leaves a window as a value enters.

/// The last `capacity` values pushed.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Ring {
    values: Box<[f64]>,
    next: usize,
    len: usize,
}

impl Ring {
    /// An empty ring of `capacity` values (at least 1).
    pub(super) fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a window needs at least one value");
        Self {
            values: vec![0.0; capacity].into_boxed_slice(),
            next: 0,
            len: 0,
        }
    }

    /// Values held.
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds `capacity` values.
    #[inline(always)]
    pub(super) fn is_full(&self) -> bool {
        self.len == self.values.len()
    }

    /// Pushes `x`; the value that left, once full.
    #[inline(always)]
    pub(super) fn push(&mut self, x: f64) -> Option<f64> {
        let full = self.is_full();
        let slot = &mut self.values[self.next];
        let leaving = full.then_some(*slot);
        *slot = x;
        self.next += 1;
        if self.next == self.values.len() {
            self.next = 0;
        }
        if leaving.is_none() {
            self.len += 1;
        }
        leaving
    }
}
