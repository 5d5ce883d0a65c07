//! `ExecArgs`: the flags of the metric conventions and of the orders path's broker.

use crate::engine::{
    ExecModel, ExposureBasis, FirstReturn, ProfitFactorBasis, RatioConvention, ReversalFee,
    ZeroDeviation,
};
use crate::metrics::DrawdownSign;

/// Metric conventions and the orders path's cash, lots and fees (`docs/execution-model.md`).
/// Each flag overrides the sweep's execution model, and is recorded in the spec with it.
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Execution")]
pub struct ExecArgs {
    /// Annual risk-free rate subtracted in Sharpe and Sortino (a fraction, e.g. 0.02).
    #[arg(long, env = "GRIDTEST_RISK_FREE_RATE")]
    pub risk_free_rate: Option<f64>,
    /// Sharpe and Sortino from per-event returns (arithmetic, the default) or as
    /// backtesting.py computes them from daily equity (geometric).
    #[arg(long, env = "GRIDTEST_RATIOS", value_parser = parse_ratios)]
    pub ratios: Option<RatioConvention>,
    /// Profit factor over trades' P&L (pnl, the default) or their returns (returns, as
    /// backtesting.py).
    #[arg(long, env = "GRIDTEST_PROFIT_FACTOR", value_parser = parse_profit_factor)]
    pub profit_factor: Option<ProfitFactorBasis>,
    /// Per-event Sharpe and Sortino: no return for the first event, which only decides
    /// (skipped, the default), or a return of 0 for it (zero, as vectorbt).
    #[arg(long, env = "GRIDTEST_FIRST_RETURN", value_parser = parse_first_return)]
    pub first_return: Option<FirstReturn>,
    /// A per-event Sharpe or Sortino ratio whose deviation is 0: 0 (zero, the default) or +inf
    /// (infinite, as vectorbt).
    #[arg(long, env = "GRIDTEST_ZERO_DEVIATION", value_parser = parse_zero_deviation)]
    pub zero_deviation: Option<ZeroDeviation>,
    /// What exposure measures: the share of periods with a position (position, the default)
    /// or, on the orders path, of events between a closed trade's entry and exit
    /// (closed-trades, backtesting.py's Exposure Time).
    #[arg(long, env = "GRIDTEST_EXPOSURE", value_parser = parse_exposure)]
    pub exposure: Option<ExposureBasis>,
    /// Targets and universe paths: the round trip a reversal closes pays its whole fee
    /// (closing, the default), or each trip its part of the notional (split, as the orders
    /// path, backtesting.py and vectorbt).
    #[arg(long, env = "GRIDTEST_REVERSAL_FEE", value_parser = parse_reversal_fee)]
    pub reversal_fee: Option<ReversalFee>,
    /// Drawdowns in the printed leaderboard and the report: positive (the default, as stored
    /// in every file) or negative (as backtesting.py shows them).
    #[arg(long, env = "GRIDTEST_DRAWDOWN_SIGN")]
    pub drawdown_sign: Option<DrawdownSign>,
    /// Orders path: cash at the start of each shard (default 100000).
    #[arg(long, env = "GRIDTEST_INITIAL_CASH")]
    pub initial_cash: Option<f64>,
    /// Orders path: commission per unit traded.
    #[arg(long, env = "GRIDTEST_COMMISSION_PER_UNIT")]
    pub commission_per_unit: Option<f64>,
    /// Orders path: fixed commission per order filled.
    #[arg(long, env = "GRIDTEST_COMMISSION_PER_ORDER")]
    pub commission_per_order: Option<f64>,
    /// Orders path: smallest commission of a fill.
    #[arg(long, env = "GRIDTEST_COMMISSION_MIN")]
    pub commission_min: Option<f64>,
    /// Orders path: bid-ask spread, basis points (half paid on each fill).
    #[arg(long, env = "GRIDTEST_SPREAD_BPS")]
    pub spread_bps: Option<f64>,
    /// Orders path: sizes round down to multiples of this (default 1; 0 for fractional units).
    #[arg(long, env = "GRIDTEST_LOT_SIZE")]
    pub lot_size: Option<f64>,
    /// Orders path: contract multiplier (currency per unit per point).
    #[arg(long, env = "GRIDTEST_MULTIPLIER")]
    pub multiplier: Option<f64>,
    /// Orders path: each new order cancels pending orders and closes open trades first.
    #[arg(long, env = "GRIDTEST_EXCLUSIVE_ORDERS")]
    pub exclusive_orders: bool,
}

fn parse_ratios(s: &str) -> Result<RatioConvention, String> {
    match s {
        "arithmetic" => Ok(RatioConvention::Arithmetic),
        "geometric" => Ok(RatioConvention::Geometric),
        _ => Err(format!("`{s}`: expected arithmetic or geometric")),
    }
}

fn parse_profit_factor(s: &str) -> Result<ProfitFactorBasis, String> {
    match s {
        "pnl" => Ok(ProfitFactorBasis::Pnl),
        "returns" => Ok(ProfitFactorBasis::Returns),
        _ => Err(format!("`{s}`: expected pnl or returns")),
    }
}

fn parse_first_return(s: &str) -> Result<FirstReturn, String> {
    match s {
        "skipped" => Ok(FirstReturn::Skipped),
        "zero" => Ok(FirstReturn::Zero),
        _ => Err(format!("`{s}`: expected skipped or zero")),
    }
}

fn parse_zero_deviation(s: &str) -> Result<ZeroDeviation, String> {
    match s {
        "zero" => Ok(ZeroDeviation::Zero),
        "infinite" => Ok(ZeroDeviation::Infinite),
        _ => Err(format!("`{s}`: expected zero or infinite")),
    }
}

fn parse_exposure(s: &str) -> Result<ExposureBasis, String> {
    match s {
        "position" => Ok(ExposureBasis::Position),
        "closed-trades" => Ok(ExposureBasis::ClosedTrades),
        _ => Err(format!("`{s}`: expected position or closed-trades")),
    }
}

fn parse_reversal_fee(s: &str) -> Result<ReversalFee, String> {
    match s {
        "closing" => Ok(ReversalFee::Closing),
        "split" => Ok(ReversalFee::Split),
        _ => Err(format!("`{s}`: expected closing or split")),
    }
}

impl ExecArgs {
    /// Writes the flags given into `exec`.
    pub fn apply(&self, exec: &mut ExecModel) {
        if let Some(r) = self.risk_free_rate {
            exec.risk_free_rate = r;
        }
        if let Some(r) = self.ratios {
            exec.ratios = r;
        }
        if let Some(p) = self.profit_factor {
            exec.profit_factor = p;
        }
        if let Some(d) = self.drawdown_sign {
            exec.drawdown_sign = d;
        }
        if let Some(f) = self.first_return {
            exec.first_return = f;
        }
        if let Some(z) = self.zero_deviation {
            exec.zero_deviation = z;
        }
        if let Some(e) = self.exposure {
            exec.exposure = e;
        }
        if let Some(r) = self.reversal_fee {
            exec.reversal_fee = r;
        }
        let b = &mut exec.broker;
        let fields = [
            (self.initial_cash, &mut b.initial_cash),
            (self.commission_per_unit, &mut b.commission_per_unit),
            (self.commission_per_order, &mut b.commission_per_order),
            (self.commission_min, &mut b.commission_min),
            (self.spread_bps, &mut b.spread_bps),
            (self.lot_size, &mut b.lot_size),
            (self.multiplier, &mut b.multiplier),
        ];
        for (flag, slot) in fields {
            if let Some(v) = flag {
                *slot = v;
            }
        }
        if self.exclusive_orders {
            b.exclusive_orders = true;
        }
    }
}
