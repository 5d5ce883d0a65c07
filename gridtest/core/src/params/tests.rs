use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

/// Known answers: the canonical encoding and its hash must never change, or ids recorded by
/// earlier sweeps (and ids computed on other machines) stop matching.
#[test]
fn param_set_ids_are_pinned() {
    let a = ParamSet::new([("fast", ParamValue::Int(5)), ("slow", ParamValue::Int(20))]);
    let b = ParamSet::new([
        ("threshold", ParamValue::Float(0.5)),
        ("long_only", ParamValue::Bool(true)),
        ("venue", ParamValue::Choice("lit".into())),
    ]);
    assert_eq!(a.id().to_string(), PINNED_A);
    assert_eq!(b.id().to_string(), PINNED_B);
    assert_eq!(
        ParamSet::new(Vec::<(&str, ParamValue)>::new())
            .id()
            .to_string(),
        PINNED_EMPTY
    );
}

// Computed independently (Python's hashlib over the encoding documented in
// docs/params.md), not copied from this implementation's output.
const PINNED_A: &str = "1ab3b4fdb3ed6434";
const PINNED_B: &str = "e1f5239d0e291445";
const PINNED_EMPTY: &str = "017d1aa75f2f2751";

#[test]
fn negative_zero_and_zero_share_an_id() {
    let a = ParamSet::new([("x", ParamValue::Float(0.0))]);
    let b = ParamSet::new([("x", ParamValue::Float(-0.0))]);
    assert_eq!(a.id(), b.id());
}

#[test]
fn kinds_are_part_of_the_id() {
    let int = ParamSet::new([("x", ParamValue::Int(1))]);
    let float = ParamSet::new([("x", ParamValue::Float(1.0))]);
    let choice = ParamSet::new([("x", ParamValue::Choice("1".into()))]);
    let ids: BTreeSet<_> = [int.id(), float.id(), choice.id()].into();
    assert_eq!(ids.len(), 3);
}

#[test]
fn id_round_trips_through_json() {
    let a = ParamSet::new([
        ("fast", ParamValue::Int(5)),
        ("mode", ParamValue::Choice("x".into())),
    ]);
    let json = serde_json::to_string(&a).unwrap();
    let back: ParamSet = serde_json::from_str(&json).unwrap();
    assert_eq!(back, a);
    assert_eq!(back.id(), a.id());
    let id: ParamSetId = serde_json::from_str(&serde_json::to_string(&a.id()).unwrap()).unwrap();
    assert_eq!(id, a.id());
}

#[test]
fn w1_grid_has_955_sets() {
    let g = Grid::new()
        .axis("fast", (5..=100).step_by(5))
        .axis("slow", (20..=1000).step_by(20))
        .constrain("fast < slow");
    assert_eq!(g.product_len(), 1000);
    assert_eq!(g.len(), 955);
    assert_eq!(g.iter().count(), 955);
    let ids: BTreeSet<_> = g.iter().map(|s| s.id()).collect();
    assert_eq!(ids.len(), 955, "ids are distinct");
}

#[test]
fn constraints_parse_and_print() {
    for (expr, shown) in [
        ("fast<slow", "fast < slow"),
        ("a >= 1.5", "a >= 1.5"),
        ("mode != 'short'", "mode != \"short\""),
        ("on == true", "on == true"),
        ("n <= -3", "n <= -3"),
    ] {
        assert_eq!(
            Constraint::parse(expr).unwrap().to_string(),
            shown,
            "{expr}"
        );
    }
    for bad in ["fast", "fast <", "1 < slow", "fast < sl ow", "<= x"] {
        assert!(Constraint::parse(bad).is_err(), "{bad} should not parse");
    }
}

fn fields() -> Vec<ParamField> {
    vec![
        ParamField::of::<usize>("fast"),
        ParamField::of::<usize>("slow"),
    ]
}

#[test]
fn check_reports_every_problem() {
    let g = Grid::new()
        .axis("fast", [1.5, 2.0])
        .axis("speed", [1, 2])
        .axis("fast", [3])
        .constrain("fast < nope")
        .constrain("garbage");
    let err = g.check(&fields()).unwrap_err();
    let text = err.to_string();
    for needle in [
        "axis `fast` is declared twice",
        "axis `fast` value 1.5 (float) does not fit parameter `fast: usize`",
        "axis `speed` is not a parameter of the strategy (its parameters: fast, slow)",
        "parameter `slow: usize` has no axis",
        "constraint `garbage`",
        "`nope` is not an axis of this grid",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in:\n{text}");
    }
}

#[test]
fn empty_grids_are_errors() {
    let no_values = Grid::new()
        .axis("fast", Vec::<i64>::new())
        .axis("slow", [1]);
    let text = no_values.check(&fields()).unwrap_err().to_string();
    assert!(text.contains("axis `fast` has no values"), "{text}");

    let excluded = Grid::new()
        .axis("fast", [10, 20])
        .axis("slow", [5])
        .constrain("fast < slow");
    let text = excluded.check(&fields()).unwrap_err().to_string();
    assert!(
        text.contains("the grid is empty: the constraints exclude all 2 combinations"),
        "{text}"
    );

    let negative = Grid::new().axis("fast", [-1]).axis("slow", [5]);
    let text = negative.check(&fields()).unwrap_err().to_string();
    assert!(
        text.contains("value -1 (int) does not fit parameter `fast: usize`"),
        "{text}"
    );

    let nan = Grid::new().axis("x", [f64::NAN]);
    let text = nan
        .check(&[ParamField::of::<f64>("x")])
        .unwrap_err()
        .to_string();
    assert!(text.contains("non-finite"), "{text}");
}

fn arb_value() -> impl Strategy<Value = ParamValue> {
    prop_oneof![
        (-1000i64..1000).prop_map(ParamValue::Int),
        (-1e6f64..1e6).prop_map(ParamValue::Float),
        any::<bool>().prop_map(ParamValue::Bool),
        "[a-z]{0,6}".prop_map(ParamValue::Choice),
    ]
}

proptest! {
    #[test]
    fn id_ignores_insertion_order(values in proptest::collection::btree_map("[a-z]{1,5}", arb_value(), 0..6)) {
        let forward: Vec<(String, ParamValue)> = values.clone().into_iter().collect();
        let mut backward = forward.clone();
        backward.reverse();
        prop_assert_eq!(ParamSet::new(forward.clone()).id(), ParamSet::new(backward).id());
        let json = serde_json::to_string(&ParamSet::new(forward.clone())).unwrap();
        let back: ParamSet = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back.id(), ParamSet::new(forward).id());
    }

    #[test]
    fn different_values_get_different_ids(a in arb_value(), b in arb_value()) {
        let (sa, sb) = (ParamSet::new([("p", a.clone())]), ParamSet::new([("p", b.clone())]));
        let same = match (&a, &b) {
            (ParamValue::Float(x), ParamValue::Float(y)) => x == y,
            _ => a == b,
        };
        prop_assert_eq!(sa.id() == sb.id(), same);
    }

    /// `len()` is exact: it equals a brute-force count over the product.
    #[test]
    fn len_matches_brute_force(
        xs in proptest::collection::vec(-20i64..20, 0..8),
        ys in proptest::collection::vec(-20i64..20, 0..8),
        zs in proptest::collection::vec(any::<bool>(), 0..3),
        op in 0usize..6,
        bound in -10i64..10,
    ) {
        let ops = ["<", "<=", ">", ">=", "==", "!="];
        let g = Grid::new()
            .axis("x", xs.clone())
            .axis("y", ys.clone())
            .axis("z", zs.clone())
            .constrain(&format!("x {} y", ops[op]))
            .constrain(&format!("y >= {bound}"));
        let cmp = |a: i64, b: i64| match op {
            0 => a < b, 1 => a <= b, 2 => a > b, 3 => a >= b, 4 => a == b, _ => a != b,
        };
        let mut brute = 0;
        for &x in &xs { for &y in &ys { for _ in &zs {
            if cmp(x, y) && y >= bound { brute += 1; }
        }}}
        prop_assert_eq!(g.len(), brute);
        prop_assert_eq!(g.iter().count(), brute);
    }
}

/// A grid of three axes with a cross-axis and a value constraint.
fn sliced_grid() -> Grid {
    Grid::new()
        .axis("a", [1, 2, 3, 4])
        .axis("b", [1, 2, 3])
        .axis("m", ["x", "y"])
        .constrain("a > b")
        .constrain("m != \"y\"")
}

#[test]
fn positions_decode_the_product_with_the_last_axis_fastest() {
    let grid = sliced_grid();
    assert_eq!(grid.product_len(), 24);
    // Position 17 = a[2], b[2], m[1]: (17 / 6, 17 / 2 % 3, 17 % 2).
    let unconstrained = Grid::new()
        .axis("a", [1, 2, 3, 4])
        .axis("b", [1, 2, 3])
        .axis("m", ["x", "y"]);
    assert_eq!(unconstrained.set_at(17).unwrap().to_string(), "a=3 b=3 m=y");
    assert_eq!(grid.set_at(17), None, "rejected by both constraints");
    assert_eq!(grid.set_at(20).unwrap().to_string(), "a=4 b=2 m=x");
    assert_eq!(grid.set_at(24), None, "past the end");
}

#[test]
fn slices_of_any_cut_concatenate_to_the_whole_grid() {
    let grid = sliced_grid();
    let whole: Vec<ParamSet> = grid.iter().collect();
    assert_eq!(whole.len(), 6, "a > b and m = x: 1+2+3 sets");
    assert_eq!(grid.len(), 6);
    for cut in 1..=25u64 {
        let mut joined = Vec::new();
        let mut start = 0;
        while start < 24 {
            let end = (start + cut).min(24);
            let part: Vec<(u64, ParamSet)> = grid.slice(start..end).collect();
            assert_eq!(grid.count_in(start..end), part.len() as u64);
            for (position, set) in part {
                assert!((start..end).contains(&position));
                assert_eq!(grid.set_at(position).as_ref(), Some(&set));
                joined.push(set);
            }
            start = end;
        }
        assert_eq!(joined, whole, "cut every {cut} positions");
    }
    assert_eq!(
        grid.slice(30..40).count(),
        0,
        "a range past the end is empty"
    );
    let (from, to) = (5, 3);
    assert_eq!(grid.slice(from..to).count(), 0, "a reversed range is empty");
}
