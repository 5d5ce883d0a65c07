//! `--http`: every node answers `/healthz`; `/readyz` follows its role (a worker that has not
//! joined is not ready); the head's `/metrics`, read by a Prometheus text parser mid-sweep, says
//! where the sweep stands and which nodes take part. The nodes are real processes (the cluster
//! tests' binary and harness).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use gridtest::status::StatusEvent;

/// `GET path` over a plain socket: the status code and the body.
pub(crate) fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let code = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap();
    (code, body.to_owned())
}

/// The address a node's status events say its probes listen on.
pub(crate) fn probes_addr(event: &StatusEvent) -> String {
    match event {
        StatusEvent::Probes { addr } => addr.clone(),
        other => panic!("not a probes event: {other:?}"),
    }
}

/// Polls `path` until it answers `code`.
pub(crate) fn wait_for(addr: &str, path: &str, code: u16) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(addr, path).0 != code {
        assert!(
            Instant::now() < deadline,
            "{addr}{path} never answered {code}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of the sample `name` with these labels, from a parsed scrape.
pub(crate) fn sample(
    scrape: &prometheus_parse::Scrape,
    name: &str,
    labels: &[(&str, &str)],
) -> f64 {
    let found = scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)));
    match found.map(|s| &s.value) {
        Some(prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v)) => *v,
        other => panic!("{name}{labels:?}: {other:?} in {:?}", scrape.samples),
    }
}

/// Parses a `/metrics` page.
pub(crate) fn parse(text: &str) -> prometheus_parse::Scrape {
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    prometheus_parse::Scrape::parse(lines).expect("a Prometheus text page")
}
