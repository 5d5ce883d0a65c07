//! A replayed cell's difference from the record, in words.

use crate::sweep::CellOutcome;

/// How a recomputed outcome differs from the recorded one, in words: each metric that differs
/// with both values (all of their digits), or what became of a failure.
#[must_use]
pub fn describe_difference(recorded: Option<&CellOutcome>, now: &CellOutcome) -> String {
    let state = |o: &CellOutcome| match o {
        Ok(_) => "metrics".to_owned(),
        Err(f) => format!("a failure ({f})"),
    };
    match (recorded, now) {
        (None, now) => format!("not recorded; now {}", state(now)),
        (Some(Ok(before)), Ok(after)) => {
            let changed: Vec<String> = crate::metrics::METRIC_COLUMNS
                .iter()
                .filter_map(|c| {
                    let (b, a) = ((c.value)(before), (c.value)(after));
                    (b.bits() != a.bits()).then(|| format!("{}: recorded {b}, now {a}", c.name))
                })
                .collect();
            changed.join("; ")
        }
        (Some(before), now) => format!("recorded {}, now {}", state(before), state(now)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{CellFailure, FailureKind};
    use crate::metrics::Metrics;

    #[test]
    fn a_difference_names_each_metric_with_both_values() {
        let before = Metrics {
            trades: 12,
            total_return: 0.125,
            ..Metrics::default()
        };
        let after = Metrics {
            trades: 13,
            total_return: 0.125f64.next_up(),
            ..before
        };
        assert_eq!(
            describe_difference(Some(&Ok(before)), &Ok(after)),
            format!(
                "trades: recorded 12, now 13; total_return: recorded 0.125, now {}",
                0.125f64.next_up()
            )
        );
        let failure = CellFailure::new(FailureKind::Panic, "boom".to_owned());
        let text = describe_difference(Some(&Ok(before)), &Err(failure));
        assert!(
            text.starts_with("recorded metrics, now a failure ("),
            "{text}"
        );
        assert!(text.contains("boom"), "{text}");
        assert_eq!(
            describe_difference(None, &Ok(before)),
            "not recorded; now metrics"
        );
    }
}
