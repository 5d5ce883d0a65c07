//! `AnyKernel`: the targets path or the orders path, chosen at compile time by
//! [`Strategy::ORDERS`].

use super::CellOutcome;
use super::day_returns::DayReturns;
use super::exec_model::ExecModel;
use super::kernel::Kernel;
use super::order_kernel::OrderKernel;
use super::trace::CellTrace;
use crate::data::FeedBatch;
use crate::params::ParamSet;
use crate::strategy::Strategy;

/// The kernel of strategy `S`'s path.
pub(crate) enum AnyKernel<S: Strategy> {
    Targets(Kernel<S>),
    Orders(OrderKernel<S>),
}

macro_rules! both {
    ($self:expr, $k:ident => $e:expr) => {
        match $self {
            AnyKernel::Targets($k) => $e,
            AnyKernel::Orders($k) => $e,
        }
    };
}

impl<S: Strategy> AnyKernel<S> {
    pub(crate) fn new(sets: &[ParamSet], exec: &ExecModel) -> Self {
        if S::ORDERS {
            Self::Orders(OrderKernel::new(sets, exec))
        } else {
            Self::Targets(Kernel::new(sets, exec))
        }
    }

    pub(crate) fn tracing(self) -> Self {
        match self {
            Self::Targets(k) => Self::Targets(k.tracing()),
            Self::Orders(k) => Self::Orders(k.tracing()),
        }
    }

    pub(crate) fn recording_days(self) -> Self {
        match self {
            Self::Targets(k) => Self::Targets(k.recording_days()),
            Self::Orders(k) => Self::Orders(k.recording_days()),
        }
    }

    pub(crate) fn take_trace(&mut self) -> CellTrace {
        both!(self, k => k.take_trace())
    }

    pub(crate) fn feed(&mut self, batch: &FeedBatch) {
        both!(self, k => k.feed(batch));
    }

    pub(crate) fn finish(self, n_days: u32) -> Vec<CellOutcome> {
        both!(self, k => k.finish(n_days))
    }

    pub(crate) fn finish_recorded(self, n_days: u32) -> (Vec<CellOutcome>, DayReturns) {
        both!(self, k => k.finish_recorded(n_days))
    }
}
