//! CSV inputs: columns found by header name, a row per line.

use std::collections::BTreeMap;
use std::path::Path;

use super::rows::{Rows, check_values, is_symbol_column, other_symbol, parse_ts};
use super::{IngestError, IngestSpec};

pub(super) fn read_csv(
    spec: &IngestSpec,
    path: &Path,
    out: &mut BTreeMap<String, Rows>,
) -> Result<u64, IngestError> {
    let file = path.display().to_string();
    let read_err = |reason: String| IngestError::Read {
        file: file.clone(),
        reason,
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(spec.delimiter)
        .from_path(path)
        .map_err(|e| read_err(e.to_string()))?;
    let headers = reader
        .headers()
        .map_err(|e| read_err(e.to_string()))?
        .clone();
    let index = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            read_err(format!(
                "no column `{name}` (columns: {})",
                headers.iter().collect::<Vec<_>>().join(", ")
            ))
        })
    };
    let ts = index(&spec.ts_column)?;
    let values: Vec<usize> = spec
        .value_columns
        .iter()
        .map(|c| index(c))
        .collect::<Result<_, _>>()?;
    let symbol = spec.symbol_column.as_deref().map(index).transpose()?;
    // With --symbol, a symbol column is checked, never silently merged into one symbol.
    let guard = match (&spec.symbol_column, &spec.symbol) {
        (None, Some(given)) => headers
            .iter()
            .position(is_symbol_column)
            .map(|c| (c, given.as_str())),
        _ => None,
    };
    let kind = spec.output.kind();
    let mut rows = 0;
    for (i, record) in reader.records().enumerate() {
        let line = format!("line {}", i + 2);
        let row_err = |reason: String| IngestError::Row {
            file: file.clone(),
            row: line.clone(),
            reason,
        };
        let record = record.map_err(|e| row_err(e.to_string()))?;
        let t = parse_ts(&record[ts], &spec.ts_format).map_err(row_err)?;
        let vals: Vec<f64> = values
            .iter()
            .zip(kind.columns())
            .map(|(&c, name)| {
                record[c]
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| format!("`{name}` = `{}` is not a number", &record[c]))
            })
            .collect::<Result<_, _>>()
            .map_err(row_err)?;
        check_values(kind, &vals).map_err(row_err)?;
        if let Some((c, given)) = guard
            && record[c].trim() != given
        {
            return Err(row_err(other_symbol(record[c].trim(), given)));
        }
        let sym = match symbol {
            Some(c) => record[c].trim().to_owned(),
            None => spec.symbol.clone().unwrap_or_default(),
        };
        out.entry(sym).or_default().push((t, line.clone(), vals));
        rows += 1;
    }
    Ok(rows)
}
