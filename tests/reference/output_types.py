"""Reads a sweep's results.csv and results.parquet with pandas and with Polars and prints, as
JSON, each reader's column types for both files, plus the spec from the Parquet metadata; and,
when the sweep wrote trades.parquet, its column types, its rows, how many join a cell of
results.parquet, its closed trades and the cells' round trips.

    output_types.py OUT_DIR

The check (tests/cli.rs) is that every reader sees the same types in the CSV as in the
Parquet file. Polars reads the CSV with try_parse_dates=True (ISO dates → Date), pandas with
its defaults (dates stay objects, as pandas also reads Arrow Date32 into objects).
"""

import json
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow.parquet as pq

out = Path(sys.argv[1])
csv, parquet = out / "results.csv", out / "results.parquet"
pandas_csv = pd.read_csv(csv)
pandas_parquet = pd.read_parquet(parquet)
polars_csv = pl.read_csv(csv, try_parse_dates=True)
polars_parquet = pl.read_parquet(parquet)
metadata = pq.read_metadata(parquet).metadata or {}
spec = metadata.get(b"gridtest.spec")
trades = None
if (out / "trades.parquet").exists():
    polars_trades = pl.read_parquet(out / "trades.parquet")
    pandas_trades = pd.read_parquet(out / "trades.parquet")
    joined = polars_trades.join(
        polars_parquet.select(["param_set_id", "shard", "round_trips"]),
        on=["param_set_id", "shard"],
        how="inner",
    )
    trades = {
        "polars": {c: str(t) for c, t in polars_trades.schema.items()},
        "pandas": sorted(pandas_trades.columns),
        "pandas_columns": sorted(polars_trades.columns),
        "rows": polars_trades.height,
        "joined": joined.height,
        "closed": int((~polars_trades["open"]).sum()),
        "round_trips": int(polars_parquet["round_trips"].fill_null(0).sum()),
    }
print(
    json.dumps(
        {
            "pandas": {
                "csv": {c: str(t) for c, t in pandas_csv.dtypes.items()},
                "parquet": {c: str(t) for c, t in pandas_parquet.dtypes.items()},
            },
            "polars": {
                "csv": {c: str(t) for c, t in polars_csv.schema.items()},
                "parquet": {c: str(t) for c, t in polars_parquet.schema.items()},
            },
            "rows": len(pandas_csv),
            "trades": trades,
            "spec": json.loads(spec) if spec else None,
        }
    )
)
