"""Kafka Connect transforms through real Debezium 3.6.3 and through lakecdc, compared record by record.

The same PostgreSQL database (18 and 15), workload and connector properties (``transforms.*`` and
``predicates.*`` included, the same file for both) run through Debezium's embedded engine, which
applies the transforms as Kafka Connect does, and through ``lakecdc capture``. The chains cover
every supported transform and predicate:

- ``ROUTING``: the outbox ``EventRouter`` (on the outbox table only, ``TopicNameMatches``) with an
  additional header, ``ByLogicalTableRouter`` merging two tables into one topic with the key field,
  and a ``RegexRouter`` renaming the outbox topics;
- ``MORE``: the outbox router with an ``envelope`` field, a header alias and
  ``route.tombstone.on.empty.payload``; the unwrap's ``delete-to-tombstone`` with ``route.by.field``;
- ``VARIANTS``: ``RegexRouter`` behind ``HasHeaderKey`` (the create of a primary-key change), the
  unwrap's ``rewrite`` mode with prefixed ``add.fields``, ``TimestampConverter`` from Connect's
  ``Timestamp`` / ``Date`` to unix seconds and text, ``InsertField$Key`` and ``ReplaceField$Key``;
- ``FLATTENING``: ``ExtractNewRecordState`` twice (one table with ``add.fields`` / ``add.headers`` /
  ``rewrite-with-tombstone``, the other with the default delete handling), ``MaskField`` (empty
  values and a replacement), ``InsertField``, ``ReplaceField``, ``TimestampConverter``,
  ``ValueToKey`` and ``HeaderToValue``, the ones that cannot take a tombstone guarded by
  ``RecordIsTombstone`` with ``negate=true``;
- ``NESTED``: ``ExtractChangedRecordState`` with the unwrap's ``drop.fields.header.name`` and
  ``rewrite-with-tombstone`` (the tombstones carry what was added to their delete's shared headers),
  ``HeaderToValue`` into a new struct and into ``source``, the outbox router's
  ``table.expand.json.payload`` and ``partition`` placement (the partitions compared too); then the
  same chain plus ``InsertField``'s ``offset.field`` with ``errors.tolerance=all`` through lakecdc,
  compared with Debezium's records without the ones Connect's ``InsertField`` fails;
- ``EXTRAS``: the expanded payload in an envelope (``optional_bytes``, Avro field names),
  ``drop.fields.from.key`` without schema compatibility, ``HeaderToValue``'s corner cases.

``VARIANTS``' date format uses every ``SimpleDateFormat`` letter, weeks included.

What differs by nature is masked as in the other conformance tests (positions, times), plus the
LSN and source time that ``add.fields`` copies into the row.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from harness import MaskRules, assert_conformant, drop_slot
from test_pg_conformance import capture_with_lakecdc, debezium_with_retry, fresh_database

pytestmark = [pytest.mark.conformance, pytest.mark.integration]

SETUP = """
DROP TABLE IF EXISTS items, things, outbox CASCADE;
CREATE TABLE items (id int PRIMARY KEY, name text, qty int DEFAULT 7, seen timestamp, secret text, code numeric(6),
                    day date);
CREATE TABLE things (id int PRIMARY KEY, name text, qty int DEFAULT 7, seen timestamp, secret text, code numeric(6),
                     day date);
CREATE TABLE outbox (id uuid PRIMARY KEY, aggregatetype varchar(255) NOT NULL, aggregateid varchar(255) NOT NULL,
                     type varchar(255) NOT NULL, payload jsonb);
INSERT INTO items VALUES (1, 'a', 1, '2024-01-01 10:00:00', 's1', 15, '2024-01-01');
INSERT INTO things VALUES (1, 't', 2, NULL, 's2', 20, '1960-06-30');
INSERT INTO outbox VALUES ('aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee', 'order', 'o-0', 'created', '{"total": 1}');
"""

WORKLOAD = """
INSERT INTO items VALUES (2, 'b', NULL, '2024-02-02 12:34:56.789', 's3', 325, NULL);
UPDATE items SET name = 'bb' WHERE id = 2;
UPDATE items SET id = 10 WHERE id = 2;
INSERT INTO things VALUES (2, 't2', 5, '1969-12-31 23:59:59.5', NULL, NULL, '2000-02-29');
DELETE FROM items WHERE id = 1;
DELETE FROM things WHERE id = 1;
INSERT INTO outbox VALUES ('11111111-2222-3333-4444-555555555555', 'order', 'o-1', 'created', '{"total": 12}');
INSERT INTO outbox VALUES ('66666666-7777-8888-9999-000000000000', 'customer', 'c-7', 'renamed', '{"name": "x"}');
INSERT INTO outbox VALUES ('77777777-8888-9999-0000-111111111111', 'customer', 'c-8', 'erased', NULL);
UPDATE outbox SET type = 'renamed again' WHERE aggregateid = 'c-7';
DELETE FROM outbox WHERE aggregatetype = 'order';
"""

BASE = {
    "name": "smt-connector", "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "topic.prefix": "dbz", "plugin.name": "pgoutput", "slot.name": "smt_slot", "publication.name": "smt_pub",
    "publication.autocreate.mode": "filtered", "snapshot.mode": "initial",
    "table.include.list": "public.items,public.things,public.outbox",
}

ROUTING = {
    "transforms": "outbox,logical,rename",
    "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
    "transforms.outbox.predicate": "isOutbox",
    "transforms.outbox.table.fields.additional.placement": "type:header:eventType",
    "transforms.logical.type": "io.debezium.transforms.ByLogicalTableRouter",
    "transforms.logical.topic.regex": r"dbz\.public\.(items|things)",
    "transforms.logical.topic.replacement": "dbz.all_rows",
    "transforms.rename.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.rename.regex": r"outbox\.event\.(.*)",
    "transforms.rename.replacement": "events.$1",
    "predicates": "isOutbox",
    "predicates.isOutbox.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isOutbox.pattern": r"dbz\.public\.outbox",
}

_KAFKA = "org.apache.kafka.connect.transforms."
FLATTENING = {
    "table.include.list": "public.items,public.things",
    "transforms": "unwrapItems,unwrapOthers,mask,mask2,insert,replace,ts,toKey,fromHeader",
    "transforms.unwrapItems.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrapItems.predicate": "isItems",
    "transforms.unwrapItems.add.fields": "op,table,source.ts_ms,lsn",
    "transforms.unwrapItems.add.headers": "op,db",
    "transforms.unwrapItems.delete.tombstone.handling.mode": "rewrite-with-tombstone",
    "transforms.unwrapOthers.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrapOthers.add.fields": "op",
    "transforms.mask.type": _KAFKA + "MaskField$Value",
    "transforms.mask.fields": "secret,code",
    "transforms.mask.predicate": "isTombstone",
    "transforms.mask.negate": "true",
    "transforms.mask2.type": _KAFKA + "MaskField$Value",
    "transforms.mask2.fields": "qty",
    "transforms.mask2.replacement": "99",
    "transforms.mask2.predicate": "isTombstone",
    "transforms.mask2.negate": "true",
    "transforms.insert.type": _KAFKA + "InsertField$Value",
    "transforms.insert.topic.field": "__topic",
    "transforms.insert.static.field": "origin",
    "transforms.insert.static.value": "smt",
    "transforms.replace.type": _KAFKA + "ReplaceField$Value",
    "transforms.replace.exclude": "name",
    "transforms.replace.renames": "qty:quantity,secret:hidden",
    "transforms.ts.type": _KAFKA + "TimestampConverter$Value",
    "transforms.ts.field": "seen",
    "transforms.ts.target.type": "string",
    "transforms.ts.format": "yyyy-MM-dd'T'HH:mm:ss.SSS",
    "transforms.ts.unix.precision": "microseconds",
    "transforms.toKey.type": _KAFKA + "ValueToKey",
    "transforms.toKey.fields": "id,origin",
    "transforms.toKey.predicate": "isTombstone",
    "transforms.toKey.negate": "true",
    "transforms.fromHeader.type": "io.debezium.transforms.HeaderToValue",
    "transforms.fromHeader.headers": "__op",
    "transforms.fromHeader.fields": "header_op",
    "transforms.fromHeader.operation": "move",
    "predicates": "isItems,isTombstone",
    "predicates.isItems.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isItems.pattern": r"dbz\.public\.items",
    "predicates.isTombstone.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone",
}

# time.precision.mode=connect: Connect Timestamp / Date logical values for TimestampConverter to read
VARIANTS = {
    "table.include.list": "public.items,public.things",
    "time.precision.mode": "connect",
    "transforms": "moved,unwrap,ts,ts2,keyInsert,keyRename",
    "transforms.moved.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.moved.regex": r"(.*)\.public\.(.*)",
    "transforms.moved.replacement": "$1.moved.$2",
    "transforms.moved.predicate": "hasOldKey",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
    "transforms.unwrap.add.fields.prefix": "meta_",
    "transforms.unwrap.add.fields": "snapshot,db:database,name:connectorName",
    "transforms.ts.type": _KAFKA + "TimestampConverter$Value",
    "transforms.ts.field": "seen",
    "transforms.ts.target.type": "unix",
    "transforms.ts.unix.precision": "seconds",
    "transforms.ts2.type": _KAFKA + "TimestampConverter$Value",
    "transforms.ts2.field": "day",
    "transforms.ts2.target.type": "string",
    "transforms.ts2.format": "yyyy/MM/dd G YYYY ww W F u LLL",  # every date letter, weeks as en_US
    "transforms.keyInsert.type": _KAFKA + "InsertField$Key",
    "transforms.keyInsert.static.field": "region",
    "transforms.keyInsert.static.value": "eu",
    "transforms.keyRename.type": _KAFKA + "ReplaceField$Key",
    "transforms.keyRename.renames": "id:key_id",
    "predicates": "hasOldKey",
    "predicates.hasOldKey.type": "org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
    "predicates.hasOldKey.name": "__debezium.oldkey",
}

# The outbox router with an envelope field, a header alias and tombstones for empty payloads (an
# update is dropped with a warning); the unwrap turns deletes into tombstones and routes by a column.
MORE = {
    "transforms": "outbox,unwrap",
    "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
    "transforms.outbox.predicate": "isOutbox",
    "transforms.outbox.table.fields.additional.placement": "type:envelope:eventType,aggregateid:header:agg",
    "transforms.outbox.route.tombstone.on.empty.payload": "true",
    "transforms.outbox.route.topic.replacement": "outbox.${routedByValue}.events",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.delete.tombstone.handling.mode": "delete-to-tombstone",
    "transforms.unwrap.route.by.field": "name",
    "transforms.unwrap.predicate": "isRoutedOutbox",
    "transforms.unwrap.negate": "true",
    "predicates": "isOutbox,isRoutedOutbox",
    "predicates.isOutbox.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isOutbox.pattern": r"dbz\.public\.outbox",
    "predicates.isRoutedOutbox.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isRoutedOutbox.pattern": r"outbox\..*",
}

@pytest.fixture(params=["pg", "pg15"])
def postgres(request: pytest.FixtureRequest) -> Any:
    """PostgreSQL 18 and 15."""
    return request.getfixturevalue(request.param)


RULES = MaskRules.for_connector("postgres",
                                extra_paths=frozenset({"value.payload.__lsn", "value.payload.__source_ts_ms"}))


def properties_file(path: Path, properties: dict[str, str]) -> Path:
    """A Java .properties file (backslashes escaped, as a user writes ``dbz\\\\.public``)."""
    path.write_text("".join(f"{k}={v.replace(chr(92), chr(92) * 2)}\n" for k, v in properties.items()))
    path.chmod(0o600)
    return path


def run_both(pg: Any, tmp_path: Path, chain: dict[str, str], minimum: int, *, setup: str = SETUP,
             workload: str = WORKLOAD) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    dbz_dir = tmp_path / "debezium"
    dbz_dir.mkdir()
    dsn = fresh_database(pg, "smtdb")
    props = {**BASE, **pg.connection_properties("smtdb"), **chain}

    def reset() -> None:
        fresh_database(pg, "smtdb")
        for leftover in dbz_dir.glob("debezium-offsets*"):
            leftover.unlink()

    expected = debezium_with_retry(props, minimum=minimum, setup_sql=setup, workload_sql=workload, workload_dsn=dsn,
                                   work_dir=dbz_dir, headers=True, reset=reset)
    drop_slot(dsn, props["slot.name"], props["publication.name"])
    return expected, run_lakecdc(pg, tmp_path / "lakecdc", props, setup=setup, workload=workload)


def run_lakecdc(pg: Any, work: Path, props: dict[str, str], *, setup: str = SETUP,
                workload: str = WORKLOAD) -> list[dict[str, Any]]:
    """``lakecdc capture`` with ``props`` on a fresh database (its JSON lines in ``work``)."""
    work.mkdir()
    dsn = fresh_database(pg, "smtdb")
    config = properties_file(work / "connector.properties",
                             {**props, "offset.storage.file.filename": str(work / "offsets.json")})
    actual = capture_with_lakecdc(config, setup_sql=setup, workload_sql=workload, workload_dsn=dsn, work_dir=work)
    drop_slot(dsn, props["slot.name"], props["publication.name"])
    return actual


def test_routers_and_outbox_equal_debezium(postgres: Any, tmp_path: Path) -> None:
    expected, actual = run_both(postgres, tmp_path, ROUTING, minimum=10)
    topics = {r["topic"] for r in expected}
    assert {"dbz.all_rows", "events.order", "events.customer"} <= topics, topics
    keys = [r["key"]["payload"] for r in expected if r["topic"] == "dbz.all_rows"]
    assert {"id": 1, "__dbz__physicalTableIdentifier": "dbz.public.things"} in keys
    outbox = [r for r in expected if r["topic"].startswith("events.")]
    assert len(outbox) == 4 and all(any(h["key"] == "eventType" for h in r["headers"]) for r in outbox)
    assert_conformant(expected, actual, RULES)


def test_flattening_chain_with_predicates_equals_debezium(postgres: Any, tmp_path: Path) -> None:
    expected, actual = run_both(postgres, tmp_path, FLATTENING, minimum=7)
    values = [r["value"] for r in expected]
    # rewrite-with-tombstone keeps the tombstone, which the second unwrap (default mode) then drops
    assert any(v and v["payload"] and v["payload"].get("__deleted") == "true" for v in values)
    assert not any(v is None for v in values)
    assert any(v and v["payload"] is None for v in values)  # default handling: null value with a schema
    assert any(v and v["payload"] and v["payload"].get("header_op") for v in values)
    assert_conformant(expected, actual, RULES)


def test_outbox_envelope_and_unwrap_routing_equal_debezium(postgres: Any, tmp_path: Path) -> None:
    expected, actual = run_both(postgres, tmp_path, MORE, minimum=12)
    events = [r for r in expected if r["topic"].startswith("outbox.")]
    assert [r["value"] is None for r in events] == [False, False, False, True]  # c-8 has no payload
    assert events[0]["value"]["schema"]["name"] == "dbz.public.outbox.order.Value"
    assert {"bb", "t2"} <= {r["topic"] for r in expected}  # routed by the name column
    assert any(r["value"] is None and r["topic"] == "dbz.public.things" for r in expected)  # delete-to-tombstone
    assert_conformant(expected, actual, RULES)


def test_unwrap_rewrite_timestamps_key_transforms_and_header_predicate_equal_debezium(
        postgres: Any, tmp_path: Path) -> None:
    expected, actual = run_both(postgres, tmp_path, VARIANTS, minimum=9)
    moved = [r for r in expected if r["topic"] == "dbz.moved.items"]
    assert len(moved) == 1 and moved[0]["value"]["payload"]["id"] == 10  # the create after the key change
    assert all(r["key"]["payload"].keys() == {"key_id", "region"} for r in expected)
    assert any(r["value"]["payload"]["day"] == "1960/06/30 AD 1960 27 5 5 4 Jun" for r in expected)
    assert_conformant(expected, actual, RULES)


# ---- nested HeaderToValue, changed-column headers with drop.fields, outbox JSON expansion and
# partition placement, and errors.tolerance=all --------------------------------------------------

NESTED_SETUP = """
DROP TABLE IF EXISTS items, things, outbox CASCADE;
CREATE TABLE items (id int PRIMARY KEY, name text, qty int DEFAULT 7, note text);
ALTER TABLE items REPLICA IDENTITY FULL;
CREATE TABLE things (id int PRIMARY KEY, name text, qty int);
ALTER TABLE things REPLICA IDENTITY FULL;
CREATE TABLE outbox (id uuid PRIMARY KEY, aggregatetype varchar(255) NOT NULL, aggregateid varchar(255) NOT NULL,
                     type varchar(255) NOT NULL, shard int, region smallint, payload jsonb);
INSERT INTO items VALUES (1, 'a', 1, 'n1');
INSERT INTO things VALUES (1, 't', 2);
INSERT INTO outbox VALUES ('aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee', 'order', 'o-0', 'created', 0, 1, '{"total": 1}');
"""

NESTED_WORKLOAD = """
INSERT INTO items VALUES (2, 'b', NULL, 'n2');
UPDATE items SET name = 'bb' WHERE id = 2;
UPDATE items SET qty = 5, note = NULL WHERE id = 1;
UPDATE things SET name = 't1' WHERE id = 1;
DELETE FROM items WHERE id = 1;
DELETE FROM things WHERE id = 1;
INSERT INTO outbox VALUES ('11111111-2222-3333-4444-555555555555', 'order', 'o-1', 'created', 1, 1,
  '{"total": 12, "big": 3000000000, "f": 1.5, "ok": true, "who": {"name": "x", "vip": false}, "none": null,
    "tags": [], "words": ["a", "b"], "lines": [{"sku": "a", "n": 1}, {"sku": "b", "n": 2}]}');
INSERT INTO outbox VALUES ('66666666-7777-8888-9999-000000000000', 'customer', 'c-7', 'renamed', NULL, 1, '"just text"');
INSERT INTO outbox VALUES ('77777777-8888-9999-0000-111111111111', 'customer', 'c-8', 'erased', 2, 1, NULL);
"""  # noqa: E501 (SQL statements, one a line)

NESTED = {
    "transforms": "changed,outbox,unwrap,toValue,toSource",
    "transforms.changed.type": "io.debezium.transforms.ExtractChangedRecordState",
    "transforms.changed.header.changed.name": "Changed",
    "transforms.changed.header.unchanged.name": "Unchanged",
    "transforms.changed.predicate": "isRows",
    "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
    "transforms.outbox.predicate": "isOutbox",
    "transforms.outbox.table.expand.json.payload": "true",
    "transforms.outbox.table.fields.additional.placement": "shard:partition,type:header:eventType",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.predicate": "isItems",
    "transforms.unwrap.drop.fields.header.name": "Unchanged",
    "transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone",
    "transforms.unwrap.add.headers": "op,table",
    "transforms.toValue.type": "io.debezium.transforms.HeaderToValue",
    "transforms.toValue.predicate": "isItems",
    "transforms.toValue.headers": "__op,__table,Changed",
    "transforms.toValue.fields": "meta.op,meta.table,changed",
    "transforms.toValue.operation": "move",
    "transforms.toSource.type": "io.debezium.transforms.HeaderToValue",
    "transforms.toSource.predicate": "isThings",
    "transforms.toSource.headers": "Changed",
    "transforms.toSource.fields": "source.changed",
    "transforms.toSource.operation": "copy",
    "predicates": "isRows,isOutbox,isItems,isThings",
    "predicates.isRows.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isRows.pattern": r"dbz\.public\.(items|things)",
    "predicates.isOutbox.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isOutbox.pattern": r"dbz\.public\.outbox",
    "predicates.isItems.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isItems.pattern": r"dbz\.public\.items",
    "predicates.isThings.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
    "predicates.isThings.pattern": r"dbz\.public\.things",
}

# Kafka Connect's InsertField fails every source record that has a value with offset.field; with
# errors.tolerance=all those records are skipped: what is left is Debezium's output without them.
FAILING_ON_THINGS = {
    "transforms": NESTED["transforms"] + ",offset",
    "transforms.offset.type": _KAFKA + "InsertField$Value",
    "transforms.offset.offset.field": "kafka_offset",
    "transforms.offset.predicate": "isThings",
    "errors.tolerance": "all",
    "errors.log.enable": "true",
}


def placements(path: Path) -> list[tuple[str, str, int | None]]:
    """(topic, key, partition) of every record of a JSON-lines capture, sorted (only the outbox
    router places a record, so the order between topics does not matter here)."""
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted((r["topic"], json.dumps(r.get("key"), sort_keys=True), r.get("partition", -1)) for r in lines)


def test_nested_header_to_value_changed_state_drop_fields_expanded_outbox_and_partitions_equal_debezium(
        postgres: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    expected, actual = run_both(postgres, tmp_path, NESTED, minimum=14, setup=NESTED_SETUP, workload=NESTED_WORKLOAD)
    # what the chain does, seen in Debezium's own output
    items = [r["value"]["payload"] for r in expected if r["topic"] == "dbz.public.items" and r["value"]
             and r["value"]["payload"]]
    assert {"id": 2, "name": "bb", "__deleted": "false", "meta": {"op": "u", "table": "items"},
            "changed": ["name"]} in items
    assert any(v.get("meta") == {"op": "r", "table": "items"} and "note" in v for v in items)
    # the tombstones carry what was added in place to their delete's shared headers
    tombstones = [[h["key"] for h in r["headers"] if "context" not in h["key"]] for r in expected if r["value"] is None]
    assert tombstones == [["Changed", "Unchanged", "__op", "__table", "__op"], ["Changed", "Unchanged"]]
    things = [r["value"]["payload"] for r in expected if r["topic"] == "dbz.public.things" and r["value"]]
    assert any(v["source"]["changed"] == ["name"] for v in things)
    order = [r for r in expected if r["topic"] == "outbox.event.order"]
    assert order[1]["value"]["schema"]["name"] == "payload" and order[1]["value"]["payload"]["lines"][1]["sku"] == "b"
    assert [r["value"]["payload"] for r in expected if r["topic"] == "outbox.event.customer"] == ['"just text"', None]
    assert ("outbox.event.order", json.dumps({"schema": {"type": "string", "optional": False}, "payload": "o-1"},
                                             sort_keys=True),
            1) in placements(tmp_path / "debezium" / "debezium.jsonl")
    assert_conformant(expected, actual, RULES)
    assert placements(tmp_path / "lakecdc" / "lakecdc.jsonl") == placements(tmp_path / "debezium" / "debezium.jsonl")

    # errors.tolerance=all: lakecdc skips exactly the records Connect's InsertField fails, and says so
    with caplog.at_level(logging.ERROR, logger="lakecdc.transforms"):
        tolerant = run_lakecdc(postgres, tmp_path / "tolerant",
                               {**BASE, **postgres.connection_properties("smtdb"), **NESTED, **FAILING_ON_THINGS},
                               setup=NESTED_SETUP, workload=NESTED_WORKLOAD)
    survivors = [r for r in expected if not (r["topic"] == "dbz.public.things" and r["value"] is not None)]
    assert len(survivors) < len(expected)
    assert_conformant(survivors, tolerant, RULES)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Error encountered in task")]
    assert len(logged) == len(expected) - len(survivors)
    assert all("'org.apache.kafka.connect.transforms.InsertField$Value'" in m and "transform 'offset'" in m
               and "Only SinkRecord supported" in m for m in logged)


# ---- the options' other settings and Debezium's corner cases ----------------------------------

EXTRAS_WORKLOAD = NESTED_WORKLOAD + """
INSERT INTO outbox VALUES ('88888888-9999-0000-1111-222222222222', 'customer', 'c-9', 'named', 0, 3,
  '{"a-b": 1, "ok": true, "gone": null}');
"""

EXTRAS = {
    "transforms": "changed,outbox,unwrap,quirks",
    "transforms.changed.type": "io.debezium.transforms.ExtractChangedRecordState",
    "transforms.changed.header.unchanged.name": "Unchanged",
    "transforms.changed.predicate": "isRows",
    # the expanded payload in an envelope with other columns; nulls as optional bytes; Avro field names
    "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
    "transforms.outbox.predicate": "isOutbox",
    "transforms.outbox.table.expand.json.payload": "true",
    "transforms.outbox.table.json.payload.null.behavior": "optional_bytes",
    "transforms.outbox.field.name.adjustment.mode": "avro",
    "transforms.outbox.table.fields.additional.placement": "type:envelope:eventType,region:envelope",
    # unchanged columns dropped whatever their optionality, from the key too
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.unwrap.predicate": "isItems",
    "transforms.unwrap.drop.fields.header.name": "Unchanged",
    "transforms.unwrap.drop.fields.from.key": "true",
    "transforms.unwrap.drop.fields.keep.schema.compatible": "false",
    # HeaderToValue's walk: a missing struct two levels down comes out empty, a longer missing path
    # at the top keeps its second name
    "transforms.quirks.type": "io.debezium.transforms.HeaderToValue",
    "transforms.quirks.predicate": "isThings",
    "transforms.quirks.headers": "Unchanged,__debezium.context.connectorLogicalName",
    "transforms.quirks.fields": "source.meta.x,a.b.c",
    "transforms.quirks.operation": "copy",
    "predicates": NESTED["predicates"],
    **{k: v for k, v in NESTED.items() if k.startswith("predicates.")},
}


def test_outbox_envelope_expansion_key_drops_and_header_to_value_corner_cases_equal_debezium(
        postgres: Any, tmp_path: Path) -> None:
    expected, actual = run_both(postgres, tmp_path, EXTRAS, minimum=14, setup=NESTED_SETUP, workload=EXTRAS_WORKLOAD)
    events = {r["key"]["payload"]: r["value"] for r in expected if r["topic"].startswith("outbox.event.")}
    assert events["o-1"]["payload"]["payload"]["none"] is None and events["o-1"]["payload"]["region"] == 1
    assert events["c-9"]["payload"]["payload"] == {"a_b": None, "ok": True, "gone": None}  # looked up by adjusted name
    update = next(r for r in expected if r["topic"] == "dbz.public.items" and r["value"] and r["value"]["payload"]
                  and r["value"]["payload"].get("name") == "bb")
    assert update["value"]["payload"] == {"name": "bb"} and update["key"]["payload"] == {}
    things = [r["value"]["payload"] for r in expected if r["topic"] == "dbz.public.things" and r["value"]]
    assert all(v["source"]["meta"] == {} and v["a"] == {"b": "dbz"} for v in things)
    assert_conformant(expected, actual, RULES)
