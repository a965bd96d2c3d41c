"""Oracle DDL parsing for the schema history: lexer, table model, statements (CREATE/ALTER/DROP TABLE)."""
