use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

use super::try_parse_from;

#[derive(Parser, Debug)]
struct Cli {
    #[arg(long, env = "GRIDTEST_CONFIG")]
    config: Option<PathBuf>,
    #[arg(long, env = "GRIDTEST_TEST_TOP", default_value_t = 10)]
    top: usize,
    #[arg(long, env = "GRIDTEST_TEST_FEE")]
    commission_bps: Option<f64>,
    #[arg(long, value_delimiter = ',', env = "GRIDTEST_TEST_SYMBOLS")]
    symbols: Option<Vec<String>>,
    #[arg(long, env = "GRIDTEST_TEST_QUIET")]
    no_progress: bool,
}

fn file(text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sweep.toml");
    std::fs::write(&path, text).expect("write");
    (dir, path.to_string_lossy().into_owned())
}

fn parse(args: &[&str], env: &[(&str, &str)]) -> Result<Cli, clap::Error> {
    let env: Vec<(String, OsString)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    try_parse_from(args.iter().copied(), move |name| {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
}

#[test]
fn the_file_fills_every_kind_of_setting() {
    let (_dir, path) =
        file("top = 3\ncommission_bps = 0.5\nsymbols = [\"AAA\", \"BBB\"]\nno-progress = true\n");
    let cli = parse(&["sweep", "--config", &path], &[]).expect("parses");
    assert_eq!(cli.top, 3);
    assert_eq!(cli.commission_bps, Some(0.5));
    assert_eq!(cli.symbols, Some(vec!["AAA".to_owned(), "BBB".to_owned()]));
    assert!(cli.no_progress);
}

#[test]
fn the_command_line_wins_over_the_file_and_the_default_loses_to_it() {
    let (_dir, path) = file("top = 3\nsymbols = [\"AAA\"]\n");
    let cli = parse(
        &[
            "sweep",
            &format!("--config={path}"),
            "--top",
            "7",
            "--symbols",
            "ZZZ",
        ],
        &[],
    )
    .expect("parses");
    assert_eq!(cli.top, 7);
    assert_eq!(cli.symbols, Some(vec!["ZZZ".to_owned()]));
    let cli = parse(&["sweep"], &[("GRIDTEST_CONFIG", path.as_str())]).expect("parses");
    assert_eq!(cli.top, 3, "the variable names the file too");
}

#[test]
fn a_setting_in_the_environment_leaves_the_file_out() {
    // clap reads the variable itself from the process; here only the file's key is skipped.
    let (_dir, path) = file("top = 3\n");
    let cli = parse(&["sweep", "--config", &path], &[("GRIDTEST_TEST_TOP", "4")]).expect("parses");
    assert_eq!(cli.top, 10, "the file's key gave way to the variable");
}

#[test]
fn mistakes_in_the_file_name_the_file_and_the_key() {
    let (_dir, path) = file("tpo = 3\n");
    let e = parse(&["sweep", "--config", &path], &[]).expect_err("unknown key");
    assert!(
        e.to_string().contains("tpo") && e.to_string().contains(&path),
        "{e}"
    );
    let (_dir, path) = file("no_progress = \"yes\"\n");
    let e = parse(&["sweep", "--config", &path], &[]).expect_err("bad switch");
    assert!(e.to_string().contains("true or false"), "{e}");
    let (_dir, path) = file("top = \"many\"\n");
    let e = parse(&["sweep", "--config", &path], &[]).expect_err("bad number");
    assert!(e.to_string().contains("many"), "{e}");
    let e = parse(&["sweep", "--config", "/nonexistent/sweep.toml"], &[]).expect_err("missing");
    assert!(e.to_string().contains("/nonexistent/sweep.toml"), "{e}");
    let (_dir, path) = file("top = [\n");
    let e = parse(&["sweep", "--config", &path], &[]).expect_err("not TOML");
    assert!(e.to_string().contains(&path), "{e}");
}
