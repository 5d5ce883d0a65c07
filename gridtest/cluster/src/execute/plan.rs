//! Planning a sweep: the dataset listed strictly, one shard per symbol, the grid expanded,
//! every shard's footers checked, and the spec (with each shard's files' digest) that names the
//! sweep.

use std::time::Instant;

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

use ractor::ActorRef;

use crate::actors::{ShardLoaderMsg, ShardRequest};
use crate::data::{DataError, Dataset, ListedFile, ShardInfo, ShardReader};
use crate::error::Result;
use crate::persist::SweepSpec;
use crate::registry::StrategyEntry;
use crate::sweep::Sweep;

/// A sweep resolved against its dataset: the spec (grid, execution model, shards, manifest:
/// what the sweep is), the strategy's entry points, the dataset, every shard's footers.
pub struct Plan {
    pub(crate) strategy: StrategyEntry,
    /// Parameter sets of the grid (counted once: a count walks the grid).
    pub(crate) n_sets: usize,
    pub(crate) dataset: Dataset,
    pub(crate) infos: Vec<std::result::Result<ShardInfo, DataError>>,
    /// Each shard's files as the manifest records them, in the spec's shard order.
    pub(crate) shard_files: Vec<Vec<ListedFile>>,
    pub(crate) spec: SweepSpec,
    /// The distinct dates of the shards' files, ascending.
    pub(crate) dates: Vec<chrono::NaiveDate>,
    pub(crate) started: Instant,
    /// This process's count of bytes read from datasets when the planning began.
    pub(crate) reads_at_start: u64,
}

impl Plan {
    /// The sweep id (hash of the spec).
    #[must_use]
    pub fn sweep_id(&self) -> crate::sweep::SweepId {
        self.spec.id()
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("sweep", &self.spec.id())
            .finish_non_exhaustive()
    }
}

/// Lists the dataset, plans the shards, expands the grid and checks every shard's footers.
pub(crate) async fn plan(sweep: &Sweep) -> Result<Plan> {
    plan_with(sweep, &CancellationToken::new()).await
}

/// As [`plan`]; `cancel` stops the count of the grid (on its own thread) at once.
pub(crate) async fn plan_with(sweep: &Sweep, cancel: &CancellationToken) -> Result<Plan> {
    sweep.validate()?;
    let started = Instant::now();
    let reads_at_start = crate::data::bytes_read();
    let strategy = *sweep.strategy();
    let location = sweep.data_location().expect("validated");
    let dataset = Dataset::try_new(location, strategy.kind)?;
    let (from, to) = sweep.date_range();
    let data = if sweep.universes().is_empty() {
        dataset.plan(sweep.symbol_selection(), from, to).await?
    } else {
        dataset.plan_universes(sweep.universes(), from, to).await?
    };
    for ignored in &data.layout.ignored {
        tracing::warn!(object = %ignored.url, reason = %ignored.reason,
            "not data: ignored (recorded in the sweep's spec)");
    }
    let shards: Vec<_> = if strategy.universe && sweep.universes().is_empty() {
        // A portfolio strategy over plain symbols: each symbol is a universe of one.
        let one = |s: crate::data::Shard| {
            let name = s.symbol().to_owned();
            crate::data::Shard::universe(name.clone(), [name], s.first(), s.last())
        };
        data.shards.into_iter().map(one).collect()
    } else {
        data.shards
    };
    // Counting walks the constrained axes' combinations (up to billions): off the async
    // threads, so that a signal stops the planning at once.
    let (grid, stop) = (sweep.grid_ref().clone(), cancel.clone());
    let n_sets = tokio::task::spawn_blocking(move || grid.len_while(|| !stop.is_cancelled()))
        .await
        .map_err(|e| crate::Error::actors("counting the grid", e))?
        .ok_or(crate::Error::InterruptedPlanning)?;
    tracing::info!(strategy = strategy.name, dataset = %dataset.url(), shards = shards.len(),
        param_sets = n_sets, cells = shards.len() * n_sets,
        listed_ms = started.elapsed().as_millis() as u64, "sweep planned");
    let (shard_files, infos) = inspect_shards(&dataset, &data.layout, &shards).await?;
    let dates: std::collections::BTreeSet<_> =
        shard_files.iter().flatten().map(|f| f.date).collect();
    let spec =
        SweepSpec::new(sweep, &dataset, shards, &shard_files).with_ignored(data.layout.ignored);
    Ok(Plan {
        strategy,
        n_sets,
        dataset,
        infos,
        shard_files,
        spec,
        dates: dates.into_iter().collect(),
        started,
        reads_at_start,
    })
}

/// Each shard's files as the manifest records them (every file the listing saw, also those of
/// shards that fail), and each shard's footers read: content tags first, then the footers.
async fn inspect_shards(
    dataset: &Dataset,
    layout: &crate::data::Layout,
    shards: &[crate::data::Shard],
) -> Result<(Vec<Vec<ListedFile>>, ShardInfos)> {
    let tagging = Instant::now();
    let reader = ShardReader::try_new(dataset)?;
    let mut listed = Vec::with_capacity(shards.len());
    for s in shards {
        let mut objects = Vec::new();
        for symbol in s.symbols() {
            let files = layout.files_between(symbol, s.first(), s.last());
            objects.extend(crate::data::content_tag::tag_contents(dataset, files).await?);
        }
        listed.push(objects);
    }
    let shard_files: Vec<Vec<ListedFile>> = listed.iter().map(|l| reader.listed(l)).collect();
    let footers = Instant::now();
    let infos = join_all(
        shards
            .iter()
            .zip(listed)
            .map(|(s, l)| reader.inspect_objects(s, l)),
    )
    .await;
    tracing::debug!(
        files = shard_files.iter().map(Vec::len).sum::<usize>(),
        tagged_ms = (footers - tagging).as_millis() as u64,
        footers_ms = footers.elapsed().as_millis() as u64,
        "shards' files tagged and inspected"
    );
    for (shard, info) in shards.iter().zip(&infos) {
        if let Err(e) = info {
            tracing::error!(shard = %shard, error = %e, "shard cannot be read; its cells will fail");
        }
    }
    Ok((shard_files, infos))
}

/// Every shard's footers, or why a shard cannot be read.
type ShardInfos = Vec<std::result::Result<ShardInfo, DataError>>;

/// Loads what fits the cache before compute starts, so load and compute are timed apart.
pub(super) async fn prefetch(loader: &ActorRef<ShardLoaderMsg>, plan: &Plan, budget: u64) {
    let mut budget = budget;
    let mut prefetch = Vec::new();
    for ((shard, info), files) in plan
        .spec
        .shards
        .iter()
        .zip(&plan.infos)
        .zip(&plan.shard_files)
    {
        if let Ok(info) = info
            && info.bytes_in_memory() <= budget
        {
            budget -= info.bytes_in_memory();
            prefetch.push(ShardRequest {
                dataset: plan.dataset.clone(),
                shard: shard.clone(),
                files_digest: Some(crate::data::files_digest(files)),
            });
        }
    }
    join_all(prefetch.into_iter().map(|request| {
        let loader = loader.clone();
        async move {
            loader
                .call(
                    |r| ShardLoaderMsg::Get(request, r),
                    Some(crate::actors::LOAD_TIMEOUT),
                )
                .await
        }
    }))
    .await;
}
