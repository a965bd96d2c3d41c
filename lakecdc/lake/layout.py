"""Every column lakecdc adds to a row, with its Spark SQL type, and the names of the tables beside silver.

The one place these names are defined; everything else imports them. Metadata of every
``ChangeBatch.df`` row (``lakecdc.lake.batch``), in this order::

    _op               string          "r" | "c" | "u" | "d" | "t"
    _seq              array<bigint>   4 numbers from ``Position.seq()``, compared lexicographically
    _source_ts_ms     bigint          source.ts_ms (commit time at the source)
    _tx_id            string          transaction id or null ("571:24023128")
    _tx_total_order   bigint          transaction.total_order or null
    _topic            string          Kafka topic
    _partition        int             Kafka partition
    _offset           bigint          Kafka offset
    _ingest_ts        timestamp       when the reader took the record
    _unavailable      array<string>   columns holding a placeholder (unchanged TOAST, LOB,
                                      minimal row image): their stored value must be kept
    _key_json         string          the raw Kafka key as JSON ('{"id":1}'), null for truncates
    _old_key_json     string          the create of a primary-key change: the old key, from header
                                      ``__debezium.oldkey``, in ``_key_json``'s form; else null

Bronze keeps them (``_partition`` renamed) plus its identity (``lakecdc.lake.bronze``); silver keeps
``SILVER_META``, soft deletes add ``SOFT_DELETE_META``; the delete ledger ``<silver>__deletes`` holds
the key columns and ``LEDGER_META``; an SCD2 history ``<silver>__history`` adds ``HISTORY_META``.
"""

from __future__ import annotations

Columns = tuple[tuple[str, str], ...]

#: Metadata columns every ``ChangeBatch.df`` carries, in this order, with their Spark SQL types.
METADATA_COLUMNS: Columns = (
    ("_op", "string"),
    ("_seq", "array<bigint>"),
    ("_source_ts_ms", "bigint"),
    ("_tx_id", "string"),
    ("_tx_total_order", "bigint"),
    ("_topic", "string"),
    ("_partition", "int"),
    ("_offset", "bigint"),
    ("_ingest_ts", "timestamp"),
    ("_unavailable", "array<string>"),
    ("_key_json", "string"),
    ("_old_key_json", "string"),
)
METADATA_NAMES: frozenset[str] = frozenset(name for name, _ in METADATA_COLUMNS)
_TYPES = dict(METADATA_COLUMNS)

#: Length of ``_seq``: every connector's position maps to 4 numbers (unused trailing ones are 0).
SEQ_LENGTH = 4

#: Bronze stores the metadata under the same names except ``_partition`` -> ``_kafka_partition``
#: (Iceberg reserves ``_partition`` for its partition metadata column).
BRONZE_RENAMES = {"_partition": "_kafka_partition"}
ROW_HASH = "_row_hash"
OCCURRENCE = "_occurrence"
#: bronze's identity columns after the metadata (``lakecdc.lake.bronze``)
BRONZE_IDENTITY_COLUMNS: Columns = ((ROW_HASH, "bigint"), (OCCURRENCE, "bigint"))
#: Delta bronze tables are partitioned by the ingest date (a generated column)
DELTA_PARTITION_COLUMN = "_ingest_date"

#: What silver keeps of the change that wrote a row.
SILVER_META: Columns = tuple((name, _TYPES[name]) for name in ("_seq", "_op", "_source_ts_ms", "_tx_id"))
SILVER_META_COLUMNS: tuple[str, ...] = tuple(name for name, _ in SILVER_META)
#: ``delete.mode: soft``: deleted rows stay in silver, marked.
SOFT_DELETE_META: Columns = (("_is_deleted", "boolean"), ("_deleted_at", "timestamp"))
SOFT_DELETE_COLUMNS: tuple[str, ...] = tuple(name for name, _ in SOFT_DELETE_META)

#: The delete ledger beside silver: key columns, then when the key was removed.
LEDGER_SUFFIX = "__deletes"
LEDGER_META: Columns = tuple((name, _TYPES[name]) for name in ("_seq", "_op", "_source_ts_ms"))

#: The SCD2 history beside silver (``history: scd2``): what a version row holds besides the source row.
HISTORY_SUFFIX = "__history"
VALID_FROM_SEQ = "_valid_from_seq"
VALID_TO_SEQ = "_valid_to_seq"
VALID_FROM_TS = "_valid_from_ts"
VALID_TO_TS = "_valid_to_ts"
LAST_SEQ = "_last_seq"  # the newest event folded into the version (changes in untracked columns move it)
IS_CURRENT = "_is_current"
HISTORY_META: Columns = (
    (VALID_FROM_SEQ, "array<bigint>"), (VALID_TO_SEQ, "array<bigint>"),
    (VALID_FROM_TS, "timestamp"), (VALID_TO_TS, "timestamp"),
    (LAST_SEQ, "array<bigint>"), ("_op", "string"), ("_tx_id", "string"), (IS_CURRENT, "boolean"),
)
HISTORY_META_COLUMNS: tuple[str, ...] = tuple(name for name, _ in HISTORY_META)

#: Columns lakecdc adds to bronze, silver and ledger rows (never part of a source row).
META_COLUMNS: frozenset[str] = frozenset({
    *METADATA_NAMES, *BRONZE_RENAMES.values(), *(name for name, _ in BRONZE_IDENTITY_COLUMNS),
    DELTA_PARTITION_COLUMN, *SOFT_DELETE_COLUMNS,
})
