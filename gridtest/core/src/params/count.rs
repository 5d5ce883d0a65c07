//! Counting a grid's sets without walking its whole product: the constraints name few axes, so
//! the count is the count over those axes times the product of the others. A grid of 2·10¹⁰
//! combinations constrained by `fast < slow` is counted over its `fast × slow` plane. A count
//! can be stopped (a signal while a sweep is planned).

use std::collections::BTreeSet;

use super::constraint::Operand;
use super::grid::Grid;

impl Grid {
    /// Exact number of parameter sets, as [`Grid::len`], asking `keep_going` every so many
    /// combinations walked: `None` as soon as it says no.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::Grid;
    /// let g = Grid::new().axis("a", 0..100).axis("b", 0..100).constrain("a < b");
    /// assert_eq!(g.len_while(|| true), Some(4950));
    /// assert_eq!(g.len_while(|| false), None);
    /// ```
    pub fn len_while(&self, keep_going: impl Fn() -> bool) -> Option<usize> {
        let n = match self.factorised() {
            Some((plane, free)) => plane.walk_count(&keep_going)?.saturating_mul(free),
            None => self.walk_count(&keep_going)?,
        };
        Some(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn walk_count(&self, keep_going: &dyn Fn() -> bool) -> Option<u64> {
        self.slice(0..self.product_len() as u64)
            .count_accepted_while(keep_going)
    }

    /// The grid of the axes the constraints name (with the constraints), and the product of
    /// the other axes' lengths; `None` for a sampled grid or a kept list (whose membership
    /// depends on the whole position), or a constraint on no axis (the grid is empty).
    fn factorised(&self) -> Option<(Grid, u64)> {
        if self.sampled().is_some() || self.kept().is_some() {
            return None;
        }
        let mut named = BTreeSet::new();
        for c in self.constraints() {
            named.insert(c.left.as_str());
            if let Operand::Axis(a) = &c.right {
                named.insert(a.as_str());
            }
        }
        if named
            .iter()
            .any(|n| !self.axes().iter().any(|a| a.name == *n))
        {
            return None;
        }
        let (constrained, free): (Vec<_>, Vec<_>) = self
            .axes()
            .iter()
            .partition(|a| named.contains(a.name.as_str()));
        let free = free
            .iter()
            .map(|a| a.values.len() as u64)
            .fold(1u64, u64::saturating_mul);
        let plane = self.constraints().iter().fold(
            constrained
                .iter()
                .fold(Grid::new(), |g, a| g.axis(a.name.clone(), a.values.clone())),
            |g, c| g.with_constraint(c.clone()),
        );
        Some((plane, free))
    }
}

#[cfg(test)]
mod tests {
    use crate::params::Grid;

    #[test]
    fn the_factorised_count_equals_the_walk() {
        let grids = [
            Grid::new()
                .axis("fast", (5..=100).step_by(5))
                .axis("slow", (20..=1000).step_by(20))
                .constrain("fast < slow"),
            Grid::new()
                .axis("a", 1..=7_i64)
                .axis("x", [true, false])
                .axis("b", 1..=9_i64)
                .axis("c", [0.5, 1.5, 2.5])
                .constrain("a < b")
                .constrain("c > 1"),
            Grid::new().axis("a", 1..=5_i64).axis("b", 1..=3_i64),
            Grid::new()
                .axis("a", 1..=5_i64)
                .axis("b", 1..=3_i64)
                .constrain("a > 10"),
        ];
        for g in &grids {
            assert_eq!(g.len(), g.iter().count(), "{g:?}");
        }
        assert_eq!(grids[0].len(), 955);
    }

    #[test]
    fn a_huge_grid_is_counted_over_its_constrained_axes() {
        // 20 × 50 × 1000³ = 2·10¹⁰ combinations: 955 × 10⁹ sets, counted at once.
        let g = Grid::new()
            .axis("fast", (5..=100).step_by(5))
            .axis("slow", (20..=1000).step_by(20))
            .axis("a", 0..1000_i64)
            .axis("b", 0..1000_i64)
            .axis("c", 0..1000_i64)
            .constrain("fast < slow");
        let started = std::time::Instant::now();
        assert_eq!(g.len(), 955_000_000_000);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
