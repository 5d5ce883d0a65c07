//! The description of a sweep: [`SweepDescription`] (data: what a submission sends, what the
//! persisted spec and the scorers' context are derived from) and [`Sweep`], its builder with the
//! strategy resolved.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::SweepError;
use crate::data::Universe;
use crate::engine::{ExecModel, ExposureBasis};
use crate::params::Grid;
use crate::registry::{StrategyEntry, StrategyError, entry, find_strategy};
use crate::strategy::RegisteredStrategy;

/// What a sweep is, as data: a registered strategy's name, the grid, the data selection and the
/// execution model. The one description of a sweep: a [`Sweep`] holds it, a submission sends it
/// (`SweepRequest`), and the persisted spec (`SweepSpec`, whose hash is the sweep id) and the
/// scorers' context (`SweepContext`) are derived from it and the dataset's listing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepDescription {
    /// Registered strategy name.
    pub strategy: String,
    /// The grid.
    pub grid: Grid,
    /// Dataset root (path, `file://` or `s3://` URL, as the nodes see it).
    pub data: Option<String>,
    /// Symbols (all when `None`).
    pub symbols: Option<Vec<String>>,
    /// Universes: when any is set, each is one shard of its members (a portfolio strategy's
    /// data) and `symbols` is not used.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub universes: Vec<Universe>,
    /// First date.
    pub from: Option<NaiveDate>,
    /// Last date.
    pub to: Option<NaiveDate>,
    /// Execution model.
    pub exec: ExecModel,
    /// The rung of a search this sweep is (successive halving), if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<Box<super::SearchRung>>,
}

/// A sweep: a registered strategy, a parameter grid, a dataset with a selection of symbols and
/// dates, and an execution model.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// # use gridtest_sweep::sweep::Sweep;
/// use gridtest::prelude::*;
/// # #[derive(Params, Clone, Debug)] struct P { fast: usize, slow: usize }
/// # struct Sma;
/// # #[gridtest::strategy(name = "doc_sweep_sma")]
/// # impl Strategy for Sma {
/// #     type Params = P; type Feed = Ticks;
/// #     fn new(_: &P) -> Self { Sma }
/// #     fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 { 0.0 }
/// # }
/// let sweep = Sweep::of::<Sma>()
///     .grid(Grid::new()
///         .axis("fast", (5..=100).step_by(5))
///         .axis("slow", (20..=1000).step_by(20))
///         .constrain("fast < slow"))
///     .data("/data/ticks")
///     .symbols(["S000", "S001"])
///     .commission_bps(1.0);
/// assert!(sweep.validate().is_ok());
/// assert_eq!(sweep.grid_ref().len(), 955);
/// ```
#[derive(Clone, Debug)]
pub struct Sweep {
    strategy: StrategyEntry,
    description: SweepDescription,
}

impl Sweep {
    /// A sweep of strategy `S` with an empty grid and the default execution model.
    #[must_use]
    pub fn of<S: RegisteredStrategy>() -> Self {
        Self::with_entry(entry::<S>())
    }

    /// A sweep of the strategy registered under `name`.
    ///
    /// # Errors
    /// [`StrategyError`] if no strategy (or more than one) has that name.
    pub fn named(name: &str) -> Result<Self, StrategyError> {
        Ok(Self::with_entry(*find_strategy(name)?))
    }

    fn with_entry(strategy: StrategyEntry) -> Self {
        Self {
            strategy,
            description: SweepDescription {
                strategy: strategy.name.to_owned(),
                grid: Grid::new(),
                data: None,
                symbols: None,
                universes: Vec::new(),
                from: None,
                to: None,
                exec: ExecModel::default(),
                search: None,
            },
        }
    }

    /// The sweep a description names, its strategy found in this binary's registry.
    ///
    /// # Errors
    /// [`StrategyError`] if no strategy (or more than one) has the description's name.
    pub fn from_description(description: SweepDescription) -> Result<Self, StrategyError> {
        Ok(Self {
            strategy: *find_strategy(&description.strategy)?,
            description,
        })
    }

    /// What this sweep is, as data (what a submission sends).
    #[must_use]
    pub fn description(&self) -> &SweepDescription {
        &self.description
    }

    /// Marks this sweep as a rung of a search (its spec records it).
    #[must_use]
    pub fn rung(mut self, rung: super::SearchRung) -> Self {
        self.description.search = Some(Box::new(rung));
        self
    }

    /// Sets the grid.
    #[must_use]
    pub fn grid(mut self, grid: Grid) -> Self {
        self.description.grid = grid;
        self
    }

    /// Sets the dataset location (path, `file://` or `s3://` URL).
    #[must_use]
    pub fn data(mut self, location: impl Into<String>) -> Self {
        self.description.data = Some(location.into());
        self
    }

    /// Restricts to these symbols (default: every symbol of the dataset).
    #[must_use]
    pub fn symbols<S: Into<String>>(mut self, symbols: impl IntoIterator<Item = S>) -> Self {
        self.description.symbols = Some(symbols.into_iter().map(Into::into).collect());
        self
    }

    /// Adds a universe: the symbols `members` traded together by a portfolio strategy
    /// ([`crate::strategy::Strategy::on_universe`]), one shard named `name` over the sweep's dates.
    /// With universes set, the sweep's shards are its universes.
    #[must_use]
    pub fn universe<S: Into<String>>(
        mut self,
        name: impl Into<String>,
        members: impl IntoIterator<Item = S>,
    ) -> Self {
        self.description.universes.push(Universe {
            name: name.into(),
            symbols: members.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Removes every universe (a binary's default, replaced by `--universe` flags).
    #[must_use]
    pub fn clear_universes(mut self) -> Self {
        self.description.universes.clear();
        self
    }

    /// The universes (empty: one shard per symbol).
    #[must_use]
    pub fn universes(&self) -> &[Universe] {
        &self.description.universes
    }

    /// Restricts to dates between `from` and `to`, inclusive (`None`: open end).
    #[must_use]
    pub fn dates(mut self, from: Option<NaiveDate>, to: Option<NaiveDate>) -> Self {
        self.description.from = from;
        self.description.to = to;
        self
    }

    /// Sets the execution model.
    #[must_use]
    pub fn exec(mut self, exec: ExecModel) -> Self {
        self.description.exec = exec;
        self
    }

    /// Sets the commission, basis points of traded notional.
    #[must_use]
    pub fn commission_bps(mut self, bps: f64) -> Self {
        self.description.exec.commission_bps = bps;
        self
    }

    /// Sets the slippage, basis points of traded notional.
    #[must_use]
    pub fn slippage_bps(mut self, bps: f64) -> Self {
        self.description.exec.slippage_bps = bps;
        self
    }

    /// The strategy.
    #[must_use]
    pub fn strategy(&self) -> &StrategyEntry {
        &self.strategy
    }

    /// The grid.
    #[must_use]
    pub fn grid_ref(&self) -> &Grid {
        &self.description.grid
    }

    /// The dataset location.
    #[must_use]
    pub fn data_location(&self) -> Option<&str> {
        self.description.data.as_deref()
    }

    /// The symbol selection.
    #[must_use]
    pub fn symbol_selection(&self) -> Option<&[String]> {
        self.description.symbols.as_deref()
    }

    /// The date selection.
    #[must_use]
    pub fn date_range(&self) -> (Option<NaiveDate>, Option<NaiveDate>) {
        (self.description.from, self.description.to)
    }

    /// The execution model.
    #[must_use]
    pub fn exec_model(&self) -> &ExecModel {
        &self.description.exec
    }

    /// Checks everything that can be checked without reading data, and reports every problem
    /// at once: the grid against the strategy's parameters (empty grid, unknown axis, type
    /// mismatch, bad constraint), the execution model, a missing dataset, an empty date range.
    ///
    /// # Errors
    /// [`SweepError::Invalid`] listing the problems.
    pub fn validate(&self) -> Result<(), SweepError> {
        let mut problems = Vec::new();
        if let Err(e) = self.description.grid.check((self.strategy.schema)()) {
            problems.extend(e.0.iter().map(ToString::to_string));
        }
        if let Err(bad) = self.description.exec.validate() {
            problems.extend(bad);
        }
        if self.description.exec.exposure == ExposureBasis::ClosedTrades && !self.strategy.orders {
            problems.push(format!(
                "exposure closed-trades (backtesting.py's Exposure Time) is measured on the \
                 orders path, and {} trades by targets: use exposure position",
                self.strategy.name
            ));
        }
        if self.description.data.is_none() {
            problems.push("no dataset: set one with .data(…) or --data".to_owned());
        }
        if let (Some(f), Some(t)) = (self.description.from, self.description.to)
            && f > t
        {
            problems.push(format!("the date range {f}..{t} is empty"));
        }
        if self.description.symbols.as_ref().is_some_and(Vec::is_empty) {
            problems.push("the symbol list is empty".to_owned());
        }
        problems.extend(self.universe_problems());
        if problems.is_empty() {
            Ok(())
        } else {
            Err(SweepError::Invalid {
                strategy: self.strategy.name.to_owned(),
                problems,
            })
        }
    }
}

impl Sweep {
    /// What is wrong with the universes for this strategy: a portfolio strategy without a
    /// universe is fine (each symbol is a universe of one), a single-symbol strategy with one is
    /// not; names must be unique and not symbols of the universes, members unique.
    fn universe_problems(&self) -> Vec<String> {
        let universes = &self.description.universes;
        let mut problems = Vec::new();
        if !universes.is_empty() && !self.strategy.universe {
            problems.push(format!(
                "universes are set but strategy `{}` trades one symbol at a time: implement \
                 `on_universe` to trade a universe",
                self.strategy.name
            ));
        }
        if !universes.is_empty() && self.description.symbols.is_some() {
            problems.push("set universes or symbols, not both".to_owned());
        }
        let mut names = std::collections::BTreeSet::new();
        for u in universes {
            if let Err(e) = u.check() {
                problems.push(e);
            }
            if !names.insert(u.name.as_str()) {
                problems.push(format!("universe `{}` is defined twice", u.name));
            }
        }
        problems
    }
}
