//! What a node checks before it reads a shard: that it lists the files the sweep's manifest
//! recorded for it, with the same sizes and content tags. A mount holding another copy of the
//! data, a missing mount or a file changed since the sweep was planned is found here, before a
//! single row is read, and named.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::layout::ListedFile;

/// The digest of a shard's files as listed: each file's URL, size and tag, in read order, as
/// 16 hex digits of SHA-256. Two listings with the same files and contents agree; any file
/// added, missing, resized or changed (its content tag: a hash of the bytes locally, the
/// ETag on S3) changes it.
///
/// ```
/// # extern crate gridtest_core as gridtest;
/// use gridtest::data::{ListedFile, files_digest};
/// let file = |size| ListedFile {
///     url: "file:///d/symbol=A/date=2024-01-02/part-0.parquet".into(),
///     size,
///     e_tag: Some("sha256:ab".into()),
///     date: "2024-01-02".parse().unwrap(),
/// };
/// assert_eq!(files_digest(&[file(10)]), files_digest(&[file(10)]));
/// assert_ne!(files_digest(&[file(10)]), files_digest(&[file(11)]));
/// ```
#[must_use]
pub fn files_digest(files: &[ListedFile]) -> String {
    let mut hasher = Sha256::new();
    for f in files {
        hasher.update(f.url.as_bytes());
        hasher.update([0]);
        hasher.update(f.size.to_le_bytes());
        hasher.update(f.e_tag.as_deref().unwrap_or("").as_bytes());
        hasher.update([0]);
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How a node's listing of a shard (`seen`) differs from what the manifest recorded, one line
/// per file (at most `limit`, then how many more): missing there, not recorded, or of another
/// size or content.
#[must_use]
pub fn listing_differences(recorded: &[ListedFile], seen: &[ListedFile], limit: usize) -> String {
    let recorded: BTreeMap<&str, &ListedFile> =
        recorded.iter().map(|f| (f.url.as_str(), f)).collect();
    let seen: BTreeMap<&str, &ListedFile> = seen.iter().map(|f| (f.url.as_str(), f)).collect();
    let version = |f: &ListedFile| {
        format!(
            "{} bytes, {}",
            f.size,
            f.e_tag.as_deref().unwrap_or("no tag")
        )
    };
    let mut lines = Vec::new();
    for (url, r) in &recorded {
        match seen.get(url) {
            None => lines.push(format!("{url}: missing there")),
            Some(s) if s.size != r.size || s.e_tag != r.e_tag => lines.push(format!(
                "{url}: {} there, {} in the manifest",
                version(s),
                version(r)
            )),
            Some(_) => {}
        }
    }
    for url in seen.keys().filter(|u| !recorded.contains_key(*u)) {
        lines.push(format!("{url}: there, not in the manifest"));
    }
    let more = lines.len().saturating_sub(limit);
    lines.truncate(limit);
    if more > 0 {
        lines.push(format!("and {more} more"));
    }
    lines.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, size: u64, tag: &str) -> ListedFile {
        ListedFile {
            url: format!("file:///d/symbol=A/date=2024-01-02/{name}"),
            size,
            e_tag: Some(tag.to_owned()),
            date: "2024-01-02".parse().unwrap(),
        }
    }

    #[test]
    fn the_digest_follows_every_file_and_its_order() {
        let a = file("a.parquet", 10, "sha256:1");
        let b = file("b.parquet", 20, "sha256:2");
        let base = files_digest(&[a.clone(), b.clone()]);
        assert_eq!(base.len(), 16);
        assert_ne!(base, files_digest(std::slice::from_ref(&a)));
        assert_ne!(base, files_digest(&[b.clone(), a.clone()]));
        assert_ne!(
            base,
            files_digest(&[a.clone(), file("b.parquet", 20, "sha256:3")])
        );
        assert_ne!(base, files_digest(&[]));
    }

    #[test]
    fn differences_name_each_file() {
        let recorded = [
            file("a.parquet", 10, "sha256:1"),
            file("b.parquet", 20, "sha256:2"),
        ];
        let seen = [
            file("a.parquet", 11, "sha256:9"),
            file("c.parquet", 5, "sha256:3"),
        ];
        let text = listing_differences(&recorded, &seen, 10);
        assert_eq!(
            text,
            "file:///d/symbol=A/date=2024-01-02/a.parquet: 11 bytes, sha256:9 there, 10 bytes, \
             sha256:1 in the manifest; file:///d/symbol=A/date=2024-01-02/b.parquet: missing \
             there; file:///d/symbol=A/date=2024-01-02/c.parquet: there, not in the manifest"
        );
        assert!(listing_differences(&recorded, &seen, 1).ends_with("; and 2 more"));
        assert_eq!(listing_differences(&recorded, &recorded, 10), "");
    }
}
