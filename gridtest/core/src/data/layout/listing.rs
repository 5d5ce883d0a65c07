//! Listing the `symbol=…` directories of a layout, a few at a time.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::ObjectMeta;
use object_store::path::Path;

use super::{Layout, local, local_path};
use crate::data::dataset::Dataset;
use crate::data::error::{DataError, Result};

/// Lists each symbol's directory recursively; for a local dataset, finds the symbolic links
/// under it whose targets do not exist (the store skips them without a word).
pub(super) async fn list_symbols(
    dataset: &Dataset,
    symbols: BTreeMap<String, Path>,
    layout: &mut Layout,
) -> Result<()> {
    let (store, root) = dataset.store()?;
    let local = dataset.url().scheme() == "file";
    // Symbols are listed a few at a time: a store's listing is a chain of pages, each a round
    // trip, and a local one walks a directory tree.
    let listings: Vec<(String, Vec<ObjectMeta>, Vec<local::DanglingLink>)> =
        futures::stream::iter(symbols)
            .map(|(symbol, dir)| {
                let store = Arc::clone(&store);
                async move {
                    let objects: Vec<ObjectMeta> = store
                        .list(Some(&dir))
                        .try_collect()
                        .await
                        .map_err(|source| DataError::Store {
                            url: dataset.object_url(&dir),
                            source,
                        })?;
                    let links = if local {
                        let path = local_path(&dir);
                        tokio::task::spawn_blocking(move || local::dangling_links(&path, 3))
                            .await
                            .unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    Ok::<_, DataError>((symbol, objects, links))
                }
            })
            .buffered(LISTING_CONCURRENCY)
            .try_collect()
            .await?;
    for (symbol, objects, links) in listings {
        if !objects.is_empty() {
            layout.files.entry(symbol).or_default();
        }
        for meta in objects {
            let relative: Vec<String> = meta
                .location
                .prefix_match(&root)
                .map(|parts| parts.map(|p| p.as_ref().to_owned()).collect())
                .unwrap_or_default();
            let relative: Vec<&str> = relative.iter().map(String::as_str).collect();
            layout.add(dataset, meta, &relative);
        }
        for link in links {
            layout.add_dangling(link);
        }
    }
    Ok(())
}

/// Symbol directories listed at once.
const LISTING_CONCURRENCY: usize = 8;
