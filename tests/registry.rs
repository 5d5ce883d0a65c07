//! The strategy registry: strategies are found by name, in this binary and in linked crates.

use gridtest::prelude::*;
use gridtest::registry::{StrategyError, find_strategy, registered};

#[derive(Params, Clone, Debug)]
struct NoParams {}

struct First;
struct Second;

#[gridtest::strategy(name = "registry_test_twice")]
impl Strategy for First {
    type Params = NoParams;
    type Feed = Ticks;
    fn new(_: &NoParams) -> Self {
        Self
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        0.0
    }
}

#[gridtest::strategy(name = "registry_test_twice")]
impl Strategy for Second {
    type Params = NoParams;
    type Feed = Ticks;
    fn new(_: &NoParams) -> Self {
        Self
    }
    fn on_data(&mut self, _: &Cursor<'_, Ticks>) -> f64 {
        0.0
    }
}

#[test]
fn strategies_of_linked_crates_are_found_by_name() {
    let entry = find_strategy("sma_crossover").unwrap();
    assert_eq!(entry.version, "1");
    assert_eq!(entry.kind, gridtest::DataKind::Ticks);
    let fields: Vec<&str> = (entry.schema)().iter().map(|f| f.name).collect();
    assert_eq!(fields, ["fast", "slow"]);
    assert!((entry.type_name)().ends_with("SmaCrossover"));
    let names: Vec<&str> = registered().iter().map(|e| e.name).collect();
    assert!(names.contains(&"breakout"), "{names:?}");
    assert!(Sweep::named("breakout").is_ok());
}

#[test]
fn unknown_and_duplicate_names_are_clear_errors() {
    let err = find_strategy("no_such_strategy").unwrap_err();
    assert!(matches!(err, StrategyError::Unknown { .. }));
    assert!(
        err.to_string().contains("sma_crossover"),
        "lists the known names: {err}"
    );
    let err = find_strategy("registry_test_twice").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, StrategyError::Duplicate { .. }), "{text}");
    assert!(text.contains("First") && text.contains("Second"), "{text}");
}
