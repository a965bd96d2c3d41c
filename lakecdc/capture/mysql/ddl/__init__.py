"""MySQL/MariaDB DDL parsing and the in-memory schema model.

- ``lexer``: tokens (backtick names, strings, executable comments, charset introducers);
- ``cursor``: the token cursor (and its small grammar vocabulary) and ``DdlParseError``;
- ``datatypes``: type aliases, JDBC codes Debezium reports;
- ``model``: ``ColumnDef`` / ``TableDef`` / ``TableId`` (immutable);
- ``options``: CHARACTER SET / COLLATE / COMMENT clauses of databases, tables and columns;
- ``data_type``: a column's data type (aliases, length/scale, ENUM/SET values, UNSIGNED, ...);
- ``columns``: column definitions (attributes, DEFAULT values);
- ``column_list``: edits of a column list and its keys (placement, renames, charsets, PK NOT NULL);
- ``create_table``: CREATE TABLE bodies and key definitions;
- ``alter_table``: ALTER TABLE specifications;
- ``parser``: statements (CREATE/ALTER/DROP/RENAME/TRUNCATE, databases, ignorable ones);
- ``tables``: the registry of table structures the parser edits.
"""

from lakecdc.capture.mysql.ddl.cursor import DdlParseError
from lakecdc.capture.mysql.ddl.model import ColumnDef, TableDef, TableId
from lakecdc.capture.mysql.ddl.parser import DdlParser, ParsedStatement, TableChange
from lakecdc.capture.mysql.ddl.tables import Tables

__all__ = ["ColumnDef", "DdlParseError", "DdlParser", "ParsedStatement", "TableChange", "TableDef", "TableId", "Tables"]
