"""ExtractNewRecordState: Debezium 3.6.3's unwrap, delete handling, add.fields / add.headers."""

from __future__ import annotations

import json

import pytest

from lakecdc.errors import ConfigError
from lakecdc.events.schema import OPTIONAL_STRING
from lakecdc.transforms import build_chain
from lakecdc.transport.sink import RecordSerializer

from .records import ENVELOPE, ROW, change, delete_pair, row

UNWRAP = "io.debezium.transforms.ExtractNewRecordState"


def unwrap(**extra: str):  # noqa: ANN201
    return build_chain({"transforms": "u", "transforms.u.type": UNWRAP,
                        **{f"transforms.u.{k}": v for k, v in extra.items()}})


def test_create_becomes_the_after_row_with_a_required_copy_of_the_row_schema() -> None:
    [out] = unwrap().apply([change("c", None, row(1, "x"))])
    # addFields always runs (even with no add.fields): copySchemaBasics makes the schema required
    assert out.value == row(1, "x") and out.value_schema is not None and not out.value_schema.optional
    assert out.value_schema.fields == ROW.fields and out.value_schema.name == ROW.name
    assert out.topic == "dbz.public.items" and out.key == {"id": 1}


def test_default_delete_handling_keeps_a_null_value_with_the_row_schema_and_drops_the_tombstone() -> None:
    out = unwrap().apply(delete_pair(5))
    assert len(out) == 1 and out[0].value is None and out[0].value_schema is ROW
    serializer = RecordSerializer()
    text = json.loads(serializer.value_bytes(out[0]))  # type: ignore[arg-type]
    assert text["payload"] is None and text["schema"]["name"] == "dbz.public.items.Value"
    assert b"".join(serializer.value_pieces(out[0])) == serializer.value_bytes(out[0])


@pytest.mark.parametrize(("mode", "expected"), [
    ("drop", []), ("delete-to-tombstone", [("tombstone", None)]),
    ("rewrite", [("row", "true")]), ("rewrite-with-tombstone", [("row", "true"), ("tombstone", None)]),
])
def test_delete_modes(mode: str, expected: list[tuple[str, str | None]]) -> None:
    out = unwrap(**{"delete.tombstone.handling.mode": mode}).apply(delete_pair(5))
    assert [("tombstone" if r.value_schema is None else "row", (r.value or {}).get("__deleted"))
            for r in out] == expected
    for record in out:
        if record.value is not None:
            assert record.value_schema is not None and not record.value_schema.optional  # InsertField's copy
            assert record.value_schema.fields[-1].schema == OPTIONAL_STRING
            assert record.value == {**row(5), "__deleted": "true"}


def test_rewrite_marks_changes_not_deleted_and_fills_defaults() -> None:
    [out] = unwrap(**{"delete.tombstone.handling.mode": "REWRITE"}).apply([change("u", row(1), row(1, qty=None))])
    assert out.value == {**row(1, qty=7), "__deleted": "false"}  # Struct.get: the default of a null
    [raw] = unwrap(**{"delete.tombstone.handling.mode": "rewrite",
                      "replace.null.with.default": "false"}).apply([change("u", row(1), row(1, qty=None))])
    assert raw.value["qty"] is None


def test_add_fields_from_envelope_source_and_transaction() -> None:
    chain = unwrap(**{"add.fields": "op,table,source.ts_ms,lsn:LSN,id,ts_ms"})
    [out] = chain.apply([change("c", None, row(1))])
    schema = out.value_schema
    assert schema is not None and not schema.optional and schema.name == ROW.name
    added = schema.field_names[len(ROW.fields):]
    assert added == ("__op", "__table", "__source_ts_ms", "__LSN", "__id", "__ts_ms")
    assert all(f.schema.optional and f.schema.default is None for f in schema.fields[len(ROW.fields):])
    assert schema.field("__op").schema.type == "string" and schema.field("__LSN").schema.type == "int64"
    value = out.value
    assert (value["__op"], value["__table"], value["__LSN"], value["__id"]) == ("c", "items", 100, "42:100")
    assert value["__source_ts_ms"] == 1_700_000_000_123
    [snapshot] = chain.apply([change("r", None, row(2), tx=False)])
    assert snapshot.value["__id"] is None


def test_add_headers_and_tombstone_op_header() -> None:
    chain = unwrap(**{"add.headers": "op,db", "delete.tombstone.handling.mode": "rewrite-with-tombstone"})
    deleted, tombstone = chain.apply(delete_pair(4))
    added = {k: json.loads(v) for k, v in deleted.headers if k.startswith("__") and "context" not in k}
    assert added == {"__op": {"schema": {"type": "string", "optional": True}, "payload": "d"},
                     "__db": {"schema": {"type": "string", "optional": True}, "payload": "shop"}}
    # Debezium's tombstone shares the delete's headers, to which add.headers added in place; its own
    # op header (a required string) comes after them
    assert [(k, json.loads(v)) for k, v in tombstone.headers] == [
        ("__op", {"schema": {"type": "string", "optional": True}, "payload": "d"}),
        ("__db", {"schema": {"type": "string", "optional": True}, "payload": "shop"}),
        ("__op", {"schema": {"type": "string", "optional": False}, "payload": "d"})]
    [alone] = unwrap(**{"add.headers": "op,db", "delete.tombstone.handling.mode": "rewrite-with-tombstone"}).apply(
        [delete_pair(4)[1]])
    assert [(k, json.loads(v)) for k, v in alone.headers] == [
        ("__op", {"schema": {"type": "string", "optional": False}, "payload": "d"})]


def test_route_by_field_truncate_and_non_envelopes() -> None:
    chain = unwrap(**{"route.by.field": "name"})
    assert chain.apply([change("c", None, row(1, "elsewhere"))])[0].topic == "elsewhere"
    assert chain.apply([change("c", None, row(1, " "))])[0].topic == "dbz.public.items"  # blank: kept
    assert chain.apply([change("t", None, None)]) == []
    other = change("c", None, row(1))
    from dataclasses import replace

    from lakecdc.events.schema import struct
    message = replace(other, value_schema=struct([("op", ENVELOPE.field("op").schema)], name="x.Message"),
                      value={"op": "m"})
    assert chain.apply([message]) == [message]


def test_bad_mode_and_removed_properties() -> None:
    with pytest.raises(ConfigError, match="delete.tombstone.handling.mode"):
        unwrap(**{"delete.tombstone.handling.mode": "none"})
    chain = unwrap(**{"delete.handling.mode": "rewrite", "drop.tombstones": "false"})
    assert set(chain.not_applied) == {"transforms.u.delete.handling.mode", "transforms.u.drop.tombstones"}
    # Debezium 3.6.3 ignores them: the default mode applies
    assert chain.apply(delete_pair(1))[0].value is None


def test_source_fields_at_their_default_are_added_as_null_like_debeziums_unset_fields() -> None:
    [streamed] = unwrap(**{"add.fields": "snapshot"}).apply([change("c", None, row(1))])
    assert streamed.value["__snapshot"] is None  # Debezium leaves source.snapshot unset while streaming
    from dataclasses import replace

    record = change("r", None, row(1))
    record = replace(record, value={**record.value, "source": {**record.value["source"], "snapshot": "first"}})
    [snapshot] = unwrap(**{"add.fields": "snapshot"}).apply([record])
    assert snapshot.value["__snapshot"] == "first"
