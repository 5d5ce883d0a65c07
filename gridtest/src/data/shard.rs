//! `Shard`: one symbol over an inclusive date range, the unit of data locality.

use std::fmt;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// Identifier of a shard: `SYMBOL:FIRST..LAST` (dates inclusive).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ShardId(pub String);

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One symbol over an inclusive date range. A backtest of a shard is one continuous series:
/// positions and indicator state carry across days.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    symbol: String,
    first: NaiveDate,
    last: NaiveDate,
}

impl Shard {
    /// A shard of `symbol` from `first` to `last`, both included.
    ///
    /// ```
    /// use gridtest::data::Shard;
    /// let s = Shard::new("S000", "2024-01-02".parse().unwrap(), "2024-01-29".parse().unwrap());
    /// assert_eq!(s.id().to_string(), "S000:2024-01-02..2024-01-29");
    /// ```
    #[must_use]
    pub fn new(symbol: impl Into<String>, first: NaiveDate, last: NaiveDate) -> Self {
        Self {
            symbol: symbol.into(),
            first,
            last,
        }
    }

    /// The symbol.
    #[must_use]
    pub fn symbol(&self) -> &str {
        &self.symbol
    }

    /// First date (inclusive).
    #[must_use]
    pub fn first(&self) -> NaiveDate {
        self.first
    }

    /// Last date (inclusive).
    #[must_use]
    pub fn last(&self) -> NaiveDate {
        self.last
    }

    /// The shard's id.
    #[must_use]
    pub fn id(&self) -> ShardId {
        ShardId(self.to_string())
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}..{}", self.symbol, self.first, self.last)
    }
}
