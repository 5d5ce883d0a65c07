use super::*;

fn date(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

fn verdict(path: &str) -> Verdict {
    classify(&path.split('/').collect::<Vec<_>>())
}

fn is_problem(path: &str) -> bool {
    matches!(verdict(path), Verdict::Problem(_))
}

fn is_ignored(path: &str) -> bool {
    matches!(verdict(path), Verdict::Ignored(_))
}

#[test]
fn data_files_need_the_exact_layout() {
    assert_eq!(
        verdict("symbol=S001/date=2024-01-03/part-0.parquet"),
        Verdict::Data {
            symbol: "S001".to_owned(),
            date: date("2024-01-03")
        }
    );
    for bad in [
        "symbol=S001/date=2024-1-3/part-0.parquet",
        "symbol=S001/date=notadate/part-0.parquet",
        "symbol=S001/date=2024-13-45/part-0.parquet",
        "symbol=S001/date=2024-02-30/part-0.parquet",
        "symbol=S001/date=2024-01-03 /part-0.parquet",
        "symbol=S001/date=+2024-01-3/part-0.parquet",
        // A bad date value is a problem whatever the file is.
        "symbol=S001/date=2024-1-3/notes.txt",
        "symbol=S001/part-0.parquet",
        "symbol=S001/date=2024-01-03/part-0.pq",
        "symbol=S001/date=2024-01-03/part-0.PARQUET",
        "symbol=S001/date=2024-01-03/part-0.Parquet",
        "symbol=S001/date=2024-01-03/hour=15/part-0.parquet",
        "symbol=S001/day=2024-01-03/part-0.parquet",
        "symbol=/date=2024-01-03/part-0.parquet",
        "part-0.parquet",
        "ticks/S001/part-0.parquet",
    ] {
        assert!(is_problem(bad), "{bad}: {:?}", verdict(bad));
    }
}

#[test]
fn symbols_are_read_percent_decoded() {
    for (path, symbol) in [
        ("symbol=%5EGSPC/date=2024-01-03/part-0.parquet", "^GSPC"),
        ("symbol=^GSPC/date=2024-01-03/part-0.parquet", "^GSPC"),
        ("symbol=%C3%9C1/date=2024-01-03/part-0.parquet", "Ü1"),
        ("symbol=A%3AB/date=2024-01-03/part-0.parquet", "A:B"),
        ("symbol=100%/date=2024-01-03/part-0.parquet", "100%"),
    ] {
        assert_eq!(
            verdict(path),
            Verdict::Data {
                symbol: symbol.to_owned(),
                date: date("2024-01-03")
            },
            "{path}"
        );
    }
    assert!(is_problem("symbol=%FF/date=2024-01-03/part-0.parquet"));
}

#[test]
fn a_hidden_partition_is_a_problem_and_a_hidden_file_is_ignored() {
    for bad in [
        "symbol=S001/_date=2024-01-03/part-0.parquet",
        "symbol=S001/.date=2024-01-03/part-0.parquet",
        "_symbol=S001/date=2024-01-03/part-0.parquet",
    ] {
        assert!(is_problem(bad), "{bad}: {:?}", verdict(bad));
    }
    assert!(is_ignored("symbol=S001/date=2024-01-03/_x.parquet"));
    assert!(is_ignored("symbol=S001/_temporary/0/part-0.parquet"));
}

#[test]
fn other_objects_are_ignored_with_a_reason() {
    for ok in [
        "manifest.json",
        "symbol=S001/date=2024-01-03/_SUCCESS",
        "symbol=S001/date=2024-01-03/.part-0.parquet.crc",
        "symbol=S001/_tmp/part-0.parquet",
        "_delta_log/0.json",
        "symbol=S001/date=2024-01-03/part-0.csv",
        "symbol=S001/README.md",
    ] {
        assert!(is_ignored(ok), "{ok}: {:?}", verdict(ok));
    }
}

#[test]
fn partition_dates_are_strict() {
    assert_eq!(parse_partition_date("2024-02-29"), Some(date("2024-02-29")));
    for bad in [
        "2023-02-29",
        "2024-1-03",
        "24-01-03",
        "2024/01/03",
        "２０２４-01-03",
        "",
    ] {
        assert_eq!(parse_partition_date(bad), None, "{bad}");
    }
}
