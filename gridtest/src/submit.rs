//! `gridtest submit`: a client that joins a running head (cookie, optionally TLS), submits a
//! sweep by strategy name, and follows its progress to the leaderboard, like Ray's
//! `ray.init("ray://head:10001")` without restarting anything.

use std::time::{Duration, Instant};

use chrono::NaiveDate;
use ractor::ActorRef;
use ractor::rpc::CallResult;

use crate::actors::messages::{COORDINATORS, CoordinatorMsg, SCOPE, SweepRequest, SweepState};
use crate::actors::wire::Wire;
use crate::cli::{ClusterArgs, RoleChoice};
use crate::cluster::node::{self, NodeEvent};
use crate::engine::ExecModel;
use crate::metrics::RankMetric;
use crate::params::{Grid, ParamValue};
use crate::sweep::{SweepDescription, SweepId};
use crate::transport::{self, Tls};
use crate::{Error, Result};

mod jobs;

pub use jobs::{CancelArgs, FollowArgs, ListArgs, run_cancel, run_follow, run_list};

/// How a client reaches a serving head: its address, the cookie, TLS (as for nodes).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Head")]
pub struct HeadArgs {
    /// The head, HOST:PORT.
    #[arg(long, env = "GRIDTEST_HEAD")]
    pub head: String,
    /// The cluster's cookie (prefer GRIDTEST_COOKIE or --cookie-file: a command line is
    /// readable by every local user).
    #[arg(long, env = "GRIDTEST_COOKIE", hide_env_values = true)]
    pub cookie: Option<String>,
    /// File holding the cluster's cookie.
    #[arg(long, env = "GRIDTEST_COOKIE_FILE", conflicts_with = "cookie")]
    pub cookie_file: Option<std::path::PathBuf>,
    /// TLS certificate of this client.
    #[arg(long, env = "GRIDTEST_TLS_CERT")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// TLS key.
    #[arg(long, env = "GRIDTEST_TLS_KEY")]
    pub tls_key: Option<std::path::PathBuf>,
    /// TLS CA.
    #[arg(long, env = "GRIDTEST_TLS_CA")]
    pub tls_ca: Option<std::path::PathBuf>,
}

/// Settings of `gridtest submit`.
#[derive(clap::Args, Clone, Debug)]
pub struct SubmitArgs {
    /// The head to submit to.
    #[command(flatten)]
    pub head: HeadArgs,
    /// Registered strategy name (the head and workers must have it).
    #[arg(long)]
    pub strategy: String,
    /// Dataset root as the nodes see it (path, file:// or s3://).
    #[arg(long)]
    pub data: String,
    /// An axis: `name=START..END[:STEP]` (inclusive) or `name=V1,V2,…` (repeatable).
    #[arg(long = "axis", required = true)]
    pub axes: Vec<String>,
    /// A constraint such as `fast < slow` (repeatable).
    #[arg(long = "constrain")]
    pub constraints: Vec<String>,
    /// Symbols, comma-separated (default all).
    #[arg(long, value_delimiter = ',')]
    pub symbols: Option<Vec<String>>,
    /// A universe for a portfolio strategy, `NAME=SYM1,SYM2,…` (repeatable).
    #[arg(long = "universe", value_name = "NAME=SYMBOLS")]
    pub universes: Vec<crate::data::Universe>,
    /// First date.
    #[arg(long)]
    pub from: Option<NaiveDate>,
    /// Last date.
    #[arg(long)]
    pub to: Option<NaiveDate>,
    /// Commission, bps.
    #[arg(long, default_value_t = 1.0)]
    pub commission_bps: f64,
    /// Slippage, bps.
    #[arg(long, default_value_t = 0.0)]
    pub slippage_bps: f64,
    /// Largest absolute target weight.
    #[arg(long, default_value_t = 1.0)]
    pub max_leverage: f64,
    /// Leaderboard metric: sharpe, sortino, total_return, max_drawdown, profit_factor or
    /// win_rate.
    #[arg(long, default_value_t = RankMetric::Sharpe)]
    pub rank_by: RankMetric,
    /// Leaderboard rows.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Return once queued instead of following the sweep.
    #[arg(long)]
    pub no_wait: bool,
}

fn value(text: &str) -> ParamValue {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        ParamValue::Int(i)
    } else if let Ok(x) = t.parse::<f64>() {
        ParamValue::Float(x)
    } else if t == "true" || t == "false" {
        ParamValue::Bool(t == "true")
    } else {
        ParamValue::Choice(t.to_owned())
    }
}

/// Adds an axis written `name=START..END[:STEP]` or `name=V1,V2,…` to `grid`.
///
/// ```
/// use gridtest::submit::parse_axis;
/// let g = parse_axis(gridtest::Grid::new(), "fast=5..20:5").unwrap();
/// assert_eq!(g.len(), 4);
/// let g = parse_axis(g, "mode=trend,revert").unwrap();
/// assert_eq!(g.len(), 8);
/// ```
///
/// # Errors
/// A message saying what does not parse.
pub fn parse_axis(grid: Grid, spec: &str) -> std::result::Result<Grid, String> {
    let (name, values) = spec
        .split_once('=')
        .ok_or_else(|| format!("axis `{spec}`: expected name=START..END[:STEP] or name=V1,V2"))?;
    let name = name.trim();
    if let Some((range, step)) = values.split_once("..").map(|(a, rest)| {
        let (end, step) = rest.split_once(':').unwrap_or((rest, "1"));
        ((a, end), step)
    }) {
        let (a, b) = range;
        match (value(a), value(b), value(step)) {
            (ParamValue::Int(a), ParamValue::Int(b), ParamValue::Int(s)) if s > 0 => {
                Ok(grid.axis(name, (a..=b).step_by(usize::try_from(s).unwrap_or(1))))
            }
            (a, b, s) => {
                let (Some(a), Some(b), Some(s)) = (a.as_f64(), b.as_f64(), s.as_f64()) else {
                    return Err(format!("axis `{spec}`: the range needs numbers"));
                };
                if s.is_nan() || s <= 0.0 {
                    return Err(format!("axis `{spec}`: the step must be positive"));
                }
                let n = ((b - a) / s + 1e-9).floor() as i64;
                Ok(grid.axis(name, (0..=n).map(|k| a + k as f64 * s)))
            }
        }
    } else {
        Ok(grid.axis(name, values.split(',').map(value)))
    }
}

async fn submit(args: &SubmitArgs) -> Result<()> {
    let request = request(args)?;
    let coordinator = connect(&args.head).await?;
    let submitted = match coordinator
        .call(
            |r| CoordinatorMsg::Submit(Wire(Box::new(request)), r),
            Some(Duration::from_secs(300)),
        )
        .await
    {
        Ok(CallResult::Success(Wire(Ok(s)))) => s,
        Ok(CallResult::Success(Wire(Err(e)))) => {
            return Err(Error::Submission(format!(
                "the head rejected the sweep: {e}"
            )));
        }
        other => return Err(Error::Submission(format!("submission failed: {other:?}"))),
    };
    println!(
        "submitted sweep {}: {:?}",
        submitted.sweep_id, submitted.state
    );
    if args.no_wait {
        return Ok(());
    }
    follow(&coordinator, &submitted.sweep_id).await
}

fn config_error(problem: String) -> Error {
    Error::Config {
        problems: vec![problem],
    }
}

/// The sweep the flags describe.
fn request(args: &SubmitArgs) -> Result<SweepRequest> {
    let mut grid = Grid::new();
    for axis in &args.axes {
        grid = parse_axis(grid, axis).map_err(config_error)?;
    }
    for c in &args.constraints {
        grid = grid.constrain(c);
    }
    Ok(SweepRequest {
        sweep: SweepDescription {
            strategy: args.strategy.clone(),
            grid,
            data: Some(args.data.clone()),
            symbols: args.symbols.clone(),
            universes: args.universes.clone(),
            from: args.from,
            to: args.to,
            exec: ExecModel::default()
                .with_commission_bps(args.commission_bps)
                .with_slippage_bps(args.slippage_bps)
                .with_max_leverage(args.max_leverage),
            search: None,
        },
        rank_by: args.rank_by,
        top: args.top,
    })
}

/// Joins the head's cluster as a client and finds its coordinator.
pub(crate) async fn connect(args: &HeadArgs) -> Result<ActorRef<CoordinatorMsg>> {
    let config = ClusterArgs {
        role: Some(RoleChoice::Worker),
        seeds: vec![args.head.clone()],
        cookie: args.cookie.clone(),
        cookie_file: args.cookie_file.clone(),
        node_name: Some(format!("client-{}", std::process::id())),
        tls_cert: args.tls_cert.clone(),
        tls_key: args.tls_key.clone(),
        tls_ca: args.tls_ca.clone(),
        tls_server_name: "gridtest".to_owned(),
        service: "gridtest".to_owned(),
        port: 7000,
        heartbeat_ms: 1000,
        node_timeout_ms: 5000,
        max_frame_mb: 16,
        ..ClusterArgs::default()
    }
    .resolve()
    .map_err(config_error)?;
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    let tls = config.tls.as_ref().map(Tls::load).transpose()?;
    let node::Node { server, mut events } = node::start(&config, SCOPE)
        .await
        .map_err(|e| Error::actors("starting the node server", e))?;
    transport::dial(&server, &args.head, tls.as_ref()).await?;
    let joined = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(e) = events.recv().await {
            match e {
                NodeEvent::Authenticated { .. } => return true,
                NodeEvent::Disconnected { .. } => return false,
                NodeEvent::Opened { .. } => {}
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    if !joined {
        return Err(Error::Submission(format!(
            "the head at {} refused this client (wrong cookie?)",
            args.head
        )));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(c) = ractor::pg::get_scoped_members(&SCOPE.to_owned(), &COORDINATORS.to_owned())
            .into_iter()
            .next()
        {
            return Ok(ActorRef::<CoordinatorMsg>::from(c));
        }
        if Instant::now() > deadline {
            return Err(Error::Submission(format!(
                "the head at {} does not serve submissions (start it with --role head --serve)",
                args.head
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Prints a submitted sweep's progress until it is done (then its leaderboard) or failed.
pub(crate) async fn follow(coordinator: &ActorRef<CoordinatorMsg>, id: &SweepId) -> Result<()> {
    let mut last = String::new();
    loop {
        let state = match coordinator
            .call(
                |r| CoordinatorMsg::Status(Wire(id.clone()), r),
                Some(Duration::from_secs(10)),
            )
            .await
        {
            Ok(CallResult::Success(Wire(Some(s)))) => s,
            Ok(CallResult::Success(Wire(None))) => {
                return Err(Error::Submission(format!(
                    "the head no longer knows sweep {id}"
                )));
            }
            other => return Err(Error::Submission(format!("lost the head: {other:?}"))),
        };
        let line = match state {
            SweepState::Done {
                cells,
                failed,
                persisted_at,
                leaderboard,
            } => {
                println!("{leaderboard}");
                println!(
                    "sweep {id} complete: {cells} cells ({failed} failed), persisted at {persisted_at}"
                );
                return Ok(());
            }
            SweepState::Failed { error } => {
                return Err(Error::Submission(format!("sweep {id} failed: {error}")));
            }
            SweepState::Cancelled => {
                return Err(Error::Submission(format!("sweep {id} was cancelled")));
            }
            SweepState::Queued { ahead } => format!("queued ({ahead} ahead)"),
            SweepState::Running {
                done,
                total,
                failed,
            } => format!("running: {done}/{total} cells, {failed} failed"),
        };
        if line != last {
            println!("sweep {id} {line}");
            last = line;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Runs `gridtest submit`.
///
/// # Errors
/// [`Error::Submission`] saying why the sweep could not be submitted or failed, [`Error::Config`]
/// for unusable flags, [`Error::Transport`] if the head cannot be reached.
pub fn run_submit(args: &SubmitArgs) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::actors("starting the async runtime", e))?
        .block_on(submit(args))
}
