//! The W1 reference results (`../shared/data/w1/*_reference.csv`) and the workload's correctness
//! rule: same cells, trades equal, `total_return` within 1e-9 relative (1e-12 absolute near 0).
//! Shared by the benchmark examples (`#[path]`-included; not an example of its own).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};
use gridtest::{Metrics, ParamSet, ParamValue};

/// `n_ticks, trades, total_return, max_drawdown, sharpe` of one reference cell.
type Row = (u64, u64, f64, f64, f64);

/// The reference, keyed by `(symbol, fast, slow)`.
pub(crate) struct Reference(BTreeMap<(String, i64, i64), Row>);

/// Largest differences found by [`Reference::check`].
#[derive(Debug, Default)]
pub(crate) struct Agreement {
    /// Cells compared (all of the reference).
    pub(crate) cells: usize,
    /// Largest relative difference of `total_return`.
    pub(crate) total_return_rel: f64,
    /// Largest absolute difference of `max_drawdown`.
    pub(crate) drawdown_abs: f64,
    /// Largest relative difference of `sharpe`.
    pub(crate) sharpe_rel: f64,
}

impl std::fmt::Display for Agreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cells match: trades equal, max rel. diff total_return {:.1e}, max abs. diff \
             drawdown {:.1e}, max rel. diff sharpe {:.1e}",
            self.cells, self.total_return_rel, self.drawdown_abs, self.sharpe_rel
        )
    }
}

impl Reference {
    /// Reads a reference CSV.
    ///
    /// # Errors
    /// The file's read or parse error, naming it.
    pub(crate) fn read(path: &Path) -> anyhow::Result<Self> {
        let mut r = csv::Reader::from_path(path).with_context(|| format!("{}", path.display()))?;
        let mut out = BTreeMap::new();
        for rec in r.records() {
            let rec = rec.with_context(|| format!("{}", path.display()))?;
            out.insert(
                (rec[0].to_owned(), rec[1].parse()?, rec[2].parse()?),
                (
                    rec[3].parse()?,
                    rec[4].parse()?,
                    rec[5].parse()?,
                    rec[6].parse()?,
                    rec[7].parse()?,
                ),
            );
        }
        Ok(Self(out))
    }

    /// Checks every cell `(symbol, parameter set, metrics)` against the reference under the
    /// workload's rule; every reference cell must be there.
    ///
    /// # Errors
    /// The first cell that breaks the rule, or a count mismatch.
    pub(crate) fn check<'a>(
        &self,
        cells: impl IntoIterator<Item = (&'a str, &'a ParamSet, &'a Metrics)>,
    ) -> anyhow::Result<Agreement> {
        let mut agreement = Agreement::default();
        for (symbol, set, m) in cells {
            let get = |k: &str| match set.get(k) {
                Some(ParamValue::Int(v)) => *v,
                _ => 0,
            };
            let key = (symbol.to_owned(), get("fast"), get("slow"));
            let Some(&(n_ticks, trades, r_tr, r_dd, r_sh)) = self.0.get(&key) else {
                bail!("cell {key:?} is not in the reference");
            };
            if m.n_ticks != n_ticks || m.trades != trades {
                bail!("{key:?}: trades {} vs reference {trades}", m.trades);
            }
            if (m.total_return - r_tr).abs() > (1e-9 * r_tr.abs()).max(1e-12) {
                bail!(
                    "{key:?}: total_return {} vs reference {r_tr}",
                    m.total_return
                );
            }
            agreement.total_return_rel = agreement
                .total_return_rel
                .max((m.total_return - r_tr).abs() / r_tr.abs().max(1e-12));
            agreement.drawdown_abs = agreement.drawdown_abs.max((m.max_drawdown - r_dd).abs());
            agreement.sharpe_rel = agreement
                .sharpe_rel
                .max((m.sharpe - r_sh).abs() / r_sh.abs().max(1e-12));
            agreement.cells += 1;
        }
        if agreement.cells != self.0.len() {
            bail!(
                "{} cells compared, the reference has {}",
                agreement.cells,
                self.0.len()
            );
        }
        Ok(agreement)
    }
}
