"""PostgreSQL column -> the Kafka Connect schema and payload value Debezium 3.6 emits for it.

Usage (once per relation, never per row)::

    catalog = load_type_catalog(conn)                  # pg_type / pg_enum, read once
    columns = load_table_columns(conn, catalog, "public", "customers")
    modes = TypeModes.from_properties(props)          # decimal.handling.mode, time.precision.mode, ...
    schema = column_schema(columns[3], modes)         # ConnectSchema, or None when Debezium drops it
    convert = value_converter(columns[3], modes)      # text -> payload value
    convert("100.50")                                 # b"\\x27\\x42" (Decimal scale 2)

Field schema example (``balance numeric(12,2)``)::

    {"type": "bytes", "optional": true, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
     "parameters": {"scale": "2", "connect.decimal.precision": "12"}}

Text is what PostgreSQL prints with the settings in ``SESSION_OPTIONS`` (pgoutput's walsender and a
COPY snapshot session both need them; pgjdbc, and so Debezium, uses the same ones).
Converters return Connect values for :mod:`lakecdc.events.serde`: bytes stay ``bytes``, structs are
dicts, arrays are lists. ``UNCHANGED_TOAST`` (the decoder's marker for an unchanged TOASTed column)
gives Debezium's ``unavailable.value.placeholder`` in the column's type.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lakecdc.capture.postgres.decoder import UNCHANGED as UNCHANGED_TOAST
from lakecdc.capture.postgres.type_arrays import (
    UNSUPPORTED_ARRAY_ELEMENTS,
    array_spec,
    bit_array_spec,
    unknown_array_spec,
)
from lakecdc.capture.postgres.type_defaults import default_value
from lakecdc.capture.postgres.type_mapping import TypeSpec, scalar_spec, unknown_spec
from lakecdc.capture.postgres.type_propagation import source_type_parameters
from lakecdc.errors import ConfigError
from lakecdc.events.schema import ConnectSchema

__all__ = [
    "SESSION_OPTIONS", "UNCHANGED_TOAST", "TypeModes", "PgType", "TypeCatalog", "PgColumn", "load_type_catalog",
    "load_table_columns", "column_schema", "value_converter",
]

#: libpq ``options`` for the replication and snapshot connections: the text forms the converters
#: parse. TimeZone=UTC matches Debezium running in a UTC JVM (tstzrange text is passed through as is)
#: and takes the fast path for timestamptz; lc_monetary is left to the server, as Debezium does.
SESSION_OPTIONS = "-c DateStyle=ISO -c IntervalStyle=postgres -c TimeZone=UTC -c extra_float_digits=3"

_CHOICES = {
    "decimal.handling.mode": ("precise", "double", "string"),
    "time.precision.mode": ("adaptive", "adaptive_time_microseconds", "connect", "isostring", "microseconds",
                            "nanoseconds"),
    "binary.handling.mode": ("bytes", "base64", "base64-url-safe", "hex"),
    "interval.handling.mode": ("numeric", "string"),
    "hstore.handling.mode": ("json", "map"),
}


@dataclass(frozen=True)
class TypeModes:
    """The connector properties that change how values are represented (Debezium's names in
    :meth:`from_properties`)."""

    decimal_handling: str = "precise"
    time_precision: str = "adaptive"
    binary_handling: str = "bytes"
    interval_handling: str = "numeric"
    hstore_handling: str = "json"
    include_unknown_datatypes: bool = False
    money_fraction_digits: int = 2
    unavailable_value_placeholder: bytes = b"__debezium_unavailable_value"

    @classmethod
    def from_config(cls, config: Any) -> TypeModes:
        """The modes of a validated connector configuration (``PostgresConnectorConfig``), as the
        SQL Server and Oracle connectors build theirs."""
        return cls(
            decimal_handling=config.decimal_handling_mode,
            time_precision=config.time_precision_mode,
            binary_handling=config.binary_handling_mode,
            interval_handling=config.interval_handling_mode,
            hstore_handling=config.hstore_handling_mode,
            include_unknown_datatypes=config.include_unknown_datatypes,
            money_fraction_digits=config.money_fraction_digits,
            unavailable_value_placeholder=_placeholder_bytes(config.unavailable_value_placeholder),
        )

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> TypeModes:
        """Read Debezium property names; an invalid choice raises ConfigError naming the property."""
        chosen: dict[str, str] = {}
        for prop, allowed in _CHOICES.items():
            value = str(props.get(prop, allowed[0])).strip().lower()
            if value not in allowed:
                raise ConfigError(f"{prop}={value!r} is not one of {', '.join(allowed)}", prop)
            chosen[prop] = value
        unknown = str(props.get("include.unknown.datatypes", "false")).strip().lower()
        if unknown not in ("true", "false"):
            raise ConfigError(f"include.unknown.datatypes={unknown!r} must be true or false",
                              "include.unknown.datatypes")
        digits_text = str(props.get("money.fraction.digits", "2")).strip()
        if not digits_text.isdigit():
            raise ConfigError(f"money.fraction.digits={digits_text!r} must be a non-negative integer",
                              "money.fraction.digits")
        placeholder = props.get("unavailable.value.placeholder", "__debezium_unavailable_value")
        if isinstance(placeholder, str):
            placeholder = _placeholder_bytes(placeholder)
        return cls(
            decimal_handling=chosen["decimal.handling.mode"],
            time_precision=chosen["time.precision.mode"],
            binary_handling=chosen["binary.handling.mode"],
            interval_handling=chosen["interval.handling.mode"],
            hstore_handling=chosen["hstore.handling.mode"],
            include_unknown_datatypes=unknown == "true",
            money_fraction_digits=int(digits_text),
            unavailable_value_placeholder=bytes(placeholder),
        )


def _placeholder_bytes(text: str) -> bytes:
    """Debezium reads ``hex:0a0b`` as raw bytes, anything else as the UTF-8 string."""
    if text.startswith("hex:"):
        return bytes.fromhex(text[4:])
    return text.encode()


# ---- catalog -------------------------------------------------------------------------------

@dataclass(frozen=True)
class PgType:
    """One pg_type row. kind: b base, e enum, d domain, r range, m multirange, c composite, p pseudo."""

    oid: int
    name: str
    schema: str
    kind: str
    element_oid: int = 0
    base_oid: int = 0
    base_typmod: int = -1
    enum_labels: tuple[str, ...] = ()
    category: str = ""
    delimiter: str = ","  # typdelim: separates elements in this type's array literals (box: ';')

    @property
    def is_array(self) -> bool:
        return self.category == "A" and self.element_oid != 0


_TYPES_SQL = """
SELECT t.oid, t.typname, n.nspname, t.typtype, t.typcategory, t.typelem, t.typbasetype, t.typtypmod,
       t.typdelim
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
"""
_ENUMS_SQL = "SELECT enumtypid, enumlabel FROM pg_catalog.pg_enum ORDER BY enumtypid, enumsortorder"


class TypeCatalog:
    """pg_type rows by oid; :meth:`refresh` re-reads them (a Relation named an unknown oid)."""

    def __init__(self, types: Mapping[int, PgType]) -> None:
        self._types = dict(types)

    def get(self, oid: int) -> PgType | None:
        return self._types.get(oid)

    def __getitem__(self, oid: int) -> PgType:
        found = self._types.get(oid)
        if found is None:
            raise KeyError(f"type oid {oid} is not in pg_type (dropped, or the catalog needs a refresh)")
        return found

    def __len__(self) -> int:
        return len(self._types)

    def refresh(self, conn: Any) -> None:
        self._types = _read_types(conn)


def _read_types(conn: Any) -> dict[int, PgType]:
    labels: dict[int, list[str]] = {}
    with conn.cursor() as cur:
        cur.execute(_ENUMS_SQL)
        for type_oid, label in cur.fetchall():
            labels.setdefault(int(type_oid), []).append(label)
        cur.execute(_TYPES_SQL)
        rows = cur.fetchall()
    return {
        int(oid): PgType(int(oid), name, schema, kind, int(elem), int(base), int(base_mod),
                         tuple(labels.get(int(oid), ())), category, delimiter)
        for oid, name, schema, kind, category, elem, base, base_mod, delimiter in rows
    }


def load_type_catalog(conn: Any) -> TypeCatalog:
    """Read pg_type and pg_enum once (psycopg 3 connection)."""
    return TypeCatalog(_read_types(conn))


# ---- columns -------------------------------------------------------------------------------

@dataclass(frozen=True)
class PgColumn:
    """A column as the type mapping needs it. ``root``/``root_typmod`` are the type after
    resolving domains (Debezium maps a domain column as its base type)."""

    name: str
    type_oid: int
    typmod: int = -1
    not_null: bool = False
    default_expr: str | None = None
    pg_type: PgType | None = field(default=None, compare=False)
    root: PgType | None = field(default=None, compare=False)
    root_typmod: int = -1
    element: PgType | None = field(default=None, compare=False)

    @classmethod
    def from_relation(cls, catalog: TypeCatalog, name: str, type_oid: int, typmod: int, *,
                      not_null: bool = False, default_expr: str | None = None) -> PgColumn:
        pg_type = catalog.get(type_oid)
        root, root_typmod = pg_type, typmod
        while root is not None and root.kind == "d":
            if root_typmod < 0:
                root_typmod = root.base_typmod
            root = catalog.get(root.base_oid)
        element = catalog.get(root.element_oid) if root is not None and root.is_array else None
        return cls(name, type_oid, typmod, not_null, default_expr, pg_type, root, root_typmod, element)

    @property
    def optional(self) -> bool:
        return not self.not_null


_COLUMNS_SQL = """
SELECT a.attname, a.atttypid, a.atttypmod, a.attnotnull OR (t.typtype = 'd' AND t.typnotnull),
       pg_catalog.pg_get_expr(d.adbin, d.adrelid)
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""


def load_table_columns(conn: Any, catalog: TypeCatalog, schema: str, table: str) -> list[PgColumn]:
    """Columns of ``schema.table`` in attnum order, with NOT NULL (of the column, or of its domain,
    as pgjdbc reports it to Debezium) and default expressions.

    Raises LookupError naming the table when it does not exist.
    """
    with conn.cursor() as cur:
        cur.execute(_COLUMNS_SQL, (schema, table))
        rows = cur.fetchall()
    if not rows:
        raise LookupError(f"table {schema}.{table} does not exist or has no columns")
    if any(catalog.get(int(r[1])) is None for r in rows):
        catalog.refresh(conn)
    return [
        PgColumn.from_relation(catalog, name, int(oid), int(typmod), not_null=bool(nn), default_expr=expr)
        for name, oid, typmod, nn, expr in rows
    ]


# ---- mapping -------------------------------------------------------------------------------

def _spec(col: PgColumn, modes: TypeModes) -> TypeSpec | None:
    root = col.root
    if root is None:
        return unknown_spec(modes) if modes.include_unknown_datatypes else None
    if col.element is not None:
        element = col.element
        if element.name in UNSUPPORTED_ARRAY_ELEMENTS:
            return None
        if element.name == "bit":
            return bit_array_spec(col.root_typmod)
        labels = element.enum_labels if element.kind == "e" else None
        element_spec = None if element.kind == "d" else scalar_spec(element.name, col.root_typmod, modes, labels)
        if element_spec is not None:
            return array_spec(element.name, element_spec, modes, element.delimiter)
        if modes.include_unknown_datatypes:
            return unknown_array_spec(modes, element.name, element.delimiter)
        return None
    labels = root.enum_labels if root.kind == "e" else None
    spec = scalar_spec(root.name, col.root_typmod, modes, labels)
    if spec is None and modes.include_unknown_datatypes:
        return unknown_spec(modes, root.name)
    return spec


def column_schema(col: PgColumn, modes: TypeModes, *, propagate_source_type: bool = False,
                  snapshot: bool = False) -> ConnectSchema | None:
    """The field schema Debezium emits for ``col`` (optional, default), or None if it drops it.

    ``propagate_source_type``: the column matches ``column.propagate.source.type`` or its type
    ``datatype.propagate.source.type``; ``snapshot`` then selects the snapshot-time variant of
    those parameters (see :mod:`lakecdc.capture.postgres.type_propagation`).
    """
    spec = _spec(col, modes)
    if spec is None:
        return None
    schema = spec.schema
    if col.not_null:
        schema = schema.as_required()
    changes: dict[str, Any] = {}
    default = default_value(col, spec, schema) if col.default_expr is not None else None
    if default is not None:
        changes["default"] = default
    if propagate_source_type:
        changes["parameters"] = (schema.parameters or ()) + source_type_parameters(col, snapshot=snapshot)
    return replace(schema, **changes) if changes else schema


def value_converter(col: PgColumn, modes: TypeModes, *, snapshot: bool = False) -> Callable[[Any], Any]:
    """text (or None, or UNCHANGED_TOAST) -> payload value, for one column.

    ``snapshot=True`` gives the values Debezium emits for snapshot rows, which it reads over JDBC:
    they differ from streamed ones for ``name`` (null when streamed) and for BC/infinite dates.
    Raises LookupError naming the column when Debezium has no mapping for its type.
    """
    spec = _spec(col, modes)
    if spec is None:
        type_name = col.pg_type.name if col.pg_type else f"oid {col.type_oid}"
        raise LookupError(f"column {col.name!r} of type {type_name} has no Debezium mapping "
                          "(include.unknown.datatypes=false); column_schema() returns None for it")
    convert = spec.snapshot if snapshot else spec.stream
    toast = spec.toast
    unchanged = UNCHANGED_TOAST

    def converter(text: Any) -> Any:
        if text is None:
            return None
        if text is unchanged:
            return toast
        return convert(text)

    return converter
