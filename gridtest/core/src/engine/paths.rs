//! `AnyKernel`: the targets path, the orders path or the universe path, chosen at compile time
//! by [`Strategy::ORDERS`] and [`Strategy::UNIVERSE`].

use super::checkpoint::CheckpointError;
use super::day_returns::DayReturns;
use super::exec_model::ExecModel;
use super::kernel::{Kernel, KernelState};
use super::order_kernel::{OrderKernel, OrderKernelState};
use super::trace::CellTrace;
use super::trades::Trade;
use super::universe_kernel::{UniverseKernel, UniverseState};
use super::{CellFailure, CellOutcome, FailureKind};
use crate::data::FeedBatch;
use crate::params::ParamSet;
use crate::strategy::Strategy;

/// The kernel of strategy `S`'s path; a single-symbol strategy fed a universe's batches fails
/// every cell, naming the mismatch.
pub(crate) struct AnyKernel<S: Strategy> {
    path: Path<S>,
    sets: usize,
    refused: Option<CellFailure>,
}

/// The saved lanes of one path's kernel.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(in crate::engine) enum PathState {
    Targets(KernelState),
    Orders(OrderKernelState),
    Universe(UniverseState),
}

impl PathState {
    /// Events of the history fed before the state was saved.
    pub(in crate::engine) fn seen(&self) -> u64 {
        match self {
            Self::Targets(k) => k.seen(),
            Self::Orders(k) => k.seen(),
            Self::Universe(k) => k.seen(),
        }
    }
}

enum Path<S: Strategy> {
    Targets(Kernel<S>),
    Orders(OrderKernel<S>),
    Universe(UniverseKernel<S>),
}

macro_rules! each {
    ($self:expr, $k:ident => $e:expr) => {
        match $self {
            Path::Targets($k) => $e,
            Path::Orders($k) => $e,
            Path::Universe($k) => $e,
        }
    };
}

impl<S: Strategy> AnyKernel<S> {
    pub(crate) fn new(sets: &[ParamSet], exec: &ExecModel) -> Self {
        let path = if S::UNIVERSE {
            Path::Universe(UniverseKernel::new(sets, exec))
        } else if S::ORDERS {
            Path::Orders(OrderKernel::new(sets, exec))
        } else {
            Path::Targets(Kernel::new(sets, exec))
        };
        Self {
            path,
            sets: sets.len(),
            refused: None,
        }
    }

    pub(crate) fn tracing(self) -> Self {
        let path = match self.path {
            Path::Targets(k) => Path::Targets(k.tracing()),
            Path::Orders(k) => Path::Orders(k.tracing()),
            Path::Universe(k) => Path::Universe(k.tracing()),
        };
        Self { path, ..self }
    }

    pub(crate) fn recording_days(self) -> Self {
        let path = match self.path {
            Path::Targets(k) => Path::Targets(k.recording_days()),
            Path::Orders(k) => Path::Orders(k.recording_days()),
            Path::Universe(k) => Path::Universe(k.recording_days()),
        };
        Self { path, ..self }
    }

    /// Logs every lane's round trips.
    pub(crate) fn logging_trades(self) -> Self {
        let path = match self.path {
            Path::Targets(k) => Path::Targets(k.logging_trades()),
            Path::Orders(k) => Path::Orders(k.logging_trades()),
            Path::Universe(k) => Path::Universe(k.logging_trades()),
        };
        Self { path, ..self }
    }

    /// Whether the lanes log their round trips (asked, or taken up from a checkpoint).
    pub(crate) fn logs_trades(&self) -> bool {
        match &self.path {
            Path::Targets(k) => k.logs_trades(),
            Path::Orders(k) => k.logs_trades(),
            Path::Universe(k) => k.logs_trades(),
        }
    }

    /// Round trips (or, on the orders path, closed trades and timed fills) held so far.
    pub(crate) fn trades_held(&self) -> usize {
        each!(&self.path, k => k.trades_held())
    }

    /// Every lane's round trips so far (see [`AnyKernel::logging_trades`]).
    pub(crate) fn take_trades(&mut self) -> Vec<Vec<Trade>> {
        match &mut self.path {
            _ if self.refused.is_some() => vec![Vec::new(); self.sets],
            path => each!(path, k => k.take_trades()),
        }
    }

    pub(crate) fn take_trace(&mut self) -> CellTrace {
        each!(&mut self.path, k => k.take_trace())
    }

    pub(crate) fn feed(&mut self, batch: &FeedBatch) {
        if self.refused.is_some() {
            return;
        }
        if let (false, Some(members)) = (S::UNIVERSE, batch.members()) {
            self.refused = Some(CellFailure::new(
                FailureKind::Data,
                format!(
                    "the shard is a universe of {} symbols ({}) but strategy {} trades one \
                     symbol at a time: implement on_universe to trade a universe",
                    members.symbols.len(),
                    members.symbols.join(", "),
                    std::any::type_name::<S>()
                ),
            ));
            return;
        }
        each!(&mut self.path, k => k.feed(batch));
    }

    /// The lanes' state after the batches fed so far.
    pub(super) fn save(&self) -> Result<PathState, CheckpointError> {
        if let Some(failure) = &self.refused {
            return Err(CheckpointError::Mismatch {
                what: failure.message.clone(),
            });
        }
        match &self.path {
            Path::Targets(k) => k.save().map(PathState::Targets),
            Path::Orders(k) => k.save().map(PathState::Orders),
            Path::Universe(k) => k.save().map(PathState::Universe),
        }
    }

    /// Takes up `state` (see [`Kernel::restore`]).
    pub(super) fn restore(&mut self, state: PathState) -> Result<(), CheckpointError> {
        match (&mut self.path, state) {
            (Path::Targets(k), PathState::Targets(state)) => k.restore(state),
            (Path::Orders(k), PathState::Orders(state)) => k.restore(state),
            (Path::Universe(k), PathState::Universe(state)) => k.restore(state),
            _ => Err(CheckpointError::Mismatch {
                what: "a checkpoint of another path".to_owned(),
            }),
        }
    }

    pub(crate) fn finish(self, n_days: u32) -> Vec<CellOutcome> {
        if self.refused.is_some() {
            return self.finish_recorded(n_days).0;
        }
        each!(self.path, k => k.finish(n_days))
    }

    pub(crate) fn finish_recorded(self, n_days: u32) -> (Vec<CellOutcome>, DayReturns) {
        if let Some(failure) = self.refused {
            let cells = (0..self.sets).map(|_| Err(failure.clone())).collect();
            let per_set = (0..self.sets).map(|_| Vec::new()).collect();
            let days = DayReturns {
                days: Vec::new(),
                per_set,
            };
            return (cells, days);
        }
        each!(self.path, k => k.finish_recorded(n_days))
    }
}
