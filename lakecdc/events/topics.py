"""Topic and Connect schema names, per connector, as Debezium 3.x forms them.

==========  ===============================  ================================================
connector   data topic                       transaction data_collection
==========  ===============================  ================================================
postgresql  ``<prefix>.<schema>.<table>``     ``<schema>.<table>``       e.g. ``public.customers``
mysql       ``<prefix>.<db>.<table>``         ``<db>.<table>``
sqlserver   ``<prefix>.<db>.<schema>.<table>`` ``<db>.<schema>.<table>``  (Debezium 2+; the 1.4 seed
                                                                           has no ``<db>``: set
                                                                           ``sqlserver_topic_includes_db=False``)
oracle      ``<prefix>.<SCHEMA>.<TABLE>``     ``<DB>.<SCHEMA>.<TABLE>``
==========  ===============================  ================================================

Other topics: transactions ``<prefix>.transaction`` (``topic.transaction`` / the older
``transaction.topic`` override the suffix or name), heartbeats ``__debezium-heartbeat.<prefix>``
(``topic.heartbeat.prefix``), schema changes ``<prefix>``.

Schema names: ``<topic>.Key``, ``<topic>.Value``, ``<topic>.Envelope`` (the data topic name, already
sanitized, as Debezium's ``recordSchemaPrefix``; checked against Debezium 3.6.3's naming strategies
in tests/data/events/jsonconverter-golden.json). Kafka-invalid characters (not ``[A-Za-z0-9._-]``)
become ``_`` in topic names. With
``schema.name.adjustment.mode=avro`` every character that is not valid in an Avro name becomes
``_`` (seeds 2.6: first character ``[A-Za-z_]``, the rest ``[A-Za-z0-9_]``, dots kept as separators);
``avro_unicode`` writes ``_uXXXX`` instead. Debezium's default mode is ``none``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOPIC_INVALID = re.compile(r"[^A-Za-z0-9._\-]")
_AVRO_INVALID_REST = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True, slots=True)
class TableId:
    """A captured table: ``db`` (catalog), ``schema``, ``table``; unused parts are None."""

    db: str | None
    schema: str | None
    table: str

    def __str__(self) -> str:
        return ".".join(p for p in (self.db, self.schema, self.table) if p)


def sanitize_topic_name(name: str) -> str:
    """Replace characters Kafka does not allow in topic names with ``_`` (as Debezium does)."""
    return _TOPIC_INVALID.sub("_", name)


def avro_sanitize(name: str, unicode_escape: bool = False) -> str:
    """Make a dotted schema name Avro-valid, part by part.

    >>> avro_sanitize("my-server.inventory.order items.Value")
    'my_server.inventory.order_items.Value'
    >>> avro_sanitize("1db.t")
    '_db.t'
    """

    def fix_char(ch: str) -> str:
        return f"_u{ord(ch):04x}" if unicode_escape else "_"

    parts: list[str] = []
    for part in name.split("."):
        if not part:
            parts.append(part)
            continue
        first = part[0] if (part[0].isascii() and (part[0].isalpha() or part[0] == "_")) else fix_char(part[0])
        rest = _AVRO_INVALID_REST.sub(lambda m: fix_char(m.group(0)), part[1:])
        parts.append(first + rest)
    return ".".join(parts)


class TopicNamer:
    """Names every topic and schema one connector writes.

    >>> n = TopicNamer("dbz", "postgresql")
    >>> n.data_topic(TableId(None, "public", "customers")), n.transaction_topic, n.heartbeat_topic
    ('dbz.public.customers', 'dbz.transaction', '__debezium-heartbeat.dbz')
    """

    def __init__(
        self,
        prefix: str,
        connector: str,
        *,
        delimiter: str = ".",
        transaction_topic: str | None = None,
        transaction_suffix: str = "transaction",
        heartbeat_prefix: str = "__debezium-heartbeat",
        schema_name_adjustment: str = "none",
        sqlserver_topic_includes_db: bool = True,
    ) -> None:
        if not prefix:
            raise ValueError("topic.prefix must not be empty")
        if schema_name_adjustment not in ("none", "avro", "avro_unicode"):
            raise ValueError(
                f"schema.name.adjustment.mode must be none, avro or avro_unicode, not {schema_name_adjustment!r}"
            )
        self.prefix = prefix
        self.connector = "postgresql" if connector == "postgres" else connector
        self.delimiter = delimiter
        self._transaction_topic = transaction_topic
        self.transaction_suffix = transaction_suffix
        self.heartbeat_prefix = heartbeat_prefix
        self.schema_name_adjustment = schema_name_adjustment
        self.sqlserver_topic_includes_db = sqlserver_topic_includes_db

    # ---- topics --------------------------------------------------------------------------
    def _table_parts(self, table: TableId) -> list[str]:
        c = self.connector
        if c == "postgresql" or c == "oracle":
            return [p for p in (table.schema, table.table) if p]
        if c in ("mysql", "mariadb"):
            return [p for p in (table.db, table.table) if p]
        if c == "sqlserver":
            db = table.db if self.sqlserver_topic_includes_db else None
            return [p for p in (db, table.schema, table.table) if p]
        raise ValueError(f"no topic naming rule for connector {self.connector!r}")

    def data_topic(self, table: TableId) -> str:
        return sanitize_topic_name(self.delimiter.join([self.prefix, *self._table_parts(table)]))

    @property
    def transaction_topic(self) -> str:
        if self._transaction_topic:
            return self._transaction_topic
        return sanitize_topic_name(f"{self.prefix}{self.delimiter}{self.transaction_suffix}")

    @property
    def heartbeat_topic(self) -> str:
        return sanitize_topic_name(f"{self.heartbeat_prefix}{self.delimiter}{self.prefix}")

    @property
    def schema_change_topic(self) -> str:
        return sanitize_topic_name(self.prefix)

    # ---- schema names --------------------------------------------------------------------
    def adjust_schema_name(self, name: str) -> str:
        if self.schema_name_adjustment == "none":
            return name
        return avro_sanitize(name, unicode_escape=self.schema_name_adjustment == "avro_unicode")

    def _schema_base(self, table: TableId) -> str:
        # Debezium's recordSchemaPrefix is the data topic name: same delimiter, same sanitizing.
        return self.data_topic(table)

    def key_schema_name(self, table: TableId) -> str:
        return self.adjust_schema_name(self._schema_base(table) + ".Key")

    def value_schema_name(self, table: TableId) -> str:
        return self.adjust_schema_name(self._schema_base(table) + ".Value")

    def envelope_schema_name(self, table: TableId) -> str:
        return self.adjust_schema_name(self._schema_base(table) + ".Envelope")

    # ---- transaction metadata ------------------------------------------------------------
    def data_collection(self, table: TableId) -> str:
        """The name a transaction END event lists the table under (``public.customers``)."""
        c = self.connector
        if c == "postgresql":
            return f"{table.schema}.{table.table}"
        if c in ("mysql", "mariadb"):
            return f"{table.db}.{table.table}"
        return str(table)
