//! gridtest's integration tests: one binary, a module per area.

mod architecture;
mod backend;
mod backtesting_py;
mod cluster;
mod data_errors;
mod deploy;
mod engine;
mod exit;
mod gpu;
mod grid;
mod halving;
mod indicators;
mod ingest;
mod layout;
mod macros;
mod orders;
mod panics;
mod registry;
mod replay;
mod report;
mod research;
mod s3;
mod streaming;
mod submit;
mod universe;
mod w1;
