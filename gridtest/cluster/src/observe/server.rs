//! The HTTP server behind `--http`: hyper's HTTP/1 connection handling, one task per
//! connection, three read-only routes.

use std::convert::Infallible;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::exposition::render_metrics;
use crate::progress::ProgressFeed;
use crate::status::Readiness;

/// What the probes read: the node's readiness and its supervisor's progress (a worker's stays
/// empty). Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Probes {
    /// Set by the node's status events.
    pub readiness: Readiness,
    /// Published by the node's supervisor.
    pub progress: ProgressFeed,
}

impl Probes {
    /// The response to a `method` request for `path`.
    fn respond(&self, method: &Method, path: &str) -> Response<Full<Bytes>> {
        let text = |status: StatusCode, body: String, kind: &'static str| {
            Response::builder()
                .status(status)
                .header("content-type", kind)
                .body(Full::new(Bytes::from(body)))
                .expect("a valid response")
        };
        const PLAIN: &str = "text/plain; charset=utf-8";
        if method != Method::GET && method != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "GET only\n".into(), PLAIN);
        }
        match path {
            "/healthz" => text(StatusCode::OK, "ok\n".into(), PLAIN),
            "/readyz" if self.readiness.is_ready() => text(StatusCode::OK, "ready\n".into(), PLAIN),
            "/readyz" => text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n".into(), PLAIN),
            "/metrics" => text(
                StatusCode::OK,
                render_metrics(self.readiness.is_ready(), &self.progress),
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ),
            _ => text(
                StatusCode::NOT_FOUND,
                "routes: /healthz /readyz /metrics\n".into(),
                PLAIN,
            ),
        }
    }
}

/// Serves the probes on `listener` until `stop` is cancelled.
pub async fn serve(listener: TcpListener, probes: Probes, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let probes = probes.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                let response = probes.respond(req.method(), req.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
