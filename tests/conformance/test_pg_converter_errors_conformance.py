"""A record the JSON converter cannot encode, through real Debezium 3.6.3 and through lakecdc.

Kafka Connect's ``MaskField`` masks a decimal with ``BigDecimal.ZERO``, whose scale is 0: ``Struct.put``
checks only the value's class, so the transform succeeds, and the ``JsonConverter`` then refuses the
record (``Decimal.fromLogical``: "Decimal value has mismatching scale for given Decimal schema") in the
VALUE_CONVERTER stage. A masked NULL stays NULL and converts. So with ``numeric(10,2)`` prices:

- Debezium (the embedded engine has no ``errors.tolerance``: a converter failure fails it, as a Connect
  task with the default ``errors.tolerance=none``) stops at the first priced row; lakecdc with the
  default stops too, naming the converter stage, and neither sends that record or anything after it;
- lakecdc with ``errors.tolerance=all`` skips exactly the priced rows, as a Connect worker does, and
  sends every other record as Debezium sends it without the mask (``ExtractNewRecordState`` alone):
  the embedded engine cannot run ``errors.tolerance=all``, so that run is the reference.

PostgreSQL 18 only: the converter stage does not depend on the server (the other conformance tests
cover the events on 15 and 18).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from harness import assert_conformant, drop_slot, load_capture, run_debezium
from test_pg_conformance import fresh_database
from test_pg_transforms_conformance import BASE, RULES, run_lakecdc

from lakecdc.errors import ConformanceError
from lakecdc.transforms.errors import StageFailure

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

SETUP = """
DROP TABLE IF EXISTS prices CASCADE;
CREATE TABLE prices (id int PRIMARY KEY, price numeric(10,2), name text);
INSERT INTO prices VALUES (1, NULL, 'a');
"""

WORKLOAD = """
INSERT INTO prices VALUES (2, NULL, 'b');
UPDATE prices SET name = 'bb' WHERE id = 2;
INSERT INTO prices VALUES (3, 9.99, 'c');
INSERT INTO prices VALUES (4, NULL, 'd');
UPDATE prices SET price = 1.50 WHERE id = 4;
INSERT INTO prices VALUES (5, NULL, 'e');
"""

UNWRAP = {
    "table.include.list": "public.prices",
    "transforms": "unwrap",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
}
MASKED = {
    **UNWRAP,
    "transforms": "unwrap,mask",
    "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value",
    "transforms.mask.fields": "price",
}


def priced(record: dict[str, Any]) -> bool:
    return record["value"]["payload"]["price"] is not None


def debezium(pg: Any, work: Path, chain: dict[str, str], minimum: int) -> list[dict[str, Any]]:
    dsn = fresh_database(pg, "smtdb")
    props = {**BASE, **pg.connection_properties("smtdb"), **chain}
    try:
        return run_debezium(props, setup_sql=SETUP, workload_sql=WORKLOAD, workload_dsn=dsn, work_dir=work,
                            minimum_records=minimum, timeout_s=240)
    finally:
        drop_slot(dsn, props["slot.name"], props["publication.name"])


def test_a_record_the_converter_refuses_stops_both_or_is_skipped_with_tolerance_all(
        pg: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    reference = debezium(pg, tmp_path / "debezium", UNWRAP, minimum=7)
    assert [r["value"]["payload"]["id"] for r in reference] == [1, 2, 2, 3, 4, 4, 5]
    assert [priced(r) for r in reference].count(True) == 2

    # errors.tolerance=none (Debezium's only behaviour): the run stops at the converter
    with pytest.raises(ConformanceError, match="mismatching scale for given Decimal schema") as stopped:
        debezium(pg, tmp_path / "debezium-masked", MASKED, minimum=7)
    connect_words = ("Decimal value has mismatching scale for given Decimal schema. Schema has scale 2, "
                     "value has scale 0")
    assert f"DataException: {connect_words}." in str(stopped.value)
    first = next(i for i, r in enumerate(reference) if priced(r))
    sent = load_capture(tmp_path / "debezium-masked" / "debezium.jsonl")
    assert [r["value"]["payload"]["id"] for r in sent] == [r["value"]["payload"]["id"] for r in reference[:len(sent)]]
    assert len(sent) <= first

    with pytest.raises(StageFailure, match=r"value converter \(org\.apache\.kafka\.connect\.json\.JsonConverter\) "
                                           r"failed on a record of topic 'dbz\.public\.prices'") as ours_stopped:
        run_lakecdc(pg, tmp_path / "lakecdc-none", {**BASE, **pg.connection_properties("smtdb"), **MASKED},
                    setup=SETUP, workload=WORKLOAD)
    assert connect_words in str(ours_stopped.value)
    ours = load_capture(tmp_path / "lakecdc-none" / "lakecdc.jsonl")
    assert_conformant(reference[:len(ours)], ours, RULES)
    assert len(ours) <= first

    # errors.tolerance=all (a Connect worker's behaviour): exactly the records the converter refuses are gone
    with caplog.at_level(logging.ERROR, logger="lakecdc.transforms"):
        tolerant = run_lakecdc(pg, tmp_path / "lakecdc-all", {**BASE, **pg.connection_properties("smtdb"), **MASKED,
                                                              "errors.tolerance": "all", "errors.log.enable": "true"},
                               setup=SETUP, workload=WORKLOAD)
    assert_conformant([r for r in reference if not priced(r)], tolerant, RULES)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Error encountered in task")]
    assert len(logged) == 2 and all("Executing stage 'VALUE_CONVERTER' with class "
                                    "'org.apache.kafka.connect.json.JsonConverter'" in m for m in logged)
