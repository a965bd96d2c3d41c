"""Schema evolution by policy: what to change in a table before a batch is written into it.

Policy (DESIGN.md section 2.6):
- a column the batch has and the table lacks is added (before the MERGE: Spark 3.5 silently drops
  source columns the target does not have);
- a safe widening is applied: byte->short->int->bigint, float->double, decimal precision up at the
  same scale (the set Iceberg allows, which delta-rs can also express by rewriting);
- a batch type narrower than the stored one (int arriving for a bigint column) is cast on write;
- a column the table has and the batch lacks is kept, nullable;
- anything else raises ``SchemaEvolutionError`` naming the table, column, stored and new type, and
  stops only that table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.types import (
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StructType,
)

from lakecdc.errors import SchemaEvolutionError
from lakecdc.lake.batch import ColumnSpec

_INTEGRAL_RANK: dict[type[DataType], int] = {ByteType: 1, ShortType: 2, IntegerType: 3, LongType: 4}


@dataclass(frozen=True)
class SchemaChange:
    """The changes a table needs before a batch fits it."""

    add: tuple[ColumnSpec, ...] = ()
    widen: tuple[tuple[str, DataType, DataType], ...] = ()  # (column, stored type, new type)
    make_nullable: tuple[str, ...] = ()
    cast_on_write: tuple[str, ...] = field(default=())  # batch narrower than stored: cast, no change

    @property
    def empty(self) -> bool:
        return not (self.add or self.widen or self.make_nullable)

    def describe(self) -> tuple[str, ...]:
        """In words, for logs and ``ApplyResult.schema_changes``."""
        return (tuple(f"added column {c.name} {c.data_type.simpleString()}" for c in self.add)
                + tuple(f"widened column {n} from {a.simpleString()} to {b.simpleString()}" for n, a, b in self.widen)
                + tuple(f"column {n} no longer sent by the source: kept, nullable" for n in self.make_nullable))


def incompatible_change(table: str, column: str, old_type: str, new_type: str) -> SchemaEvolutionError:
    """The error that stops one table; carries ``table``, ``column``, ``old_type``, ``new_type``."""
    error = SchemaEvolutionError(
        f"table {table}: column {column} changed type from {old_type} to {new_type}, which cannot be "
        f"applied without losing data; this table stops, the others go on")
    error.table, error.column, error.old_type, error.new_type = table, column, old_type, new_type  # type: ignore[attr-defined]
    return error


def widens_to(stored: DataType, new: DataType) -> bool:
    """True when values of ``stored`` type fit ``new`` type without loss (and the change is allowed)."""
    if stored == new:
        return True
    stored_rank, new_rank = _INTEGRAL_RANK.get(type(stored)), _INTEGRAL_RANK.get(type(new))
    if stored_rank and new_rank:
        return new_rank >= stored_rank
    if isinstance(stored, FloatType) and isinstance(new, DoubleType):
        return True
    if isinstance(stored, DecimalType) and isinstance(new, DecimalType):
        return new.scale == stored.scale and new.precision >= stored.precision
    return False


def _same_shape(stored: DataType, new: DataType) -> bool:
    """Nested types must match exactly apart from nullability (nested evolution is not supported)."""
    return stored.simpleString() == new.simpleString()


def plan_schema_change(table: str, stored: StructType, columns: list[ColumnSpec]) -> SchemaChange:
    """Compare a table's row columns (metadata columns excluded by the caller) with a batch."""
    stored_by_name = {f.name.lower(): f for f in stored.fields}
    add: list[ColumnSpec] = []
    widen: list[tuple[str, DataType, DataType]] = []
    cast: list[str] = []
    for column in columns:
        existing = stored_by_name.get(column.name.lower())
        if existing is None:
            add.append(column)
        elif _same_shape(existing.dataType, column.data_type):
            continue
        elif widens_to(existing.dataType, column.data_type):
            widen.append((existing.name, existing.dataType, column.data_type))
        elif widens_to(column.data_type, existing.dataType):
            cast.append(existing.name)
        else:
            raise incompatible_change(table, column.name, existing.dataType.simpleString(),
                                      column.data_type.simpleString())
    sent = {c.name.lower() for c in columns}
    nullable = tuple(f.name for f in stored.fields if f.name.lower() not in sent and not f.nullable)
    return SchemaChange(add=tuple(add), widen=tuple(widen), make_nullable=nullable, cast_on_write=tuple(cast))
