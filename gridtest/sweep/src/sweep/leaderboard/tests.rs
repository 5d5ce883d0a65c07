use super::*;

fn board(drawdown: f64, sign: DrawdownSign) -> Leaderboard {
    let mut tally = SetTally::default();
    let metrics = Metrics {
        max_drawdown: drawdown,
        ..Metrics::default()
    };
    tally.add(Some(&metrics), RankMetric::Sharpe);
    let params = ParamSet::new([("n", crate::params::ParamValue::Int(3))]);
    let id = params.id();
    let mut row = tally.row(params, id);
    row.rank = 1;
    Leaderboard {
        metric: RankMetric::Sharpe,
        axes: vec!["n".into()],
        rows: vec![row],
        ranked: 1,
        drawdown_sign: sign,
    }
}

/// The "max dd" column of the printed table's first row.
fn shown(board: &Leaderboard) -> String {
    let table = board.table(1);
    let at = table
        .header()
        .unwrap()
        .cell_iter()
        .position(|c| c.content() == "max dd")
        .unwrap();
    table.row(0).unwrap().cell_iter().nth(at).unwrap().content()
}

#[test]
fn the_table_shows_drawdowns_with_the_sign_asked_and_the_rows_keep_them_positive() {
    assert_eq!(shown(&board(0.125, DrawdownSign::Positive)), "12.50%");
    let negative = board(0.125, DrawdownSign::Negative);
    assert_eq!(shown(&negative), "-12.50%");
    assert_eq!(negative.rows[0].max_drawdown, 0.125);
    assert_eq!(negative.rows[0].worst_drawdown, 0.125);
}

#[test]
fn a_terminal_with_no_width_gets_whole_rows_and_a_wide_one_a_fitted_table() {
    let board = board(0.125, DrawdownSign::Positive);
    for width in [None, Some(0), Some(1), Some(MIN_FITTED_WIDTH - 1)] {
        let text = board.table_within(1, width, false).to_string();
        // Header, rule, one row and the frame: no cell wrapped onto further lines.
        assert_eq!(text.lines().count(), 5, "{width:?}:\n{text}");
        assert!(
            text.contains("12.50%") && text.contains("closed trades"),
            "{text}"
        );
    }
    let fitted = board.table_within(1, Some(80), false).to_string();
    assert!(fitted.lines().all(|l| l.chars().count() <= 80), "{fitted}");
    let ascii = board.table_within(1, None, true).to_string();
    assert!(ascii.is_ascii(), "{ascii}");
}
