//! Rendering checked against a naive in-memory computation, with sorts forced to spill.

use std::collections::BTreeMap;
use std::fs::File;

use super::*;
use crate::engine::{CellKey, CellOutcome, FailureKind};
use crate::metrics::Metrics;
use crate::params::{ParamSetId, SetPlace};
use crate::sweep::ledger::FinalCell;
use crate::sweep::research_report::Deflated;
use crate::sweep::spool::CellSpool;

fn shards() -> Vec<Shard> {
    ["A", "B"]
        .iter()
        .map(|s| {
            Shard::new(
                *s,
                "2024-01-02".parse().unwrap(),
                "2024-01-05".parse().unwrap(),
            )
        })
        .collect()
}

/// The outcome of cell (`index`, `shard`): a spread of Sharpe ratios, some NaN, some failures.
fn outcome(index: u64, shard: u32) -> CellOutcome {
    if shard == 1 && index % 997 == 5 {
        return Err(CellFailure::new(
            FailureKind::Panic,
            format!("boom {index}"),
        ));
    }
    let sharpe = if index % 777 == 3 {
        f64::NAN
    } else {
        ((index * 7919 + u64::from(shard) * 104_729) % 1000) as f64 / 100.0 - 5.0
    };
    Ok(Metrics {
        n_ticks: 100,
        trades: index % 13,
        sharpe,
        ..Metrics::default()
    })
}

/// The grid `a` in `0..a`, `b` in `1..b`, and each of its sets with its place.
fn grid_and_places(a: i64, b: i64) -> (Grid, Vec<(SetPlace, ParamSet)>) {
    let grid = Grid::new()
        .axis("a", 0..a)
        .axis("b", 0..b)
        .constrain("b > 0");
    let places = (0u64..)
        .zip(grid.slice(0..grid.product_len() as u64))
        .map(|(index, (position, set))| (SetPlace { index, position }, set))
        .collect();
    (grid, places)
}

#[test]
fn outputs_match_a_naive_ranking_with_spilling_sorts() {
    // 400 × 300 positions, `b > 0` keeps 119 600 sets: 239 200 cells over two shards.
    let (grid, places) = grid_and_places(400, 300);
    let shards = shards();
    let work = tempfile::tempdir().unwrap();
    let spool = scrambled_spool(&work.path().join("cells"), &shards, &places);
    let n = places.len() * 2;
    let subject = Subject {
        grid: &grid,
        shards: &shards,
        metric: RankMetric::Sharpe,
        spec_json: None,
        leaderboard_rows: LeaderboardRows::All,
    };
    let out = work.path().join("out");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rendered = runtime
        // 4 MiB: far below the ~28 MiB the cells take as Arrow arrays, so both sorts must spill.
        .block_on(render_within(&spool, &subject, &out, 4 << 20))
        .unwrap();

    let naive = naive_ranking(&places);
    let expected_ids: Vec<String> = naive.iter().map(|r| r.2.to_string()).collect();

    let mut board = csv::Reader::from_path(out.join(LEADERBOARD_CSV)).unwrap();
    let id_col = board
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "param_set_id")
        .unwrap();
    let ids: Vec<String> = board
        .records()
        .map(|r| r.unwrap()[id_col].to_owned())
        .collect();
    assert_eq!(ids.len(), places.len(), "every set ranked");
    assert_eq!(ids, expected_ids, "leaderboard.csv in the naive order");
    let held: Vec<String> = rendered
        .leaderboard
        .rows
        .iter()
        .map(|r| r.params.id().to_string())
        .collect();
    assert_eq!(held, expected_ids[..LEADERBOARD_ROWS], "the best rows held");
    assert_eq!(rendered.leaderboard.ranked, places.len());

    let failed = places.iter().filter(|(p, _)| p.index % 997 == 5).count();
    assert_eq!((rendered.cells, rendered.failed), (n, failed));
    assert_eq!(rendered.failures.len(), FAILURES_HELD.min(failed));

    check_cell_files(&out, &places);
    let by_set: BTreeMap<_, _> = naive.iter().map(|r| (r.2, r.0)).collect();
    assert_eq!(by_set.len(), places.len(), "set ids are distinct");
}

#[test]
fn the_best_rows_only_are_held_as_the_cells_pass_without_a_sort() {
    let (grid, places) = grid_and_places(400, 300);
    let shards = shards();
    let work = tempfile::tempdir().unwrap();
    let spool = scrambled_spool(&work.path().join("cells"), &shards, &places);
    let top = Subject {
        grid: &grid,
        shards: &shards,
        metric: RankMetric::Sharpe,
        spec_json: None,
        leaderboard_rows: LeaderboardRows::Top(5_000),
    };
    let out = work.path().join("top");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let rendered = runtime
        .block_on(render_within(&spool, &top, &out, 4 << 20))
        .unwrap();
    let expected_ids: Vec<String> = naive_ranking(&places)
        .iter()
        .map(|r| r.2.to_string())
        .collect();
    let ids: Vec<String> = csv::Reader::from_path(out.join(LEADERBOARD_CSV))
        .unwrap()
        .into_deserialize::<std::collections::HashMap<String, String>>()
        .map(|r| r.unwrap()["param_set_id"].clone())
        .collect();
    assert_eq!(ids, expected_ids[..5_000], "the best 5 000 sets, in order");
    assert_eq!(
        rendered.leaderboard.ranked,
        places.len(),
        "every set ranked"
    );
    let held: Vec<String> = rendered
        .leaderboard
        .rows
        .iter()
        .map(|r| r.params.id().to_string())
        .collect();
    assert_eq!(held, expected_ids[..LEADERBOARD_ROWS], "the best rows held");
    assert!(
        !out.join(".board").exists(),
        "nothing spooled for the board"
    );
    check_cell_files(&out, &places);
}

/// A spool of every set's two cells, pushed out of order: a stride coprime with the count
/// visits each cell once.
fn scrambled_spool(
    dir: &std::path::Path,
    shards: &[Shard],
    places: &[(SetPlace, ParamSet)],
) -> Spool {
    let mut spool = CellSpool::create(dir, shards).unwrap();
    let n = places.len() * 2;
    let mut k = 0usize;
    for _ in 0..n {
        k = (k + 100_003) % n;
        let (place, set) = &places[k / 2];
        let shard = u32::try_from(k % 2).unwrap();
        spool
            .push(&FinalCell {
                key: CellKey {
                    shard: shards[shard as usize].id(),
                    param_set: set.id(),
                },
                place: *place,
                outcome: outcome(place.index, shard),
                day_returns: Vec::new(),
                trades: Vec::new(),
            })
            .unwrap();
    }
    spool.finish().unwrap()
}

/// The naive ranking: every set's mean Sharpe over its successful shards, (failed, key, id)
/// best first.
fn naive_ranking(places: &[(SetPlace, ParamSet)]) -> Vec<(bool, f64, ParamSetId)> {
    let mut naive: Vec<(bool, f64, ParamSetId)> = places
        .iter()
        .map(|(place, set)| {
            let outcomes: Vec<CellOutcome> = (0..2).map(|s| outcome(place.index, s)).collect();
            let ok: Vec<f64> = outcomes
                .iter()
                .filter_map(|o| o.as_ref().ok())
                .map(|m| m.sharpe)
                .collect();
            let failed = outcomes.len() - ok.len();
            let mean = ok.iter().sum::<f64>() / ok.len() as f64;
            let key = if mean.is_nan() { f64::INFINITY } else { -mean };
            (failed > 0 || mean.is_nan(), key, set.id())
        })
        .collect();
    naive.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
    naive
}

/// results.csv in grid order, then shard order, each cell once; results.parquet as many rows.
fn check_cell_files(out: &std::path::Path, places: &[(SetPlace, ParamSet)]) {
    let n = places.len() * 2;
    let mut cells = csv::Reader::from_path(out.join(RESULTS_CSV)).unwrap();
    let headers = cells.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (id_col, symbol_col) = (col("param_set_id"), col("symbol"));
    let order: Vec<(String, String)> = cells
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[id_col].to_owned(), r[symbol_col].to_owned())
        })
        .collect();
    let expected: Vec<(String, String)> = places
        .iter()
        .flat_map(|(_, set)| ["A", "B"].map(|s| (set.id().to_string(), s.to_owned())))
        .collect();
    assert_eq!(order, expected);

    // results.parquet holds the same cells.
    let file = File::open(out.join(RESULTS_PARQUET)).unwrap();
    let reader =
        datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows, n);
}

/// Every cell of `places` on both shards, in the order cells arrive from units of 500 sets
/// queued in grid order: unit by unit (both shards of a span, the second shard's unit first),
/// each unit's cells reversed, and the first shard's unit of span 3 a straggler that comes
/// last.
fn unit_order(shards: &[Shard], places: &[(SetPlace, ParamSet)]) -> Vec<FinalCell> {
    let unit = |span: &[(SetPlace, ParamSet)], shard: u32| -> Vec<FinalCell> {
        span.iter()
            .rev()
            .map(|(place, set)| FinalCell {
                key: CellKey {
                    shard: shards[shard as usize].id(),
                    param_set: set.id(),
                },
                place: *place,
                outcome: outcome(place.index, shard),
                day_returns: Vec::new(),
                trades: Vec::new(),
            })
            .collect()
    };
    let mut cells = Vec::new();
    let mut straggler = Vec::new();
    for (i, span) in places.chunks(500).enumerate() {
        cells.extend(unit(span, 1));
        if i == 3 {
            straggler = unit(span, 0);
        } else {
            cells.extend(unit(span, 0));
        }
    }
    cells.extend(straggler);
    cells
}

#[test]
fn outputs_written_during_the_sweep_equal_those_rendered_at_the_end() {
    let (grid, places) = grid_and_places(120, 100);
    let shards = shards();
    let subject = Subject {
        grid: &grid,
        shards: &shards,
        metric: RankMetric::Sharpe,
        spec_json: None,
        leaderboard_rows: LeaderboardRows::default(),
    };
    let work = tempfile::tempdir().unwrap();
    let cells = unit_order(&shards, &places);
    let mut spool = CellSpool::create(&work.path().join("cells"), &shards).unwrap();
    for cell in &cells {
        spool.push(cell).unwrap();
    }
    let spool = spool.finish().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let at_end = work.path().join("at-end");
    let reference = runtime.block_on(render(&spool, &subject, &at_end)).unwrap();
    let file = |dir: &std::path::Path, name: &str| std::fs::read(dir.join(name)).unwrap();
    // A buffer that holds every cell behind the straggler: everything is written on the fly.
    // One that does not: streaming stops at the straggler, and the end sorts the rest from
    // there.
    for (cap, all_streamed) in [(1 << 20, true), (5_000, false)] {
        let dir = work.path().join(format!("ordered-{cap}"));
        let mut ordered = ordered::with_buffer(&subject, &dir, cap).unwrap();
        for cell in &cells {
            ordered.offer(cell);
        }
        assert_eq!(ordered.passed() == cells.len(), all_streamed, "cap {cap}");
        assert!(
            ordered.passed() > 0,
            "cap {cap}: the first units pass at once"
        );
        let rendered = runtime.block_on(ordered.finish(&spool)).unwrap();
        for name in OUTPUT_FILES {
            assert!(
                file(&dir, name) == file(&at_end, name),
                "cap {cap}: {name} differs from the one rendered at the end"
            );
        }
        assert_eq!(
            (rendered.cells, rendered.failed),
            (reference.cells, reference.failed)
        );
        assert_eq!(rendered.failures.len(), reference.failures.len());
        assert_eq!(rendered.leaderboard.rows, reference.leaderboard.rows);
    }
}

/// The outputs of `subject`'s cells (in unit order) under `dir/out`, with each set's DSR from
/// `deflated`.
fn render_with_dsr(
    subject: &Subject<'_>,
    places: &[(SetPlace, ParamSet)],
    dir: &std::path::Path,
    deflated: &HashMap<ParamSetId, Deflated>,
) -> Rendered {
    let cells = unit_order(subject.shards, places);
    let mut spool = CellSpool::create(&dir.join("cells"), subject.shards).unwrap();
    let mut ordered = OrderedRender::start(subject, &dir.join("out")).unwrap();
    for cell in &cells {
        spool.push(cell).unwrap();
        ordered.offer(cell);
    }
    ordered.with_dsr(Arc::new(deflated.clone()));
    let spool = spool.finish().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(ordered.finish(&spool)).unwrap()
}

#[test]
fn ranked_by_dsr_sets_whose_dsr_rounds_alike_rank_by_sharpe() {
    let (grid, places) = grid_and_places(60, 40);
    let shards = shards();
    let subject = Subject {
        grid: &grid,
        shards: &shards,
        metric: RankMetric::Dsr,
        spec_json: None,
        leaderboard_rows: LeaderboardRows::All,
    };
    // A third of the sets tell apart at three decimals; the rest have DSRs in the normal
    // tail's noise (below 1e-12), whose order runs against their Sharpe ratios' here.
    let deflated: HashMap<ParamSetId, Deflated> = places
        .iter()
        .map(|(place, set)| {
            let k = place.index;
            let dsr = if k % 3 == 0 {
                0.5 + (k % 7) as f64 * 0.07
            } else {
                (k % 50) as f64 * 1e-14
            };
            let sharpe = 0.1 - (k % 50) as f64 * 1e-3 + (k % 11) as f64 * 1e-5;
            (set.id(), Deflated { dsr, sharpe })
        })
        .collect();
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("out");
    let rendered = render_with_dsr(&subject, &places, work.path(), &deflated);

    let mut board = csv::Reader::from_path(out.join(LEADERBOARD_CSV)).unwrap();
    let headers = board.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (id_col, failed_col) = (col("param_set_id"), col("failed"));
    let rows: Vec<(ParamSetId, bool)> = board
        .records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[id_col].parse::<ParamSetId>().unwrap(),
                &r[failed_col] != "0",
            )
        })
        .collect();
    assert_eq!(rows.len(), places.len(), "every set ranked");
    let failed = rows.iter().filter(|r| r.1).count();
    assert!(failed > 0, "the test has failed sets");
    assert!(
        rows[rows.len() - failed..].iter().all(|r| r.1),
        "sets without a DSR rank last"
    );
    let ranked: Vec<Deflated> = rows[..rows.len() - failed]
        .iter()
        .map(|(id, _)| deflated[id])
        .collect();
    let tier = |d: &Deflated| (d.dsr * 1e3).round();
    let tied = ranked.windows(2).filter(|w| tier(&w[0]) == tier(&w[1]));
    assert!(tied.count() > places.len() / 2, "the test has ties");
    for pair in ranked.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(tier(a) >= tier(b), "DSR tiers descend: {a:?} then {b:?}");
        if tier(a) == tier(b) {
            assert!(
                a.sharpe >= b.sharpe,
                "equal tiers rank by Sharpe: {a:?} then {b:?}"
            );
        }
    }
    let held: Vec<ParamSetId> = rendered
        .leaderboard
        .rows
        .iter()
        .map(|r| r.param_set_id)
        .collect();
    let csv_top: Vec<ParamSetId> = rows.iter().take(held.len()).map(|r| r.0).collect();
    assert_eq!(held, csv_top, "the leaderboard held is the CSV's top");
}
