//! `report.html` opens in headless Chromium with no error, draws one heatmap cell per grid point,
//! the equity and drawdown curves, the PBO panel and the trades; a screenshot is saved.
//! `gridtest report` draws a persisted sweep's page again with the same figures.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gridtest_tests::skip;

/// Chromium: `GRIDTEST_CHROMIUM`, else `chromium` or `chromium-browser` on the path.
fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var("GRIDTEST_CHROMIUM")
        .map(|c| vec![c])
        .unwrap_or_else(|_| vec!["chromium".to_owned(), "chromium-browser".to_owned()]);
    candidates.into_iter().map(PathBuf::from).find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn headless(browser: &Path, page: &Path, extra: &[&str]) -> String {
    // Headless Chromium now and then hangs on start-up (seen once in CI: 18 minutes and no
    // output). A run gets a deadline; a hung one is killed and run again.
    const ATTEMPTS: usize = 3;
    const DEADLINE: Duration = Duration::from_secs(90);
    for attempt in 1..=ATTEMPTS {
        let mut child = Command::new(browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .args([
                "--virtual-time-budget=10000",
                "--run-all-compositor-stages-before-draw",
            ])
            .args(extra)
            .arg(format!("file://{}", page.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = read_in_background(child.stdout.take().unwrap());
        let stderr = read_in_background(child.stderr.take().unwrap());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let Some(status) = status else {
            eprintln!("headless Chromium hung for {DEADLINE:?} (attempt {attempt} of {ATTEMPTS})");
            continue;
        };
        let stderr = stderr.recv_timeout(DEADLINE).unwrap_or_default();
        assert!(status.success(), "{stderr}");
        return stdout.recv_timeout(DEADLINE).unwrap_or_default();
    }
    panic!("headless Chromium hung {ATTEMPTS} times ({DEADLINE:?} each)");
}

/// Reads `pipe` to its end on a thread of its own; the text arrives on the channel (never, if
/// a process left behind keeps the pipe open — the caller waits with a deadline).
fn read_in_background(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = send.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    receive
}

/// `cost.json`: the core-seconds are the nodes' measured scorer time, priced per core-hour.
fn check_cost(results: &gridtest::SweepResults) {
    let text = std::fs::read_to_string(results.output_dir().join("cost.json")).unwrap();
    let cost: gridtest::sweep::SweepCost = serde_json::from_str(&text).unwrap();
    let busy: f64 = results
        .run_info()
        .unwrap()
        .nodes
        .values()
        .map(|n| n.busy.as_secs_f64())
        .sum();
    assert!(busy > 0.0);
    assert!((cost.total_core_seconds - busy).abs() < 1e-9);
    let hours = busy / 3600.0;
    let owned = hours * (20_000.0 / (4.0 * 8760.0) / 64.0 + 0.5 * 0.25 / 64.0);
    let rented = hours * 3.0 / 32.0;
    assert!((cost.owned_cost.unwrap() - owned).abs() < 1e-12 * owned.max(1.0));
    assert!((cost.rented_cost.unwrap() - rented).abs() < 1e-12 * rented.max(1.0));
    let fixed = 20_000.0 / (4.0 * 8760.0) / 64.0;
    let u = fixed / (3.0 / 32.0 - 0.5 * 0.25 / 64.0);
    assert!((cost.break_even_utilisation.unwrap() - u).abs() < 1e-12);
}

/// The DOM of `page` after its script ran in headless Chromium (checked to have run to its end
/// without an error), and the browser; `None`, skipped visibly for `test`, without Chromium.
fn rendered(page: &Path, test: &str) -> Option<(PathBuf, String)> {
    let Some(browser) = chromium() else {
        skip(
            "chromium",
            test,
            "no Chromium (GRIDTEST_CHROMIUM, chromium)",
        );
        return None;
    };
    let dom = headless(&browser, page, &["--dump-dom"]);
    assert!(
        dom.contains("data-rendered=\"1\""),
        "the script ran to its end"
    );
    assert!(
        dom.contains("<div id=\"errors\"></div>"),
        "no error in the page:\n{}",
        &dom[..dom.len().min(3000)]
    );
    Some((browser, dom))
}

#[test]
fn the_report_opens_in_a_browser_and_draws_every_panel() {
    let test = "report::the_report_opens_in_a_browser_and_draws_every_panel";
    let scratch = gridtest_tests::Scratch::new();
    scratch.synth(&gridtest::data::synth::SynthSpec {
        symbols: 2,
        days: 40,
        ticks_per_day: 300,
        ..gridtest::data::synth::SynthSpec::default()
    });
    let grid = gridtest::Grid::new()
        .axis("fast", (2..=24).step_by(2))
        .axis("slow", (10..=90).step_by(10))
        .constrain("fast < slow");
    let points = grid.len();
    let excluded = 12 * 9 - points;
    let sweep = gridtest::Sweep::of::<gridtest_examples::SmaCrossover>()
        .grid(grid)
        .data(scratch.location());
    let prices: gridtest::sweep::Prices = serde_json::from_str(
        r#"{ "owned": { "hardware_cost": 20000, "lifetime_years": 4, "cores": 64, "watts": 500 },
             "power_price_per_kwh": 0.25, "rented": { "per_hour": 3.0, "cores": 32 } }"#,
    )
    .unwrap();
    let opts = gridtest::RunOptions {
        prices: Some(prices),
        ..gridtest_tests::quiet()
    };
    let results = gridtest_tests::run_with(&sweep, &opts).unwrap();
    check_cost(&results);
    let page = results.output_dir().join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<script src"),
        "self-contained: no external script"
    );
    assert!(!html.contains("https://"), "no network");
    assert!(
        html.matches("http://")
            .all(|_| html.contains("http://www.w3.org/2000/svg")),
        "the only URL is the SVG namespace"
    );

    let Some((browser, dom)) = rendered(&page, test) else {
        return;
    };
    let count = |class: &str| dom.matches(&format!("class=\"{class}\"")).count();
    assert_eq!(count("cell"), points, "one heatmap cell per grid point");
    assert_eq!(
        count("excluded"),
        excluded,
        "the constraint's points, hatched"
    );
    assert_eq!(count("novalue"), 0);
    assert_eq!(count("best"), 1, "the best set outlined");
    assert_eq!(count("scale"), 64, "a colour bar");
    assert!(count("tick") > 30, "axes with ticks");
    assert!(
        count("zero") >= 4,
        "zero lines on the curves and the PBO panel"
    );
    assert_eq!(count("degradation"), 1, "the PBO panel's degradation line");
    assert!(
        dom.contains("Deflated Sharpe ratio (DSR): the probability"),
        "DSR explained with this sweep's numbers"
    );
    let data = page_data(&page);
    let fills = data["trades"]["fills"].as_array().unwrap().len();
    assert!(fills > 0 && data["trades"]["prices"].as_array().unwrap().len() > 100);
    assert_eq!(count("price"), 1, "the best set's price chart");
    assert_eq!(
        count("fill-buy") + count("fill-sell"),
        fills,
        "its fills marked"
    );
    assert!(count("trade-pnl") > 0, "each round trip's return");
    assert_eq!(count("equity"), 5, "equity curves of the top sets");
    assert_eq!(count("drawdown"), 5);
    let report = results.research().unwrap();
    let pbo = report.pbo.as_ref().unwrap();
    assert_eq!(count("dot"), pbo.logits.len(), "one point per CSCV split");
    assert_eq!(count("bar"), 20, "the logit histogram");
    assert!(
        dom.contains("owning breaks even at utilisation"),
        "the cost panel"
    );

    let shot = std::env::temp_dir().join(format!("gridtest-report-{}.png", std::process::id()));
    let screenshot = format!("--screenshot={}", shot.display());
    headless(&browser, &page, &[&screenshot, "--window-size=1400,2400"]);
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a screenshot of the page"
    );
    eprintln!("report screenshot: {}", shot.display());
    if let Some(dir) = std::env::var_os("GRIDTEST_ARTIFACTS") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&shot, Path::new(&dir).join("report.png")).unwrap();
    }
}

/// `sweep` over fast ∈ {3, 5} × slow ∈ {20, 40} on one symbol of 10 days.
fn four_sets_on_one_symbol(sweep: gridtest::Sweep) -> gridtest::SweepResults {
    let scratch = gridtest_tests::Scratch::new();
    scratch.synth(&gridtest::data::synth::SynthSpec {
        symbols: 1,
        days: 10,
        ticks_per_day: 300,
        ..gridtest::data::synth::SynthSpec::default()
    });
    let grid = gridtest::Grid::new()
        .axis("fast", [3, 5])
        .axis("slow", [20, 40]);
    gridtest_tests::run(&sweep.grid(grid).data(scratch.location()))
}

/// The page stays small whatever the best cell traded: it carries the first fills, says how
/// many there are, and `best_trades.json` keeps them all.
#[test]
fn the_page_stays_small_with_a_hundred_thousand_fills() {
    let results = four_sets_on_one_symbol(gridtest::Sweep::of::<gridtest_examples::SmaCrossover>());
    let fill = gridtest::engine::Fill {
        index: 7,
        ts: 1_700_000_000_000_000_000,
        price: 101.234_567_89,
        units: 0.123_456_789,
        side: gridtest::engine::Side::Buy,
        fee: 0.000_012_345,
        weight: 1.0,
        equity: 1.000_123_456,
        member: 0,
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        results.output_dir().join("leaderboard.csv"),
        dir.path().join("leaderboard.csv"),
    )
    .unwrap();
    let cost = gridtest::sweep::SweepCost::measure(
        &std::collections::BTreeMap::new(),
        &std::collections::BTreeMap::new(),
        None,
    );
    let input = gridtest::sweep::report::ReportInput {
        title: "many fills".to_owned(),
        grid: results.grid(),
        leaderboard: results.leaderboard(),
        research: None,
        trades: Some(gridtest::sweep::report::BestTrades {
            label: "best".to_owned(),
            fills: vec![fill; 100_000],
            prices: vec![
                (1_700_000_000_000_000_000, 101.0);
                2 * gridtest::sweep::report::PRICE_BUCKETS
            ],
            trips: Vec::new(),
        }),
        nodes: &std::collections::BTreeMap::new(),
        cost: &cost,
    };
    gridtest::sweep::report::write(dir.path(), input).unwrap();
    let page = dir.path().join("report.html");
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < 2 << 20, "{size} bytes");
    let data = page_data(&page);
    assert_eq!(data["trades"]["total"], 100_000);
    assert_eq!(
        data["trades"]["fills"].as_array().unwrap().len(),
        gridtest::sweep::report::MAX_FILLS_SHOWN
    );
}

/// The JSON a page carries (what its script draws).
fn page_data(page: &Path) -> serde_json::Value {
    let html = std::fs::read_to_string(page).unwrap();
    let start = html
        .find(r#"<script id="data" type="application/json">"#)
        .unwrap();
    let json = &html[start..];
    let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
    serde_json::from_str(&json.replace("<\\/", "</")).unwrap()
}

#[test]
fn gridtest_report_draws_a_persisted_sweeps_page_again() {
    let scratch = gridtest_tests::Scratch::new();
    scratch.synth(&gridtest::data::synth::SynthSpec {
        symbols: 2,
        days: 30,
        ticks_per_day: 200,
        ..gridtest::data::synth::SynthSpec::default()
    });
    let root = tempfile::tempdir().unwrap();
    let sweep = gridtest::Sweep::of::<gridtest_examples::SmaCrossover>()
        .grid(
            gridtest::Grid::new()
                .axis("fast", (2..=20).step_by(3))
                .axis("slow", (10..=60).step_by(10))
                .constrain("fast < slow"),
        )
        .data(scratch.location());
    let opts = gridtest::RunOptions {
        results: Some(
            gridtest::storage::Location::parse(&root.path().display().to_string()).unwrap(),
        ),
        ..gridtest_tests::quiet()
    };
    let results = gridtest_tests::run_with(&sweep, &opts).unwrap();
    let sweep_id = results.run_info().unwrap().sweep_id.to_string();
    let persisted = root.path().join(format!("sweeps/{sweep_id}"));
    assert!(
        persisted.join("returns.parquet").is_file() && persisted.join("best_trades.json").is_file(),
        "a sweep keeps what its page needs"
    );

    // What `gridtest report ROOT ID --out DIR` runs (the tool is a thin parser around it).
    let out = tempfile::tempdir().unwrap();
    let root_location =
        gridtest::storage::Location::parse(&root.path().display().to_string()).unwrap();
    let id: gridtest::sweep::SweepId = sweep_id.parse().unwrap();
    let page = gridtest_tests::runtime()
        .block_on(gridtest::reopen::rebuild_report(
            &root_location,
            &id,
            out.path(),
        ))
        .unwrap();
    assert_eq!(page, out.path().join("report.html"));
    let (mut before, mut after) = (
        page_data(&persisted.join("report.html")),
        page_data(&out.path().join("report.html")),
    );
    assert_eq!(
        after["nodes"],
        serde_json::json!([]),
        "nodes are not persisted"
    );
    for data in [&mut before, &mut after] {
        data.as_object_mut().unwrap().remove("nodes");
    }
    let curves = before["curves"].as_array().map_or(0, Vec::len);
    assert_eq!(curves, 5, "the original page draws curves");
    assert!(
        before["trades"]["fills"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    );
    assert!(before["walk_forward"].is_object() && before["pbo"].is_object());
    assert_eq!(
        after, before,
        "the page drawn again carries the same figures"
    );

    let unknown: gridtest::sweep::SweepId = "0123456789abcdef".parse().unwrap();
    let err = gridtest_tests::runtime()
        .block_on(gridtest::reopen::rebuild_report(
            &root_location,
            &unknown,
            out.path(),
        ))
        .unwrap_err();
    assert!(err.to_string().contains("0123456789abcdef"), "{err}");

    // `gridtest report OUTPUT_FOLDER`: the sweep's own output folder draws the same page.
    let folder =
        gridtest::storage::Location::parse(&results.output_dir().display().to_string()).unwrap();
    let again = tempfile::tempdir().unwrap();
    let page = gridtest_tests::runtime()
        .block_on(gridtest::reopen::rebuild_report_from_folder(
            &folder,
            again.path(),
        ))
        .unwrap();
    let mut from_folder = page_data(&page);
    from_folder.as_object_mut().unwrap().remove("nodes");
    assert_eq!(from_folder, before, "the output folder draws the same page");
    // A results root alone names the sweeps it holds.
    let err = gridtest_tests::runtime()
        .block_on(gridtest::reopen::rebuild_report_from_folder(
            &root_location,
            again.path(),
        ))
        .unwrap_err();
    assert!(
        err.to_string().contains("is a results root") && err.to_string().contains(&sweep_id),
        "{err}"
    );
}

/// An orders-path strategy's best set: the page draws its closed trades (entry and exit marks,
/// each trade's return) from `best_trades.json`'s trips, timed by the events they filled at.
#[test]
fn the_page_draws_an_orders_strategys_closed_trades() {
    let test = "report::the_page_draws_an_orders_strategys_closed_trades";
    let results =
        four_sets_on_one_symbol(gridtest::Sweep::of::<gridtest_examples::SmaCrossoverOrders>());
    let kept: gridtest::sweep::report::BestTrades = serde_json::from_slice(
        &std::fs::read(results.output_dir().join("best_trades.json")).unwrap(),
    )
    .unwrap();
    let best = results.leaderboard().rows[0].closed_trades;
    assert_eq!(
        kept.trips.len() as u64,
        best,
        "every closed trade of the best set"
    );
    assert!(kept.trips.iter().all(|t| t.entry <= t.exit));
    let page = results.output_dir().join("report.html");
    let data = page_data(&page);
    let shown = data["trades"]["trips"].as_array().unwrap().len();
    assert_eq!(
        shown,
        kept.trips
            .len()
            .min(gridtest::sweep::report::MAX_FILLS_SHOWN)
    );
    assert!(shown > 0, "the best set traded");
    let Some((_, dom)) = rendered(&page, test) else {
        return;
    };
    let count = |class: &str| dom.matches(&format!("class=\"{class}\"")).count();
    assert_eq!(
        count("fill-buy") + count("fill-sell"),
        2 * shown,
        "entry and exit marks"
    );
    assert_eq!(count("trade-pnl"), shown, "each trade's return");
}
