"""The outbox EventRouter with Debezium's defaults and its options."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from lakecdc.errors import ConfigError
from lakecdc.events.envelope import ChangeRecord, envelope_payload, envelope_schema
from lakecdc.events.schema import primitive, struct
from lakecdc.events.source import POSTGRES_SOURCE
from lakecdc.transforms import TransformDataError, build_chain

from .records import source

ROUTER = "io.debezium.transforms.outbox.EventRouter"
UUID = primitive("string", name="io.debezium.data.Uuid", version=1)
JSON = primitive("string", True, name="io.debezium.data.Json", version=1)
ROW = struct([("id", UUID), ("aggregatetype", primitive("string")), ("aggregateid", primitive("string")),
              ("type", primitive("string")), ("payload", JSON)], optional=True, name="dbz.public.outbox.Value")
ENVELOPE = envelope_schema(ROW, POSTGRES_SOURCE, "dbz.public.outbox.Envelope")


def event(op: str = "c", payload: str | None = '{"a":1}', kind: str = "order") -> ChangeRecord:
    image = {"id": "11111111-2222-3333-4444-555555555555", "aggregatetype": kind, "aggregateid": "o-1",
             "type": "created", "payload": payload}
    value = envelope_payload(op, image if op == "d" else None, None if op == "d" else image,
                             source(table="outbox"), 1)
    return ChangeRecord("dbz.public.outbox", None, None, ENVELOPE, value, [("ctx", b"1")])


def router(**props: str):  # noqa: ANN201
    return build_chain({"transforms": "o", "transforms.o.type": ROUTER, **{f"transforms.o.{k}": v for k, v in props.items()}})


def test_defaults_route_by_aggregatetype_key_by_aggregateid_value_is_the_payload() -> None:
    [out] = router().apply([event()])
    assert out.topic == "outbox.event.order" and out.key == "o-1" and out.key_schema == primitive("string")
    assert out.value == '{"a":1}' and out.value_schema == JSON
    assert out.headers[0] == ("ctx", b"1")
    assert out.headers[1][0] == "id" and json.loads(out.headers[1][1]) == {
        "schema": {"type": "string", "optional": False, "name": "io.debezium.data.Uuid", "version": 1},
        "payload": "11111111-2222-3333-4444-555555555555"}


def test_deletes_tombstones_and_updates_are_dropped_or_fatal() -> None:
    chain = router()
    assert chain.apply([event("d"), replace(event(), value=None, value_schema=None), event("u")]) == []
    with pytest.raises(TransformDataError, match="Unexpected update"):
        router(**{"table.op.invalid.behavior": "fatal"}).apply([event("u")])


def test_envelope_placement_builds_a_named_struct_and_headers_get_aliases() -> None:
    [out] = router(**{"table.fields.additional.placement": "type:envelope:eventType,aggregateid:header:agg",
                      "route.topic.replacement": "ev.${routedByValue}"}).apply([event()])
    assert out.topic == "ev.order"
    assert out.value == {"payload": '{"a":1}', "eventType": "created"}
    assert out.value_schema.name == "dbz.public.outbox.order.Value" and out.value_schema.field_names == ("payload", "eventType")
    assert [k for k, _ in out.headers] == ["ctx", "id", "agg"]


def test_empty_payload_tombstone_and_unsupported_options() -> None:
    [out] = router(**{"route.tombstone.on.empty.payload": "true"}).apply([event(payload=None)])
    assert out.value is None and out.value_schema is None and out.key == "o-1"
    with pytest.raises(ConfigError, match="partition"):
        router(**{"table.fields.additional.placement": "type:partition"})
    with pytest.raises(ConfigError, match="expand"):
        router(**{"table.expand.json.payload": "true"})
