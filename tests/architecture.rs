//! The layers of gridtest point one way. Across crates Cargo enforces it (`gridtest-core` cannot
//! name the crate above it); inside each crate every `crate::…` path a module uses names a
//! module of a lower layer (or itself). The table is `docs/architecture.md`'s; a new module
//! must be placed in it, and an upward import fails here with the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Layers, lowest first. A module may use modules of lower layers only.
const LAYERS: &[&[&str]] = &[
    // Vocabulary with no dependencies inside the crate.
    &[
        "params",
        "metrics",
        "storage",
        "indicators",
        "progress",
        "research",
        "broker",
    ],
    // The strategy contract (what a researcher implements).
    &["strategy"],
    // Market data: datasets, layout, shards, loading.
    &["data"],
    // The backtest of one shard for many parameter sets.
    &["engine"],
    // Strategies by name (link-time registry).
    &["registry"],
    // The network between nodes: sockets, TLS, the authentication deadline.
    &["transport"],
    // Sweeps as data: description, units, ledger, results, ranking, output; ingest.
    &["sweep", "ingest"],
    // What a sweep leaves under its results root.
    &["persist", "status"],
    // The crate's error type (every lower layer's typed error converts into it).
    &["error"],
    // Re-executing a persisted sweep.
    &["replay"],
    // A persisted sweep's report drawn again from its files.
    &["reopen"],
    // The actors and their protocol.
    &["actors"],
    // Planning and executing a sweep on this node.
    &["execute"],
    // Nodes, transport, roles, the head and the workers; their probes and metrics over HTTP.
    &["cluster", "observe", "autoscale"],
    // Flags shared by the commands (clap) and their resolution.
    &["cli"],
    // The submission client.
    &["submit"],
    // The command line.
    &["run"],
    // The crate root and the prelude.
    &["lib", "prelude", "main"],
];

/// The crates' source folders, lowest layer first, each with the highest module it may hold:
/// `gridtest-core` the layers up to `registry`, `gridtest-sweep` those up to `persist` and
/// `status`, `gridtest-cluster` those up to `cluster`, the facade `gridtest` the rest.
const SOURCES: &[(&str, &str)] = &[
    ("../gridtest/core/src", "registry"),
    ("../gridtest/sweep/src", "status"),
    ("../gridtest/cluster/src", "cluster"),
    ("../gridtest/src", "main"),
];

/// Every Rust file of the crates, with the source folder it belongs to.
fn sources() -> Vec<(PathBuf, PathBuf)> {
    let mut all = Vec::new();
    for (dir, _) in SOURCES {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        all.extend(files.into_iter().map(|f| (src.clone(), f)));
    }
    all
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file of `src/` belongs to.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    if first == "bin" {
        return "main".to_owned();
    }
    first.trim_end_matches(".rs").to_owned()
}

/// `crate::x` paths on code lines (comments and doc comments are skipped).
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_use_group = false;
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((n + 1, name));
            } else if let Some(group) = after.strip_prefix('{') {
                // `use crate::{a, b::C}` on one line.
                for part in group.split(',') {
                    let name: String = part
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        found.push((n + 1, name));
                    }
                }
            }
            rest = after;
        }
        // `use crate::{a, b}` groups list modules on following lines too.
        if code.starts_with("use crate::{") || code.starts_with("pub use crate::{") {
            in_use_group = !code.contains("};");
        } else if in_use_group {
            for part in code.split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    found.push((n + 1, name));
                }
            }
            if code.contains("};") {
                in_use_group = false;
            }
        }
    }
    found
}

#[test]
fn the_crate_s_layers_point_one_way() {
    let mut unplaced = BTreeMap::new();
    let mut upward = Vec::new();
    for (src, file) in &sources() {
        let module = module_of(src, file);
        let Some(layer) = layer_of(&module) else {
            unplaced.insert(module, file.clone());
            continue;
        };
        // Each crate holds the layers up to its highest module (and its own root), none above.
        let (dir, highest) = SOURCES
            .iter()
            .find(|(dir, _)| src.ends_with(dir.trim_start_matches("../")))
            .unwrap();
        if module != "lib" && layer > layer_of(highest).unwrap() {
            upward.push(format!("`{module}` is in {dir} but above `{highest}`"));
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (line, used) in crate_paths(&text) {
            if used == module {
                continue;
            }
            match layer_of(&used) {
                // Items of the crate root (`crate::Error`, …) belong to the layer that defines
                // them; only module names are checked.
                None => {}
                Some(l) if l < layer => {}
                Some(_) => upward.push(format!(
                    "{}:{line}: `{module}` uses `crate::{used}` (same or higher layer)",
                    file.strip_prefix(src).unwrap().display()
                )),
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules missing from LAYERS (and docs/architecture.md): {unplaced:?}"
    );
    assert!(
        upward.is_empty(),
        "imports against the layers:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_check_sees_an_upward_import() {
    let paths = crate_paths(
        "use crate::cluster::Role;\n// crate::run in a comment\nuse crate::{\n    data,\n    sweep::Sweep,\n};\nlet x = crate::execute::plan;\nuse crate::{params, engine::X};",
    );
    let names: Vec<&str> = paths.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        ["cluster", "data", "sweep", "execute", "params", "engine"]
    );
    assert!(layer_of("cluster") > layer_of("actors"));
}

/// Longest file of the crates' sources, lines.
const MAX_FILE_LINES: usize = 500;
/// Longest function, lines from its `fn` to its closing brace.
const MAX_FN_LINES: usize = 80;

/// `(first line, lines)` of every function in `text`, found by rustfmt's layout: a line that
/// starts (after its indentation) with `fn` or a qualified `fn`, ending at the first line that
/// is that indentation followed by `}` (or at its own line for a one-line body or declaration).
fn functions(text: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let is_fn = ["", "pub ", "pub(crate) ", "pub(super) "]
            .iter()
            .any(|vis| {
                ["", "async ", "const ", "unsafe "]
                    .iter()
                    .any(|q| body.starts_with(&format!("{vis}{q}fn ")))
            });
        if !is_fn || body.ends_with(';') || body.ends_with('}') {
            continue;
        }
        let end = lines[i..]
            .iter()
            .position(|l| *l == format!("{indent}}}"))
            .map_or(1, |n| n + 1);
        let name = body
            .split_once("fn ")
            .map_or(body, |(_, rest)| rest)
            .split(['(', '<'])
            .next()
            .unwrap_or(body)
            .to_owned();
        found.push((i + 1, end, name));
    }
    found
}

#[test]
fn files_and_functions_stay_small() {
    let mut too_long = Vec::new();
    for (src, file) in &sources() {
        let text = std::fs::read_to_string(file).unwrap();
        let name = file.strip_prefix(src).unwrap().display().to_string();
        let n = text.lines().count();
        if n > MAX_FILE_LINES {
            too_long.push(format!("{name}: {n} lines (at most {MAX_FILE_LINES})"));
        }
        for (line, len, f) in functions(&text) {
            if len > MAX_FN_LINES {
                too_long.push(format!(
                    "{name}:{line}: `{f}` is {len} lines (at most {MAX_FN_LINES})"
                ));
            }
        }
    }
    assert!(too_long.is_empty(), "split these:\n{}", too_long.join("\n"));
}

#[test]
fn the_size_check_measures_functions() {
    let text = "fn a() {}\n\nimpl X {\n    pub(crate) async fn b(\n        x: u8,\n    ) -> u8 {\n        x\n    }\n}\n\nfn c();\n";
    let found = functions(text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0], (4, 5, "b".to_owned()));
}

#[test]
fn the_library_core_prints_nothing() {
    // Printing belongs to the binary-facing layers (`submit`, `run`, the binary); below them,
    // what a run has to say goes through tracing, typed status events or return values.
    let first_printing = layer_of("submit").unwrap();
    let mut printing = Vec::new();
    for (src, file) in &sources() {
        let module = module_of(src, file);
        if layer_of(&module).is_none_or(|l| l >= first_printing) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if ["println!(", "eprintln!(", "print!(", "eprint!(", "dbg!("]
                .iter()
                .any(|m| code.contains(m))
            {
                printing.push(format!(
                    "{}:{}: {code}",
                    file.strip_prefix(src).unwrap().display(),
                    n + 1
                ));
            }
        }
    }
    assert!(
        printing.is_empty(),
        "prints below the binary layers:\n{}",
        printing.join("\n")
    );
}
