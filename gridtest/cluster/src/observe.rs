//! Probes and metrics over HTTP, for Kubernetes and Prometheus: `--http ADDR` serves
//! `/healthz` (the process answers), `/readyz` (200 once the node is ready, see
//! [`Readiness`](crate::status::Readiness), 503 before) and `/metrics` (the Prometheus text
//! format, rendered by `prometheus-client` from the supervisor's latest progress and fleet
//! snapshot at each scrape).

mod exposition;
mod server;

pub use exposition::render_metrics;
pub use server::{Probes, serve};
