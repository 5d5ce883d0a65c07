//! `LeaderboardRows`: how many parameter sets `leaderboard.csv` ranks.

/// How many parameter sets `leaderboard.csv` ranks: the best ones (by default the best
/// [`LeaderboardRows::DEFAULT_TOP`], as many as the report's heatmap draws), or every set.
/// Every cell is in `results.parquet` whatever this says.
///
/// ```
/// # extern crate gridtest_sweep as gridtest;
/// use gridtest::sweep::LeaderboardRows;
///
/// assert_eq!("all".parse::<LeaderboardRows>()?, LeaderboardRows::All);
/// assert_eq!("5000".parse::<LeaderboardRows>()?, LeaderboardRows::Top(5_000));
/// assert!("0".parse::<LeaderboardRows>().is_err());
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaderboardRows {
    /// The best this many sets.
    Top(usize),
    /// Every set.
    All,
}

impl LeaderboardRows {
    /// The default: the report's heatmap draws at most this many sets.
    pub const DEFAULT_TOP: usize = crate::sweep::report::MAX_POINTS;

    /// Rows written for a sweep of `sets` parameter sets.
    #[must_use]
    pub fn of(self, sets: usize) -> usize {
        match self {
            Self::Top(n) => n.min(sets),
            Self::All => sets,
        }
    }
}

impl Default for LeaderboardRows {
    fn default() -> Self {
        Self::Top(Self::DEFAULT_TOP)
    }
}

impl std::str::FromStr for LeaderboardRows {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(Self::All);
        }
        match s.parse::<usize>() {
            Ok(n) if n > 0 => Ok(Self::Top(n)),
            _ => Err(format!(
                "`{s}` is not a number of leaderboard rows: a count of at least 1, or `all`"
            )),
        }
    }
}

impl std::fmt::Display for LeaderboardRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Top(n) => write!(f, "{n}"),
            Self::All => f.write_str("all"),
        }
    }
}
