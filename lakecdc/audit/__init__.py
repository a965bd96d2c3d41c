"""Time-travel audits over lakecdc's bronze and silver tables, one API for Iceberg and Delta.

- ``table_versions(table)``: every commit with the source position, source time, batch id and Kafka
  progress it reflects (``versions``);
- ``read_as_of(table, version=|timestamp=|source_position=)`` (``as_of``);
- ``row_history(bronze, key)``: one key's changes in source order (``history``);
- ``diff_versions(silver, v1, v2)``: rows added, removed and changed by key (``diff``);
- ``plots``: rows/changes per version and lag over time as PNG.

Tables are named with ``LakeTable.iceberg(spark, "silver.customers")`` or
``LakeTable.delta(warehouse, "silver.customers")``.
"""

from lakecdc.audit.as_of import read_as_of, read_as_of_with_version
from lakecdc.audit.diff import VersionDiff, diff_versions
from lakecdc.audit.history import row_history
from lakecdc.audit.tables import AuditError, LakeTable, key_columns
from lakecdc.audit.versions import TableVersion, parse_position, table_versions, version_for_position

__all__ = [
    "AuditError", "LakeTable", "TableVersion", "VersionDiff", "diff_versions", "key_columns", "parse_position",
    "read_as_of", "read_as_of_with_version", "row_history", "table_versions", "version_for_position",
]
