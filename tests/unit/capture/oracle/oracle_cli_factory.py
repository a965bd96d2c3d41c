"""Connection factory for the CLI test's subprocess (named by LAKECDC_ORACLE_CONNECTION_FACTORY):
a replay of the recorded snapshot database of test_oracle_capture."""

from __future__ import annotations

from typing import Any

from oracle_recorded import RecordedOracle, customers, insert_sql, redo

_DB: RecordedOracle | None = None


def factory(config: Any) -> Any:
    global _DB
    if _DB is None:
        rows = [(1001, "Sally", "Thomas", "sally.thomas@acme.com"), (1002, "George", "Bailey", "gb@foobar.com")]
        xid = bytes.fromhex("0a00000001000000")
        _DB = RecordedOracle([customers(rows)], scns=[1000, 1030], redo_rows=[
            redo(1010, 1, xid, insert_sql("DEBEZIUM", "CUSTOMERS", {
                "ID": "2001", "FIRST_NAME": "Anne", "LAST_NAME": "O'Neil", "EMAIL": "anne@x"}),
                "DEBEZIUM", "CUSTOMERS"),
            redo(1020, 7, xid)])
    return _DB.connect(config)
