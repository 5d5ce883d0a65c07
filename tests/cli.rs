//! The command line as a user meets it: `--version`, completions, the generated reference in
//! `docs/cli.md`, variables and the `--config` file with their precedence, `--dry-run`'s figures
//! against a real run, JSON log lines, `NO_COLOR` and a terminal with no width.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clap::{Args, Command as ClapCommand};
use gridtest_tests::{example_binary, gridtest_cli, w1_smoke};

fn sweep() -> Command {
    let mut c = Command::new(example_binary("sma_crossover"));
    c.env_remove("RUST_LOG").env("NO_COLOR", "");
    for (name, _) in std::env::vars() {
        if name.starts_with("GRIDTEST_") {
            c.env_remove(name);
        }
    }
    c
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn data() -> String {
    w1_smoke().0.display().to_string()
}

#[test]
fn both_binaries_tell_their_version() {
    let version = gridtest::VERSION;
    let shown = ok(&sweep().arg("--version").output().unwrap());
    assert!(shown.contains(version), "{shown}");
    assert!(shown.starts_with("sma_crossover "), "its own name: {shown}");
    let shown = ok(&Command::new(gridtest_cli())
        .arg("--version")
        .output()
        .unwrap());
    assert_eq!(shown.trim(), format!("gridtest {version}"));
}

#[test]
fn completions_cover_the_whole_command() {
    let bash = ok(&sweep().args(["--completions", "bash"]).output().unwrap());
    // RunArgs' flags and the example's own.
    for flag in ["--rank-by", "--dry-run", "--fast-max", "--log-format"] {
        assert!(bash.contains(flag), "{flag} missing from the bash script");
    }
    let zsh = ok(&Command::new(gridtest_cli())
        .args(["completions", "zsh"])
        .output()
        .unwrap());
    assert!(
        zsh.contains("#compdef gridtest") && zsh.contains("ingest"),
        "{zsh}"
    );
}

/// The generated part of `docs/cli.md`.
const BEGIN: &str = "<!-- generated from RunArgs: begin -->\n";
const END: &str = "<!-- generated from RunArgs: end -->";

#[test]
fn the_reference_in_the_docs_is_generated_from_the_command_and_matches_its_help() {
    let command = gridtest::RunArgs::augment_args(ClapCommand::new("sweep"));
    let generated = gridtest::cli::markdown_reference(&command);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/cli.md");
    let doc = std::fs::read_to_string(&path).expect("docs/cli.md");
    let (head, rest) = doc.split_once(BEGIN).expect("begin marker");
    let (current, tail) = rest.split_once(END).expect("end marker");
    if std::env::var_os("GRIDTEST_BLESS").is_some() {
        std::fs::write(&path, format!("{head}{BEGIN}{generated}{END}{tail}")).unwrap();
    } else {
        assert!(
            current == generated,
            "docs/cli.md is stale: run `GRIDTEST_BLESS=1 cargo test -p gridtest-tests cli::` \
             and commit it"
        );
    }
    // Every flag of the reference is one the real binary's --help shows.
    let help = ok(&sweep().arg("--help").output().unwrap());
    let mut flags = 0;
    for arg in command.get_arguments() {
        let long = format!("--{}", arg.get_long().unwrap());
        assert!(help.contains(&long), "{long} is not in --help");
        flags += 1;
    }
    assert!(flags > 60);
    let short = ok(&sweep().arg("-h").output().unwrap());
    assert!(
        short.contains("--fast-max") && !short.contains("--gpu-slots"),
        "-h shows the first flags:\n{short}"
    );
    assert!(
        help.contains("sma_crossover options:"),
        "the example's own heading"
    );
    for heading in [
        "Data:",
        "Execution:",
        "Cluster:",
        "Logging:",
        "Autoscaling:",
    ] {
        assert!(help.contains(heading), "no {heading} heading in --help");
    }
}

/// `--dry-run` of the smoke dataset with `args`, environment `env` and working directory
/// `dir`: the estimate.
fn dry_run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let mut c = sweep();
    c.current_dir(dir)
        .args(["--data", &data(), "--dry-run", "--no-progress"])
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    json(&ok(&c.output().unwrap()))
}

#[test]
fn a_flag_wins_over_its_variable_which_wins_over_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sweep.toml");
    std::fs::write(
        &config,
        "threads = 1\nsymbols = [\"S000\"]\nfast-max = 20\n",
    )
    .unwrap();
    let config = config.display().to_string();
    let shards = |estimate: &serde_json::Value| estimate["shard_names"].to_string();
    let file_only = dry_run(dir.path(), &["--config", &config], &[]);
    assert_eq!(file_only["threads"], 1);
    assert!(shards(&file_only).contains("S000") && file_only["shards"] == 1);
    // fast 5..=20 step 5 (4 values) × slow 20..=1000 step 20 (50), fast < slow: 4 × 50 − 1.
    assert_eq!(file_only["param_sets"], 199);
    let env = [("GRIDTEST_THREADS", "2"), ("GRIDTEST_SYMBOLS", "S001")];
    let variable = dry_run(dir.path(), &["--config", &config], &env);
    assert_eq!(variable["threads"], 2);
    assert!(shards(&variable).contains("S001") && variable["shards"] == 1);
    let flag = dry_run(
        dir.path(),
        &[
            "--config",
            &config,
            "--threads",
            "3",
            "--symbols",
            "S000,S001",
        ],
        &env,
    );
    assert_eq!(flag["threads"], 3);
    assert_eq!(flag["shards"], 2);
    assert_eq!(flag["param_sets"], 199, "the file's other keys still count");
    // The file named by a variable.
    let by_variable = dry_run(dir.path(), &[], &[("GRIDTEST_CONFIG", config.as_str())]);
    assert_eq!(by_variable["param_sets"], 199);
    // A mistake in the file names it and the key, and nothing runs.
    std::fs::write(dir.path().join("bad.toml"), "rank_by = \"sharp\"\n").unwrap();
    let bad = sweep()
        .current_dir(dir.path())
        .args(["--data", &data(), "--config", "bad.toml"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("sharp"), "{stderr}");
}

#[test]
fn the_dry_run_counts_what_the_run_then_computes() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--threads", "2", "--fast-max", "20"];
    let estimate = dry_run(dir.path(), &args, &[]);
    let out = dir.path().join("out");
    let status = dir.path().join("status.jsonl");
    ok(&sweep()
        .args(["--data", &data(), "--no-progress", "--out"])
        .arg(&out)
        .arg("--status-file")
        .arg(&status)
        .args(args)
        .output()
        .unwrap());
    let mut rows = 0u64;
    let mut evaluations = 0u64;
    let mut events = std::collections::BTreeMap::new();
    let mut reader = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (symbol, n_ticks) = (at("symbol"), at("n_ticks"));
    for record in reader.records() {
        let record = record.unwrap();
        let ticks: u64 = record[n_ticks].parse().unwrap();
        rows += 1;
        evaluations += ticks;
        events.insert(record[symbol].to_owned(), ticks);
    }
    assert_eq!(estimate["cells"], rows);
    assert_eq!(estimate["shards"], 2);
    assert_eq!(estimate["param_sets"].as_u64().unwrap() * 2, rows);
    assert_eq!(estimate["evaluations"], evaluations);
    assert_eq!(estimate["events"], events.values().sum::<u64>());
    let finished: serde_json::Value = std::fs::read_to_string(&status)
        .unwrap()
        .lines()
        .map(json)
        .find(|e| e["event"]["event"] == "sweep_finished" || e["event"] == "sweep_finished")
        .expect("a sweep_finished event");
    assert!(finished.to_string().contains("\"cells\":"), "{finished}");
    // The bytes it would read: both shards fit the cache, so each is read once, and the
    // run reports the same dataset.
    let dataset_bytes = estimate["dataset_bytes"].as_u64().unwrap();
    assert!(dataset_bytes > 0);
    assert_eq!(estimate["bytes_to_read"].as_u64(), Some(dataset_bytes));
    assert!(
        finished
            .to_string()
            .contains(&format!("\"dataset_bytes\":{dataset_bytes}")),
        "{finished}"
    );
    let seconds = estimate["estimated_seconds"].as_f64().unwrap();
    assert!(seconds > 0.0 && seconds.is_finite());
    let calibration = &estimate["calibration"];
    assert!(calibration["evaluations_per_second"].as_f64().unwrap() > 1e5);
    assert!(estimate["memory"]["total_bytes"].as_u64().unwrap() > 0);
    assert!(!dir.path().join("out/dry").exists());
}

#[test]
fn the_dry_run_counts_the_slices_the_run_then_reads() {
    let dir = tempfile::tempdir().unwrap();
    // No history fits a cache of nothing: each is read a day at a time.
    let args = ["--threads", "2", "--fast-max", "20", "--cache-mb", "0"];
    let estimate = dry_run(dir.path(), &args, &[]);
    let status = dir.path().join("status.jsonl");
    ok(&sweep()
        .args(["--data", &data(), "--no-progress", "--out"])
        .arg(dir.path().join("out"))
        .arg("--status-file")
        .arg(&status)
        .args(args)
        .output()
        .unwrap());
    let (slices, units) = (
        estimate["slices"].as_u64().unwrap(),
        estimate["units"].as_u64().unwrap(),
    );
    assert!(slices > units, "{estimate}");
    // Every slice of a unit but its last is reported done with its checkpoint.
    let kept = gridtest::status::read(&status)
        .unwrap()
        .into_iter()
        .filter(|r| matches!(r.event, gridtest::status::StatusEvent::SliceDone { .. }))
        .count() as u64;
    assert_eq!(kept, slices - units, "{estimate}");
}

#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = sweep()
        .current_dir(dir.path())
        .args(["--data", &data(), "--dry-run", "--log-format", "json"])
        .output()
        .unwrap();
    ok(&o);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<serde_json::Value> = stderr.lines().map(json).collect();
    assert!(lines.len() >= 2, "{stderr}");
    for line in &lines {
        assert!(
            line["level"].is_string() && line["timestamp"].is_string(),
            "{line}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "dry run: nothing computed" && l["cells"].as_u64().is_some()),
        "{stderr}"
    );
    // -q leaves only warnings and errors.
    let o = sweep()
        .current_dir(dir.path())
        .args(["--data", &data(), "--dry-run", "-q", "--log-format", "json"])
        .output()
        .unwrap();
    ok(&o);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.lines().map(json).all(|l| l["level"] != "INFO"),
        "{stderr}"
    );
    // A failed run ends with its error as one more JSON line, with its exit status.
    let missing = dir.path().join("no-such-data").display().to_string();
    let o = sweep()
        .current_dir(dir.path())
        .args(["--data", &missing, "--dry-run", "--log-format", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let last = stderr.lines().map(json).next_back().expect("an error line");
    assert_eq!(last["level"], "ERROR", "{stderr}");
    assert!(
        last["message"].as_str().unwrap().contains("no-such-data"),
        "{stderr}"
    );
    assert_eq!(
        last["exit_code"].as_i64().map(|c| c as i32),
        o.status.code()
    );
}

/// Runs `command` on a pseudo-terminal (`script`), whose size is 0 × 0 (no terminal here, as
/// with `docker run -t`); returns what it printed.
fn on_a_terminal(command: &Command, env: &[(&str, &str)]) -> String {
    let mut line = shell_quote(command.get_program().to_string_lossy().as_ref());
    for arg in command.get_args() {
        line.push(' ');
        line.push_str(&shell_quote(arg.to_string_lossy().as_ref()));
    }
    let mut script = Command::new("script");
    script
        .args(["-qec", &line, "/dev/null"])
        .env_remove("RUST_LOG")
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR");
    if let Some(dir) = command.get_current_dir() {
        script.current_dir(dir);
    }
    for (k, v) in env {
        script.env(k, v);
    }
    ok(&script.output().expect("script (util-linux) runs"))
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn a_terminal_gets_colour_unless_no_color_and_a_whole_leaderboard_at_no_width() {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("out");
    let mut c = Command::new(example_binary("sma_crossover"));
    c.current_dir(dir.path())
        .args([
            "--data",
            &data(),
            "--threads",
            "2",
            "--fast-max",
            "10",
            "--out",
        ])
        .arg(&out);
    let coloured = on_a_terminal(&c, &[]);
    assert!(
        coloured.contains('\u{1b}'),
        "a terminal gets ANSI colour:\n{coloured}"
    );
    let plain = on_a_terminal(&c, &[("NO_COLOR", "1")]);
    let without_bar: String = plain
        .lines()
        .filter(|l| !l.contains('\r'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!without_bar.contains("\u{1b}["), "NO_COLOR=1:\n{plain}");
    // The leaderboard's header and its first row, each whole on one line.
    let header = plain
        .lines()
        .find(|l| l.contains("rank") && l.contains("fast") && l.contains("closed trades"))
        .unwrap_or_else(|| panic!("no one-line header:\n{plain}"));
    assert!(header.contains("sharpe"), "{header}");
    let board = csv::Reader::from_path(out.join("leaderboard.csv"))
        .unwrap()
        .into_deserialize::<std::collections::HashMap<String, String>>()
        .next()
        .unwrap()
        .unwrap();
    let best = format!("{:.3}", board["sharpe"].parse::<f64>().unwrap());
    assert!(
        plain
            .lines()
            .any(|l| l.contains(" 1 ") && l.contains(&best)),
        "no whole first row with sharpe {best}:\n{plain}"
    );
}

#[test]
fn pandas_and_polars_read_the_same_types_from_the_csv_as_from_the_parquet() {
    let test = "cli::pandas_and_polars_read_the_same_types_from_the_csv_as_from_the_parquet";
    let Some(python) = gridtest_tests::research_python("pandas, polars, pyarrow") else {
        gridtest_tests::skip("pandas", test, "no Python with pandas, Polars and pyarrow");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // A float axis of whole numbers (20.0 must stay a float) and a failing shard (its error
    // columns filled, its metrics empty).
    let data = dir.path().join("ticks");
    copy_tree(&w1_smoke().0, &data);
    let victim = std::fs::read_dir(data.join("symbol=S001"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = std::fs::read_dir(&victim)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&file, b"not parquet").unwrap();
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        run: gridtest::RunArgs,
    }
    let cli = <Cli as clap::Parser>::parse_from([
        "sweep",
        "--no-progress",
        "--threads",
        "2",
        "--allow-failed-cells",
        "--trades",
        "--data",
        &data.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    let sweep = gridtest::Sweep::of::<gridtest_examples::Momentum>().grid(
        gridtest::Grid::new()
            .axis("window", [20, 40])
            .axis("threshold_bps", [0.0, 20.0]),
    );
    gridtest::run(sweep, &cli.run).expect("the sweep runs, one shard failing");
    let o = Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/reference/output_types.py"
        ))
        .arg(&out)
        .output()
        .unwrap();
    let report = json(&ok(&o));
    for reader in ["pandas", "polars"] {
        assert_eq!(
            report[reader]["csv"], report[reader]["parquet"],
            "{reader} reads other types from the CSV"
        );
    }
    let polars = &report["polars"]["parquet"];
    assert_eq!(polars["window"], "Int64");
    assert_eq!(polars["threshold_bps"], "Float64");
    assert_eq!(polars["first_date"], "Date");
    assert_eq!(polars["error_kind"], "String");
    assert_eq!(polars["sharpe"], "Float64");
    // trades.parquet: the grid's typed columns, times in UTC, nulls while open; every row
    // joins one cell of results.parquet.
    let trades = &report["trades"];
    assert_eq!(
        trades["pandas"], trades["pandas_columns"],
        "pandas reads every column"
    );
    let polars = &trades["polars"];
    assert_eq!(polars["window"], "Int64");
    assert_eq!(
        polars["entry_time"],
        "Datetime(time_unit='ns', time_zone='UTC')"
    );
    assert_eq!(polars["exit_price"], "Float64");
    assert_eq!(polars["open"], "Boolean");
    assert_eq!(polars["member"], "String");
    let rows = trades["rows"].as_u64().unwrap();
    assert!(rows > 100, "{rows} trades");
    assert_eq!(
        trades["joined"].as_u64(),
        Some(rows),
        "each trade joins its cell"
    );
    assert_eq!(
        trades["closed"], trades["round_trips"],
        "closed trades are the cells' round trips"
    );
    assert_eq!(report["spec"]["strategy"], "momentum", "{}", report["spec"]);
    let spec_json: serde_json::Value =
        json(&std::fs::read_to_string(out.join("spec.json")).unwrap());
    assert_eq!(
        report["spec"], spec_json,
        "the spec beside the files is the Parquet's"
    );
    // The failed shard's cells: kind and message apart.
    let mut failed = 0;
    let mut reader = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (kind, message, first) = (at("error_kind"), at("error_message"), at("first_date"));
    for record in reader.records() {
        let record = record.unwrap();
        assert!(chrono::NaiveDate::parse_from_str(&record[first], "%Y-%m-%d").is_ok());
        if !record[kind].is_empty() {
            failed += 1;
            assert_eq!(&record[kind], "data");
            assert!(record[message].contains("S001"), "{}", &record[message]);
        }
    }
    assert!(failed > 0, "no failed cell to check");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `--leaderboard-rows 7`: `leaderboard.csv` holds the 7 best sets, those a ranking of every
/// cell in `results.csv` gives (mean Sharpe over the two symbols, best first), while every cell
/// stays in the results.
#[test]
fn the_leaderboard_file_holds_the_best_rows_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(&sweep()
        .args(["--data", &data(), "--no-progress", "--threads", "2"])
        .args(["--fast-max", "10", "--leaderboard-rows", "7", "--out"])
        .arg(&out)
        .output()
        .unwrap());
    let mut cells = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let headers = cells.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (id_at, sharpe_at) = (at("param_set_id"), at("sharpe"));
    // Per set, in the files' order (set, then symbol): the sum of its Sharpe ratios.
    let mut sums: Vec<(String, f64, u32)> = Vec::new();
    for record in cells.records() {
        let record = record.unwrap();
        let (id, sharpe) = (&record[id_at], record[sharpe_at].parse::<f64>().unwrap());
        match sums.last_mut() {
            Some((last, sum, n)) if last == id => {
                *sum += sharpe;
                *n += 1;
            }
            _ => sums.push((id.to_owned(), sharpe, 1)),
        }
    }
    assert!(
        sums.len() > 7 && sums.iter().all(|s| s.2 == 2),
        "every cell of every set"
    );
    let mut ranked: Vec<(f64, String)> = sums
        .into_iter()
        .map(|(id, sum, n)| (sum / f64::from(n), id))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let expected: Vec<String> = ranked.into_iter().take(7).map(|r| r.1).collect();
    let mut board = csv::Reader::from_path(out.join("leaderboard.csv")).unwrap();
    let id_at = board
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "param_set_id")
        .unwrap();
    let held: Vec<String> = board
        .records()
        .map(|r| r.unwrap()[id_at].to_owned())
        .collect();
    assert_eq!(held, expected);
}

/// The `gridtest` tool ends a failed command as the sweep binaries do: `error: …` naming what
/// failed, no backtrace even with `RUST_BACKTRACE=1`, exit status 1; `report` given a results
/// root without an id names the sweeps it holds.
#[test]
fn the_tool_reports_errors_in_the_sweep_binaries_voice() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(gridtest_cli())
        .args([
            "report",
            &dir.path().join("nothing-here").display().to_string(),
        ])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: ") && last.contains("nothing-here"),
        "{stderr}"
    );
    assert!(!stderr.contains("backtrace"), "{stderr}");
    assert!(!stderr.contains("Error:"), "{stderr}");
}
