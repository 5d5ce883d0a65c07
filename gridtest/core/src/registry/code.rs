//! `CodeVersion`: the code a sweep's results come from (gridtest, its execution model, the
//! strategy and its crate), and whether this build runs the same. A node built from other code
//! (a worker image left over from a rollout, a binary without the strategy, a strategy changed
//! and re-versioned) must refuse the sweep's units: computing them would put other numbers
//! under the same sweep id, or fail cells that the right nodes would compute.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::find_strategy;
use crate::engine::EXEC_MODEL_VERSION;

/// The versions a sweep's results depend on, as its spec records them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeVersion {
    /// gridtest's version.
    pub gridtest: String,
    /// Version of the execution semantics.
    pub exec_model: u32,
    /// Registered strategy name.
    pub strategy: String,
    /// The strategy's declared version.
    pub strategy_version: String,
    /// The crate that defines the strategy, `name version`.
    pub strategy_crate: String,
}

impl CodeVersion {
    /// What this build runs for `strategy`; `None` when it has no such strategy (or two).
    #[must_use]
    pub fn here(strategy: &str) -> Option<Self> {
        let entry = find_strategy(strategy).ok()?;
        Some(Self {
            gridtest: env!("CARGO_PKG_VERSION").to_owned(),
            exec_model: EXEC_MODEL_VERSION,
            strategy: strategy.to_owned(),
            strategy_version: entry.version.to_owned(),
            strategy_crate: entry.crate_version.to_owned(),
        })
    }

    /// Why this build may not compute the results of a sweep that needs `self`, naming
    /// every version that differs; `None` when it runs the same code.
    #[must_use]
    pub fn mismatch_here(&self) -> Option<CodeMismatch> {
        let Some(here) = Self::here(&self.strategy) else {
            return Some(CodeMismatch {
                differences: vec![format!(
                    "strategy `{}`: not registered (once) in this binary",
                    self.strategy
                )],
            });
        };
        let mut differences = Vec::new();
        let mut compare = |what: &str, needed: &str, found: &str| {
            if needed != found {
                differences.push(format!(
                    "{what}: the sweep needs {needed}, this node runs {found}"
                ));
            }
        };
        compare("gridtest", &self.gridtest, &here.gridtest);
        compare(
            "execution model",
            &self.exec_model.to_string(),
            &here.exec_model.to_string(),
        );
        compare(
            &format!("strategy `{}` version", self.strategy),
            &self.strategy_version,
            &here.strategy_version,
        );
        compare(
            &format!("strategy `{}` crate", self.strategy),
            &self.strategy_crate,
            &here.strategy_crate,
        );
        (!differences.is_empty()).then_some(CodeMismatch { differences })
    }
}

/// How a node's code differs from what a sweep needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeMismatch {
    /// One line per version that differs.
    pub differences: Vec<String>,
}

impl fmt::Display for CodeMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.differences.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::registered;

    fn of_a_registered_strategy() -> CodeVersion {
        let name = registered()
            .first()
            .expect("the tests register strategies")
            .name;
        CodeVersion::here(name).expect("registered once")
    }

    #[test]
    fn the_code_of_this_build_matches_itself() {
        assert_eq!(of_a_registered_strategy().mismatch_here(), None);
    }

    #[test]
    fn each_version_that_differs_is_named() {
        let mut other = of_a_registered_strategy();
        other.strategy_version.push_str("-next");
        other.exec_model += 1;
        let mismatch = other.mismatch_here().expect("a mismatch");
        assert_eq!(mismatch.differences.len(), 2, "{mismatch}");
        let text = mismatch.to_string();
        assert!(text.contains("execution model: the sweep needs"), "{text}");
        assert!(
            text.contains(&format!(
                "version: the sweep needs {}",
                other.strategy_version
            )),
            "{text}"
        );
    }

    #[test]
    fn a_strategy_this_binary_lacks_is_a_mismatch() {
        let mut other = of_a_registered_strategy();
        other.strategy = "no_such_strategy_here".to_owned();
        let mismatch = other.mismatch_here().expect("a mismatch");
        assert!(
            mismatch.to_string().contains("not registered"),
            "{mismatch}"
        );
    }
}
