//! `SliceChain`: a history larger than a node's cache, read as slices of whole days one after
//! the other by the unit that runs it, its lanes carried from each slice to the next
//! ([`Chain`](crate::engine::Chain)). The ledger keeps the checkpoint of the last slice done,
//! so a unit whose node is lost resumes from there: an eviction loses at most a slice.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::NaiveDate;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::data::{ListedFile, Shard, files_digest};

/// One slice of a history: its last day (it starts the day after the slice before it ends,
/// the first at the history's first day) and the digest of its files as the sweep's manifest
/// records them ([`files_digest`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaySlice {
    /// Last day, inclusive.
    pub last: NaiveDate,
    /// The digest of the slice's files: a node that lists other files does not read it.
    pub files_digest: String,
}

/// The slices of a unit's history and how far the unit has come through them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SliceChain {
    /// The slices, in time order (at least one).
    pub slices: Vec<DaySlice>,
    /// Slices done: the index of the next one to run.
    pub done: u32,
    /// The lanes' state after the last slice done (`None` before the first).
    pub checkpoint: Option<CheckpointBytes>,
    /// Days with data in the whole history (the metrics' count of days).
    pub n_days: u32,
}

impl SliceChain {
    /// A chain over `slices` not started yet.
    #[must_use]
    pub fn new(slices: Vec<DaySlice>, n_days: u32) -> Self {
        Self {
            slices,
            done: 0,
            checkpoint: None,
            n_days,
        }
    }

    /// How many slices.
    #[must_use]
    pub fn len(&self) -> usize {
        self.slices.len()
    }

    /// Whether it has no slice.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// The shard of slice `k` of `history` (the unit's whole shard).
    #[must_use]
    pub fn shard(&self, history: &Shard, k: usize) -> Shard {
        let first = match k {
            0 => history.first(),
            _ => self.slices[k - 1].last.succ_opt().unwrap_or(NaiveDate::MAX),
        };
        history.days(first, self.slices[k].last)
    }

    /// Records that slice `slice` is done with the lanes' state `checkpoint`; false (and no
    /// change) when the chain is past it already (a late or duplicated report).
    pub fn advance(&mut self, slice: u32, checkpoint: CheckpointBytes) -> bool {
        if slice < self.done || slice as usize + 1 >= self.slices.len() {
            return false;
        }
        self.done = slice + 1;
        self.checkpoint = Some(checkpoint);
        true
    }
}

/// Cuts a history into slices of whole days of at most `budget` bytes in memory each (a day
/// larger than that is a slice of its own). `days`: each day with data, in order, and its
/// bytes in memory; `files`: the history's files as listed, whose digests the slices carry.
#[must_use]
pub fn cut_days(days: &[(NaiveDate, u64)], files: &[ListedFile], budget: u64) -> Vec<DaySlice> {
    let mut lasts = Vec::new();
    let mut filled = 0u64;
    for (i, (day, bytes)) in days.iter().enumerate() {
        if i > 0 && filled + bytes > budget {
            lasts.push(days[i - 1].0);
            filled = 0;
        }
        filled += bytes;
        if i + 1 == days.len() {
            lasts.push(*day);
        }
    }
    let mut first = NaiveDate::MIN;
    lasts
        .into_iter()
        .map(|last| {
            let inside: Vec<ListedFile> = files
                .iter()
                .filter(|f| (first..=last).contains(&f.date))
                .cloned()
                .collect();
            first = last.succ_opt().unwrap_or(NaiveDate::MAX);
            DaySlice {
                last,
                files_digest: files_digest(&inside),
            }
        })
        .collect()
}

/// A checkpoint's bytes ([`Checkpoint::to_bytes`](crate::engine::Checkpoint::to_bytes)), as
/// base64 in JSON (the cluster's wire), raw elsewhere.
#[derive(Clone, PartialEq, Eq)]
pub struct CheckpointBytes(pub Vec<u8>);

impl std::fmt::Debug for CheckpointBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CheckpointBytes({} bytes)", self.0.len())
    }
}

impl Serialize for CheckpointBytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.serialize_str(&STANDARD.encode(&self.0))
        } else {
            serializer.serialize_bytes(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for CheckpointBytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            STANDARD
                .decode(text)
                .map(Self)
                .map_err(serde::de::Error::custom)
        } else {
            Vec::<u8>::deserialize(deserializer).map(Self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2024, 1, d).unwrap()
    }

    fn file(d: u32) -> ListedFile {
        ListedFile {
            url: format!("file:///d/symbol=S/date={}/part-0.parquet", day(d)),
            size: 100 + u64::from(d),
            e_tag: None,
            date: day(d),
        }
    }

    #[test]
    fn days_are_cut_into_slices_within_the_budget_and_each_carries_its_files_digest() {
        let days = [
            (day(2), 40),
            (day(3), 40),
            (day(4), 30),
            (day(5), 90),
            (day(8), 10),
        ];
        let files: Vec<_> = [2, 3, 4, 5, 8].into_iter().map(file).collect();
        let slices = cut_days(&days, &files, 100);
        let lasts: Vec<_> = slices.iter().map(|s| s.last).collect();
        // 40+40 (+30 > 100) | 30 (+90 > 100) | 90+10
        assert_eq!(lasts, [day(3), day(4), day(8)]);
        assert_eq!(slices[0].files_digest, files_digest(&files[..2]));
        assert_eq!(slices[1].files_digest, files_digest(&files[2..3]));
        assert_eq!(slices[2].files_digest, files_digest(&files[3..]));
        // A day over the budget is a slice of its own.
        let big = cut_days(&[(day(2), 500), (day(3), 500)], &files, 100);
        assert_eq!(
            big.iter().map(|s| s.last).collect::<Vec<_>>(),
            [day(2), day(3)]
        );
        assert!(cut_days(&[], &files, 100).is_empty());
    }

    #[test]
    fn a_slice_starts_the_day_after_the_one_before_it() {
        let chain = SliceChain::new(cut_days(&[(day(2), 9), (day(5), 9)], &[], 10), 2);
        let history = Shard::new("S", day(2), day(5));
        assert_eq!(chain.shard(&history, 0), Shard::new("S", day(2), day(2)));
        assert_eq!(chain.shard(&history, 1), Shard::new("S", day(3), day(5)));
    }

    #[test]
    fn a_chain_advances_only_forward_and_never_past_its_last_slice() {
        let mut chain = SliceChain::new(
            cut_days(&[(day(2), 9), (day(3), 9), (day(4), 9)], &[], 10),
            3,
        );
        let bytes = |b: u8| CheckpointBytes(vec![b]);
        assert!(chain.advance(0, bytes(0)));
        assert!(!chain.advance(0, bytes(9)), "a duplicated report");
        assert!(chain.advance(1, bytes(1)));
        assert!(
            !chain.advance(2, bytes(2)),
            "the last slice ends the unit, not the chain"
        );
        assert_eq!((chain.done, chain.checkpoint), (2, Some(bytes(1))));
    }

    #[test]
    fn checkpoint_bytes_travel_as_base64_in_json() {
        let bytes = CheckpointBytes(vec![0, 1, 2, 255]);
        let json = serde_json::to_string(&bytes).unwrap();
        assert_eq!(json, "\"AAEC/w==\"");
        assert_eq!(
            serde_json::from_str::<CheckpointBytes>(&json).unwrap(),
            bytes
        );
        let raw = postcard::to_stdvec(&bytes).unwrap();
        assert_eq!(
            postcard::from_bytes::<CheckpointBytes>(&raw).unwrap(),
            bytes
        );
    }
}
