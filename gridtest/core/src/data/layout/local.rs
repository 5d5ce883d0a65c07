//! Local directories read as the store cannot: the store skips a symbolic link whose target
//! does not exist without a word, and a sweep must not lose a day or a symbol so.

use std::path::PathBuf;

/// A symbolic link whose target does not exist.
pub(super) struct DanglingLink {
    /// Its URL.
    pub(super) url: String,
    /// Its file name.
    pub(super) name: String,
    /// What it points to.
    pub(super) target: PathBuf,
}

/// The dangling links in `dir` and, `depth` levels down, in its (not hidden) directories,
/// sorted by path.
pub(super) fn dangling_links(dir: &std::path::Path, depth: usize) -> Vec<DanglingLink> {
    let mut found = Vec::new();
    walk(dir, depth, &mut found);
    found.sort_by(|a, b| a.url.cmp(&b.url));
    found
}

fn walk(dir: &std::path::Path, depth: usize, found: &mut Vec<DanglingLink>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return; // unreadable: the store's own listing reports it
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if kind.is_symlink() && std::fs::metadata(&path).is_err() {
            found.push(DanglingLink {
                url: url::Url::from_file_path(&path)
                    .map_or_else(|()| path.display().to_string(), |u| u.to_string()),
                target: std::fs::read_link(&path).unwrap_or_default(),
                name,
            });
        } else if depth > 0 && !super::is_hidden(&name) && path.is_dir() {
            walk(&path, depth - 1, found);
        }
    }
}
