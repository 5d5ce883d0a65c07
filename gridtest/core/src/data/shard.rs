//! `Shard`: one symbol (or one universe of symbols) over an inclusive date range, the unit of
//! data locality.

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
///
/// A **universe** shard ([`Shard::universe`]) is several symbols over the range under one name:
/// their events merged in time order, for strategies that trade them together
/// ([`crate::Strategy::on_universe`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Shard {
    symbol: String,
    first: NaiveDate,
    last: NaiveDate,
    /// The universe's symbols, in the order the strategy sees them (empty: a single symbol).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    members: Vec<String>,
}

impl Shard {
    /// A shard of `symbol` from `first` to `last`, both included.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
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
            members: Vec::new(),
        }
    }

    /// A universe shard: the symbols `members` under the name `name`, from `first` to `last`.
    /// The strategy sees the members in this order; the id is `NAME:FIRST..LAST`.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::data::Shard;
    /// let d = |s: &str| s.parse().unwrap();
    /// let s = Shard::universe("pair", ["AAA", "BBB"], d("2024-01-02"), d("2024-01-29"));
    /// assert_eq!(s.id().to_string(), "pair:2024-01-02..2024-01-29");
    /// assert_eq!(s.symbols(), ["AAA", "BBB"]);
    /// assert!(s.is_universe());
    /// ```
    #[must_use]
    pub fn universe<M: Into<String>>(
        name: impl Into<String>,
        members: impl IntoIterator<Item = M>,
        first: NaiveDate,
        last: NaiveDate,
    ) -> Self {
        Self {
            symbol: name.into(),
            first,
            last,
            members: members.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether this is a universe of symbols ([`Shard::universe`]).
    #[must_use]
    pub fn is_universe(&self) -> bool {
        !self.members.is_empty()
    }

    /// The symbols whose data the shard reads: the universe's members, or the one symbol.
    #[must_use]
    pub fn symbols(&self) -> &[String] {
        if self.members.is_empty() {
            std::slice::from_ref(&self.symbol)
        } else {
            &self.members
        }
    }

    /// The single-symbol shard of `symbol` over this shard's dates.
    #[must_use]
    pub fn member(&self, symbol: &str) -> Self {
        Self::new(symbol, self.first, self.last)
    }

    /// The same symbol (or universe) from `first` to `last`, both included: a slice of this
    /// shard's history.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::data::Shard;
    /// let d = |s: &str| s.parse().unwrap();
    /// let history = Shard::universe("pair", ["AAA", "BBB"], d("2024-01-02"), d("2024-01-29"));
    /// let week = history.days(d("2024-01-08"), d("2024-01-12"));
    /// assert_eq!(week.id().to_string(), "pair:2024-01-08..2024-01-12");
    /// assert_eq!(week.symbols(), ["AAA", "BBB"]);
    /// ```
    #[must_use]
    pub fn days(&self, first: NaiveDate, last: NaiveDate) -> Self {
        Self {
            first,
            last,
            ..self.clone()
        }
    }

    /// The symbol (a universe's name).
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
