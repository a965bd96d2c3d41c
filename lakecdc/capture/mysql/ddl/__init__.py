"""MySQL/MariaDB DDL parsing and the in-memory schema model.

- ``lexer``: tokens (backtick names, strings, executable comments, charset introducers);
- ``cursor``: the token cursor and ``DdlParseError``;
- ``datatypes``: type aliases, JDBC codes Debezium reports;
- ``model``: ``ColumnDef`` / ``TableDef`` / ``TableId`` (immutable);
- ``columns``: column definitions, CREATE TABLE bodies, ALTER TABLE specifications;
- ``parser``: statements (CREATE/ALTER/DROP/RENAME/TRUNCATE, databases, ignorable ones);
- ``tables``: the registry of table structures the parser edits.
"""

from lakecdc.capture.mysql.ddl.cursor import DdlParseError
from lakecdc.capture.mysql.ddl.model import ColumnDef, TableDef, TableId
from lakecdc.capture.mysql.ddl.parser import DdlParser, ParsedStatement, TableChange
from lakecdc.capture.mysql.ddl.tables import Tables

__all__ = ["ColumnDef", "DdlParseError", "DdlParser", "ParsedStatement", "TableChange", "TableDef", "TableId", "Tables"]
