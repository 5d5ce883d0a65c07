//! `SweepLock`: one run at a time per sweep and results root.
//!
//! Two identical sweeps started at once into the same results root would otherwise both
//! compute everything. The first takes a lease object `sweeps/<id>/lock` with a conditional
//! put (create only if absent: atomic on a local disk and on S3) and renews it while it runs;
//! the second waits, and once the lease is released it opens the ledger, finds the sweep
//! complete and reports it without computing a cell. A lease whose holder died expires after
//! [`LEASE_TTL`]; one held by a dead process on this very host (or by this host's previous
//! incarnation with the same pid, a restarted container) is taken over at once.

use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use super::PersistError;
use crate::storage::Location;
use crate::sweep::SweepId;

/// A lease not renewed for this long is free.
pub const LEASE_TTL: Duration = Duration::from_secs(30);
/// How often the holder renews its lease.
const RENEW_EVERY: Duration = Duration::from_secs(10);
/// How often a waiting run looks at the lease again.
const POLL_EVERY: Duration = Duration::from_millis(500);
/// How far another host's clock may run ahead of this one's before its lease is suspect.
const CLOCK_SKEW: Duration = Duration::from_secs(60);

/// The lease object's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseHolder {
    /// Node name of the holder.
    pub node: String,
    /// Its host.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// Expiry, ms since the Unix epoch.
    pub expires_ms: i64,
}

impl LeaseHolder {
    fn now(node: &str) -> Self {
        Self {
            node: node.to_owned(),
            host: hostname(),
            pid: std::process::id(),
            expires_ms: now_ms() + i64::try_from(LEASE_TTL.as_millis()).unwrap_or(i64::MAX),
        }
    }

    /// Whether its expiry lies further ahead than a holder ever writes it.
    fn expires_too_far_ahead(&self) -> bool {
        let horizon = LEASE_TTL + CLOCK_SKEW;
        self.expires_ms > now_ms() + i64::try_from(horizon.as_millis()).unwrap_or(i64::MAX)
    }

    fn into_too_far_ahead_error(self, url: String) -> PersistError {
        PersistError::LeaseFromTheFuture {
            url,
            expires: chrono::DateTime::from_timestamp_millis(self.expires_ms)
                .map_or_else(|| self.expires_ms.to_string(), |t| t.to_rfc3339()),
            node: self.node,
            host: self.host,
            pid: self.pid,
            ttl_s: LEASE_TTL.as_secs(),
        }
    }

    /// Whether nobody holds this lease any more: it expired, or its process is gone from this
    /// host (or is this process's previous incarnation: same host and pid, not us).
    fn is_stale(&self) -> bool {
        if self.expires_ms < now_ms() {
            return true;
        }
        if self.host != hostname() {
            return false;
        }
        self.pid == std::process::id()
            || !std::path::Path::new(&format!("/proc/{}", self.pid)).exists()
    }
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

/// A held lease on a sweep; renewed in the background until [`SweepLock::release`] (or until
/// dropped, after which it expires).
pub struct SweepLock {
    store: Arc<dyn ObjectStore>,
    path: Path,
    renew: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for SweepLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SweepLock")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SweepLock {
    /// Takes the lease on sweep `sweep_id` under `root` for `node`, waiting while a live run
    /// holds it. `Ok(None)` when the store cannot do conditional puts (the sweep then runs
    /// unlocked, with a warning).
    ///
    /// # Errors
    /// [`PersistError::Store`] when the store fails.
    pub async fn acquire(
        root: &Location,
        sweep_id: &SweepId,
        node: &str,
    ) -> Result<Option<Self>, PersistError> {
        let (store, root_path) = root.store()?;
        let path = root_path
            .join("sweeps")
            .join(sweep_id.as_str())
            .join("lock");
        let url = root.object_url(&path);
        let store_error = |source| PersistError::Store {
            url: url.clone(),
            source,
        };
        let mut announced = false;
        loop {
            let me = LeaseHolder::now(node);
            let body = PutPayload::from(serde_json::to_vec(&me).expect("leases serialise"));
            let create = PutOptions::from(PutMode::Create);
            match store.put_opts(&path, body, create).await {
                Ok(_) => break,
                Err(
                    object_store::Error::AlreadyExists { .. }
                    | object_store::Error::Precondition { .. },
                ) => {}
                Err(object_store::Error::NotImplemented { .. }) => {
                    tracing::warn!(lock = %url,
                        "this store cannot create objects conditionally: the sweep runs unlocked");
                    return Ok(None);
                }
                Err(e) => return Err(store_error(e)),
            }
            let holder = match store.get(&path).await {
                Ok(got) => got
                    .bytes()
                    .await
                    .ok()
                    .and_then(|b| serde_json::from_slice::<LeaseHolder>(&b).ok()),
                // Released between our put and our read: try again at once.
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(store_error(e)),
            };
            match holder {
                Some(h) if !h.is_stale() && h.expires_too_far_ahead() => {
                    return Err(h.into_too_far_ahead_error(url));
                }
                Some(h) if !h.is_stale() => {
                    if !announced {
                        announced = true;
                        tracing::warn!(sweep = %sweep_id, holder = %h.node, host = %h.host,
                            pid = h.pid, lock = %url,
                            "this sweep is being run by another process; waiting for it (its \
                             lease expires within {} s unless renewed)", LEASE_TTL.as_secs());
                    }
                    tokio::time::sleep(POLL_EVERY).await;
                }
                stale => {
                    tracing::info!(sweep = %sweep_id, holder = ?stale, "taking over a stale sweep lease");
                    match store.delete(&path).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(store_error(e)),
                    }
                }
            }
        }
        let renew = {
            let (store, path, node) = (Arc::clone(&store), path.clone(), node.to_owned());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(RENEW_EVERY).await;
                    let body = serde_json::to_vec(&LeaseHolder::now(&node)).expect("serialises");
                    if let Err(e) = store.put(&path, PutPayload::from(body)).await {
                        tracing::warn!(error = %e, "could not renew the sweep lease");
                    }
                }
            })
        };
        Ok(Some(Self { store, path, renew }))
    }

    /// Stops renewing and deletes the lease.
    pub async fn release(self) {
        self.renew.abort();
        if let Err(e) = self.store.delete(&self.path).await {
            tracing::warn!(error = %e, "could not release the sweep lease (it expires by itself)");
        }
    }
}

impl Drop for SweepLock {
    fn drop(&mut self) {
        self.renew.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lease object written as another host's run would, expiring `in_ms` from now.
    fn foreign_lease(root: &Location, sweep: &SweepId, in_ms: i64) {
        let holder = LeaseHolder {
            node: "w9".to_owned(),
            host: "another-host".to_owned(),
            pid: 4242,
            expires_ms: now_ms() + in_ms,
        };
        let dir = root
            .url()
            .to_file_path()
            .unwrap()
            .join(format!("sweeps/{sweep}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("lock"), serde_json::to_vec(&holder).unwrap()).unwrap();
    }

    #[tokio::test]
    async fn a_lease_expiring_far_beyond_its_ttl_is_refused_with_a_hint_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::parse(&dir.path().display().to_string()).unwrap();
        let sweep = SweepId::from_digest(&[3; 8]);
        foreign_lease(&root, &sweep, 10 * 24 * 3_600_000);
        let started = std::time::Instant::now();
        let err = SweepLock::acquire(&root, &sweep, "me").await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        let text = err.to_string();
        assert!(
            text.contains("is held by node w9 on host another-host (pid 4242) until ")
                && text.contains("If no run of this sweep is alive, delete file://"),
            "{text}"
        );
        // A lease as a live run writes it is waited for.
        foreign_lease(&root, &sweep, 20_000);
        let waited = tokio::time::timeout(
            Duration::from_secs(1),
            SweepLock::acquire(&root, &sweep, "me"),
        )
        .await;
        assert!(waited.is_err(), "a live run's lease was taken over");
    }
}
