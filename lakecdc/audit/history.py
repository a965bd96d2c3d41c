"""One key's full change history, from the bronze change log, in source order.

Every change of the key (inserts, updates, the delete that removed it) plus the truncates that
happened after its first change (a truncate removes every row, so it is part of each row's story).
The result is a pandas DataFrame, one row per event::

    {"op": "u", "position": [24023128, 24023200, 0, 0], "source_ts_ms": 1700000000123,
     "tx_id": "571:24023128", "topic": "shop.public.customers", "partition": 0, "offset": 42,
     "id": 1001, "email": "sally@example.com"}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakecdc.audit.tables import AuditError, LakeTable, row_columns, to_pandas

if TYPE_CHECKING:
    import pandas as pd

HISTORY_META = {"_op": "op", "_seq": "position", "_source_ts_ms": "source_ts_ms", "_tx_id": "tx_id",
                "_topic": "topic", "_kafka_partition": "partition", "_offset": "offset", "_ingest_ts": "ingest_ts"}


def _key_dict(key: Any, key_columns: tuple[str, ...] | None) -> dict[str, Any]:
    if isinstance(key, dict):
        return dict(key)
    if not key_columns or len(key_columns) != 1:
        raise AuditError(f"key {key!r}: give the key as a dict ({{'id': 1}}) or name the single key column")
    return {key_columns[0]: key}


def _bronze_events(bronze: LakeTable, key: dict[str, Any]) -> Any:
    """Arrow rows of bronze whose key columns equal ``key``, plus every truncate."""
    missing = [k for k in key if k not in bronze.column_names()]
    if missing:
        raise AuditError(f"{bronze} has no column(s) {missing} to look the key up by")
    if bronze.format == "iceberg":
        from pyspark.sql import functions as F

        from lakecdc.audit.tables import spark_to_arrow

        wanted = F.lit(True)
        for column, value in key.items():
            wanted = wanted & (F.col(column).isNull() if value is None else (F.col(column) == F.lit(value)))
        return spark_to_arrow(bronze.spark_df().filter(wanted | (F.col("_op") == "t")))
    import pyarrow.compute as pc

    match = None
    for column, value in key.items():
        cond = pc.field(column).is_null() if value is None else (pc.field(column) == value)
        match = cond if match is None else (match & cond)
    return bronze.delta_table().to_pyarrow_dataset().to_table(filter=match | (pc.field("_op") == "t"))


def row_history(bronze: LakeTable, key: Any, key_columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every change of one key, oldest first by source position.

    ``key`` is a dict of key column -> value (``{"id": 1001}``), or a scalar with ``key_columns``
    naming the one key column. Example::

        row_history(LakeTable.iceberg(spark, "bronze.customers"), {"id": 1001})
    """
    wanted = _key_dict(key, key_columns)
    df = to_pandas(_bronze_events(bronze, wanted))
    if df.empty:
        return _shape(df)
    df["__order"] = df["_seq"].map(lambda s: tuple(int(v) for v in s))
    df = df.sort_values(["__order", "_offset"], kind="stable")
    own = df["_op"] != "t"
    if not own.any():
        return _shape(df.iloc[0:0])
    first = df.loc[own, "__order"].iloc[0]
    # truncates matter to this key once it existed
    df = df[own | (df["__order"] > first)]
    return _shape(df.drop(columns="__order").reset_index(drop=True))


def _shape(df: pd.DataFrame) -> pd.DataFrame:
    """Metadata first under readable names, then the row columns."""
    meta = [c for c in HISTORY_META if c in df.columns]
    rows = [c for c in row_columns(list(df.columns)) if c != "__order"]
    out = df[meta + rows].rename(columns=HISTORY_META)
    if "position" in out.columns:
        out["position"] = out["position"].map(lambda s: [int(v) for v in s] if s is not None else None)
    return out.reset_index(drop=True)
