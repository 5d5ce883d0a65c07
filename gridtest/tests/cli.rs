//! The `gridtest` command-line tool as a user meets it (this test also makes `cargo test` build
//! the binary that the workspace's integration tests drive).

use std::process::Command;

fn gridtest(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gridtest"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("the binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn help_lists_the_commands() {
    let (ok, text) = gridtest(&["--help"]);
    assert!(ok, "{text}");
    assert!(text.contains("ingest") && text.contains("submit"), "{text}");
}

#[test]
fn ingest_rejects_a_missing_input_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.csv");
    let (ok, text) = gridtest(&[
        "ingest",
        missing.to_str().unwrap(),
        "--output",
        dir.path().join("out").to_str().unwrap(),
        "--symbol",
        "X",
    ]);
    assert!(!ok);
    assert!(text.contains("nope.csv"), "{text}");
}

#[test]
fn submit_to_an_unreachable_head_says_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (ok, text) = gridtest(&[
        "submit",
        "--head",
        &format!("127.0.0.1:{port}"),
        "--cookie",
        "c",
        "--strategy",
        "x",
        "--data",
        "/tmp",
        "--axis",
        "a=1..2",
    ]);
    assert!(!ok);
    assert!(
        text.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{text}"
    );
}
