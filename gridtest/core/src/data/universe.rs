//! Universe shards: the events of several symbols merged into one stream in time order.
//!
//! Each member is read and checked as its own shard (so an error names the member's file), and
//! the members' batches are merged by `(ts, member)`: equal timestamps keep the universe's member
//! order, so the merge is deterministic whatever the batching. The merge streams: it holds one
//! batch per member, never the whole universe.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::columns::{ShardData, ShardInfo};
use super::error::Result;
use super::feed_batch::FeedBatch;
use super::load::SymbolStream;
use super::shard::Shard;

/// A checked stream of a shard's batches, in time order: one symbol's scan, or a universe's
/// members' scans merged.
pub struct ShardStream {
    info: Arc<ShardInfo>,
    parts: Vec<SymbolStream>,
    merge: Option<Merge>,
}

impl std::fmt::Debug for ShardStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardStream")
            .field("shard", &self.info.shard)
            .finish_non_exhaustive()
    }
}

impl ShardStream {
    pub(crate) fn single(info: Arc<ShardInfo>, part: SymbolStream) -> Self {
        Self {
            info,
            parts: vec![part],
            merge: None,
        }
    }

    pub(crate) fn merged(info: Arc<ShardInfo>, parts: Vec<SymbolStream>) -> Self {
        let symbols: Arc<[String]> = info.shard.symbols().into();
        let merge = Merge::new(symbols, info.kind.columns().len());
        Self {
            info,
            parts,
            merge: Some(merge),
        }
    }

    /// The shard's files.
    #[must_use]
    pub fn info(&self) -> &ShardInfo {
        &self.info
    }

    /// The next checked batch, `None` at the end.
    pub async fn next_batch(&mut self) -> Option<Result<FeedBatch>> {
        let Some(merge) = self.merge.as_mut() else {
            return self.parts[0].next_batch().await;
        };
        while let Some(m) = merge.wanting() {
            match self.parts[m].next_batch().await {
                Some(Err(e)) => return Some(Err(e)),
                next => merge.offer(m, next.map(|b| b.expect("errors returned above"))),
            }
        }
        merge.next(super::BATCH_ROWS).map(Ok)
    }
}

/// A named group of symbols a portfolio strategy trades together: one shard per sweep date
/// range, its members' events merged in time order. The order of `symbols` is the order the
/// strategy sees them in (its targets' order).
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::data::Universe;
/// let u: Universe = "pair=AAA,BBB".parse()?;
/// assert_eq!((u.name.as_str(), u.symbols.len()), ("pair", 2));
/// assert!("pair=AAA,AAA".parse::<Universe>().is_err());
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Universe {
    /// Its name: the shard's id is `NAME:FIRST..LAST`.
    pub name: String,
    /// Its symbols, in order.
    pub symbols: Vec<String>,
}

impl Universe {
    /// Checks the name (not empty, no `:`, `/` or `=`) and the members (at least one, no
    /// repeats).
    ///
    /// # Errors
    /// A message naming the universe and what is wrong.
    pub fn check(&self) -> std::result::Result<(), String> {
        let name = &self.name;
        if name.is_empty() || name.contains([':', '/', '=', ',']) {
            return Err(format!(
                "universe name `{name}` must be non-empty, without `:`, `/`, `=` or `,`"
            ));
        }
        if self.symbols.is_empty() {
            return Err(format!("universe `{name}` has no symbols"));
        }
        let mut seen = std::collections::BTreeSet::new();
        if let Some(dup) = self.symbols.iter().find(|s| !seen.insert(s.as_str())) {
            return Err(format!("universe `{name}` lists {dup} twice"));
        }
        if self.symbols.contains(name) {
            return Err(format!(
                "universe `{name}` is named like one of its symbols: name it apart"
            ));
        }
        Ok(())
    }
}

impl std::str::FromStr for Universe {
    type Err = String;

    /// `NAME=SYM1,SYM2,…`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (name, members) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: a universe is NAME=SYM1,SYM2,…"))?;
        let u = Self {
            name: name.trim().to_owned(),
            symbols: members
                .split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_owned)
                .collect(),
        };
        u.check()?;
        Ok(u)
    }
}

/// What the merge holds of one member.
#[derive(Debug)]
enum Head {
    /// Needs the member's next batch.
    Wanting,
    /// A batch and the position of its next row.
    Ready(FeedBatch, usize),
    /// The member has no more events.
    Done,
}

/// A k-way merge of the members' checked batches into the universe's batches.
#[derive(Debug)]
pub(crate) struct Merge {
    symbols: Arc<[String]>,
    heads: Vec<Head>,
    n_cols: usize,
}

impl Merge {
    /// A merge of `symbols`' batches of `n_cols` value columns each.
    pub(crate) fn new(symbols: Arc<[String]>, n_cols: usize) -> Self {
        let heads = symbols.iter().map(|_| Head::Wanting).collect();
        Self {
            symbols,
            heads,
            n_cols,
        }
    }

    /// A member whose next batch the merge needs before it can go on.
    pub(crate) fn wanting(&self) -> Option<usize> {
        self.heads.iter().position(|h| matches!(h, Head::Wanting))
    }

    /// The next batch of `member` (`None`: it has no more).
    pub(crate) fn offer(&mut self, member: usize, batch: Option<FeedBatch>) {
        self.heads[member] = match batch {
            None => Head::Done,
            Some(b) if b.is_empty() => Head::Wanting,
            Some(b) => Head::Ready(b, 0),
        };
    }

    /// Up to `max_rows` merged events; stops early where a member's batch runs out (offer its
    /// next one, then call again). `None` once every member is done.
    ///
    /// # Panics
    /// If a member is still [`Merge::wanting`].
    pub(crate) fn next(&mut self, max_rows: usize) -> Option<FeedBatch> {
        assert!(self.wanting().is_none(), "offer every wanted batch first");
        let mut ts = Vec::new();
        let mut cols = vec![Vec::new(); self.n_cols];
        let mut index = Vec::new();
        while ts.len() < max_rows {
            let Some(m) = self.earliest() else { break };
            let Head::Ready(batch, at) = &mut self.heads[m] else {
                unreachable!("the earliest head is ready")
            };
            ts.push(batch.ts()[*at]);
            for (out, col) in cols.iter_mut().zip(batch.columns()) {
                out.push(col[*at]);
            }
            index.push(u32::try_from(m).expect("fewer than 2^32 members"));
            *at += 1;
            if *at == batch.len() {
                self.heads[m] = Head::Wanting;
                break;
            }
        }
        if ts.is_empty() {
            return None;
        }
        Some(FeedBatch::new(ts, cols).with_members(index, Arc::clone(&self.symbols)))
    }

    /// The ready member whose next event comes first (ties: the lower member index).
    fn earliest(&self) -> Option<usize> {
        let mut best: Option<(i64, usize)> = None;
        for (m, head) in self.heads.iter().enumerate() {
            if let Head::Ready(batch, at) = head {
                let t = batch.ts()[*at];
                if best.is_none_or(|(bt, _)| t < bt) {
                    best = Some((t, m));
                }
            }
        }
        best.map(|(_, m)| m)
    }
}

impl ShardData {
    /// A universe shard from its members' data in memory (each loaded or built on its own, in
    /// the order of `shard`'s symbols): their events merged in time order, ties in member
    /// order. For tests and custom sources; a sweep's loaders merge files the same way.
    ///
    /// # Errors
    /// [`super::DataError::Universe`] when `members` do not match `shard`'s symbols or differ
    /// in kind.
    ///
    /// ```
    /// # extern crate gridtest_core as gridtest;
    /// use gridtest::data::{Shard, ShardData};
    /// let d = |s: &str| s.parse().unwrap();
    /// let a = ShardData::from_ticks(Shard::new("A", d("2024-01-02"), d("2024-01-02")),
    ///     vec![1, 3], vec![10.0, 11.0], vec![1.0; 2], 1)?;
    /// let b = ShardData::from_ticks(Shard::new("B", d("2024-01-02"), d("2024-01-02")),
    ///     vec![2, 3], vec![20.0, 21.0], vec![1.0; 2], 1)?;
    /// let pair = Shard::universe("pair", ["A", "B"], d("2024-01-02"), d("2024-01-02"));
    /// let u = ShardData::universe(pair, vec![a, b])?;
    /// let ts: Vec<i64> = u.batches().iter().flat_map(|b| b.ts().to_vec()).collect();
    /// let member: Vec<u32> =
    ///     u.batches().iter().flat_map(|b| b.members().unwrap().index.to_vec()).collect();
    /// assert_eq!((ts, member), (vec![1, 2, 3, 3], vec![0, 1, 0, 1]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn universe(shard: Shard, members: Vec<ShardData>) -> Result<Self> {
        let mismatch = |reason: String| super::DataError::Universe {
            shard: shard.to_string(),
            reason,
        };
        let names: Vec<&str> = members.iter().map(|m| m.shard().symbol()).collect();
        if names != shard.symbols() {
            return Err(mismatch(format!(
                "members are [{}] but the universe lists [{}]",
                names.join(", "),
                shard.symbols().join(", ")
            )));
        }
        let kind = members[0].kind();
        if let Some(other) = members.iter().find(|m| m.kind() != kind) {
            return Err(mismatch(format!(
                "{} holds {} but {} holds {kind}",
                other.shard().symbol(),
                other.kind(),
                members[0].shard().symbol()
            )));
        }
        let n_days = members.iter().map(ShardData::n_days).max().unwrap_or(0);
        let symbols: Arc<[String]> = shard.symbols().into();
        let mut merge = Merge::new(symbols, kind.columns().len());
        let mut sources: Vec<_> = members.iter().map(|m| m.batches().iter()).collect();
        let mut batches = Vec::new();
        loop {
            while let Some(m) = merge.wanting() {
                merge.offer(m, sources[m].next().cloned());
            }
            match merge.next(super::BATCH_ROWS) {
                Some(b) => batches.push(b),
                None => break,
            }
        }
        let files = members
            .iter()
            .flat_map(|m| m.info().files.clone())
            .collect();
        let info = ShardInfo { shard, kind, files };
        Ok(Self::from_parts_with_days(info, n_days, batches))
    }
}
