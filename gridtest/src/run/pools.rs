//! The head's autoscaler as the sweep binary runs it: started with the head, and, for a
//! one-shot head, stopped when the sweep is over, leaving the pools at their minimum.

use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::RunArgs;
use crate::execute::RunOptions;
use crate::{Error, Result};

/// How long a one-shot head waits for its autoscaler to leave the pools at their minimum.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(15);

/// The running autoscaler.
pub(super) struct PoolScaler {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// Starts the autoscaler `args` describe on `runtime`, if any.
pub(super) fn start(
    runtime: &Runtime,
    args: &RunArgs,
    opts: &RunOptions,
) -> Result<Option<PoolScaler>> {
    let scaler = runtime
        .block_on(args.autoscale.autoscaler(&opts.progress))
        .map_err(|problem| Error::Config {
            problems: vec![problem],
        })?;
    Ok(scaler.map(|(scaler, period)| {
        let stop = CancellationToken::new();
        // A serving head runs until it is stopped, and leaves its pools to the next head.
        let task = runtime.spawn(scaler.run(period, stop.clone(), !args.serve));
        PoolScaler { stop, task }
    }))
}

impl PoolScaler {
    /// Stops the autoscaler and waits (a while) for it to leave the pools at their minimum.
    pub(super) fn settle(self, runtime: &Runtime) {
        self.stop.cancel();
        let task = self.task;
        let _ = runtime.block_on(async { tokio::time::timeout(SETTLE_TIMEOUT, task).await });
    }
}
