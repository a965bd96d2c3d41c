"""Property-based fuzzing of ``Decoder.decode`` over mutated real Debezium events (issue 12).

Seeds: every record of the real Debezium 3.6.3 PostgreSQL workload (``ingest_records.golden_records``:
data events of three tables, transaction BEGIN/END markers, tombstones, a truncate) and the MySQL
connector's documented create/update/delete events (``tests/data/mysql/seed_examples``).

A mutation changes one thing of one record: a field dropped, added or given another JSON value
(wrong types, huge and negative numbers, text, containers) at any depth of the payload or the
schema, the raw bytes truncated, the key replaced or garbled, an old-key header garbled, or the
JSON re-serialized (a no-op). The mutated record is decoded after its un-mutated original (so a
keyed topic is known to be keyed), and compared with decoding the original twice. Properties:

- no exception escapes ``decode``;
- counts add up: rows + dead letters + tombstones + markers + skipped + heartbeats + schema
  changes = records in;
- a dead letter has a reason naming its offset, and its offset is in no segment and no marker;
- otherwise the record decodes exactly as the original did -- or, when it does not, the mutated
  record is still a valid event by ``conforms`` below (an independent reading of what Kafka
  Connect's JsonConverter writes and what a Debezium event holds): a record that does not conform
  never becomes a row that differs from the original's.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ingest_records import golden_records, kafka_table

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.decode import DecodedBatch, Decoder
from lakecdc.ingest.reader import KAFKA_ARROW_SCHEMA

NOW = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)
MYSQL_SEEDS = Path(__file__).parents[2] / "data" / "mysql" / "seed_examples"
TX_TOPIC = "dbz.transaction"


def _compact(doc: Any) -> bytes:
    # stdlib json: orjson refuses integers beyond 64 bits, which the mutations make on purpose
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _seeds() -> list[tuple[str, Any, Any]]:
    """(topic, key document, value document) of every seed record."""
    seeds = [(r["topic"], r["key"], r["value"]) for r in golden_records()]
    create = json.loads((MYSQL_SEEDS / "create_value.json").read_text())
    key = json.loads((MYSQL_SEEDS / "key.json").read_text())
    topic = "mysql-server-1.inventory.customers"
    for name in ("create_value", "update_value", "delete_value"):
        payload = json.loads((MYSQL_SEEDS / f"{name}.json").read_text())["payload"]
        image = payload["after"] or payload["before"]
        seeds.append((topic, {**key, "payload": {"id": image["id"]}}, {"schema": create["schema"], "payload": payload}))
    return seeds


SEEDS = _seeds()
CONFIG = IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "dbz"})


# ------------------------------------------------------------------ the independent reference

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_TYPES = set(_INT_BITS) | {"float", "double", "boolean", "string", "bytes", "array", "map", "struct"}
_DECIMAL = "org.apache.kafka.connect.data.Decimal"


def schema_ok(s: Any) -> bool:
    """A Connect schema as JsonConverter writes one (attributes of their JSON types)."""
    if not isinstance(s, dict) or s.get("type") not in _TYPES:
        return False
    for attr, kind in (("optional", bool), ("name", str), ("doc", str), ("version", int), ("parameters", dict)):
        value = s.get(attr)
        if value is not None and (type(value) is not kind):
            return False
    if isinstance(s.get("parameters"), dict) and not all(isinstance(v, str) for v in s["parameters"].values()):
        return False
    if s["type"] == "struct":
        fields = s.get("fields", [])
        if not isinstance(fields, list) or not all(isinstance(f, dict) and isinstance(f.get("field"), str)
                                                   and schema_ok(f) for f in fields):
            return False
        if len({f["field"] for f in fields}) != len(fields):
            return False
    if s["type"] == "array" and not schema_ok(s.get("items")):
        return False
    if s["type"] == "map" and not (schema_ok(s.get("keys")) and schema_ok(s.get("values"))):
        return False
    return "default" not in s or s["default"] is None or conforms(s, s["default"])


def conforms(s: dict[str, Any], v: Any) -> bool:
    """``v`` is what JsonConverter writes for a value of schema ``s``."""
    if v is None:
        return bool(s.get("optional", False))
    kind = s["type"]
    if kind in _INT_BITS:
        bits = _INT_BITS[kind]
        return type(v) is int and -(1 << (bits - 1)) <= v < 1 << (bits - 1)
    if kind in ("float", "double"):
        return type(v) in (int, float) or v in ("NaN", "Infinity", "-Infinity")
    if kind == "boolean":
        return type(v) is bool
    if kind == "string":
        return type(v) is str
    if kind == "bytes":
        if s.get("name") == _DECIMAL and type(v) in (int, float):
            return True
        if type(v) is not str:
            return False
        try:
            base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            return False
        return True
    if kind == "array":
        return type(v) is list and all(conforms(s["items"], x) for x in v)
    if kind == "map":
        if s["keys"].get("type") == "string":
            return type(v) is dict and all(conforms(s["values"], x) for x in v.values())
        return type(v) is list and all(type(p) is list and len(p) == 2 and conforms(s["keys"], p[0])
                                       and conforms(s["values"], p[1]) for p in v)
    fields = s.get("fields", [])
    return (type(v) is dict and set(v) == {f["field"] for f in fields}
            and all(conforms(f, v[f["field"]]) for f in fields))


def _marker_ok(p: Any) -> bool:
    """Debezium's TransactionMonitor BEGIN/END value."""
    if not isinstance(p, dict) or p.get("status") not in ("BEGIN", "END"):
        return False
    if not isinstance(p.get("id"), str) or not p["id"]:
        return False
    if p.get("ts_ms") is not None and not (type(p["ts_ms"]) is int and -(1 << 63) <= p["ts_ms"] < 1 << 63):
        return False
    if p["status"] == "BEGIN":
        return p.get("event_count") is None and p.get("data_collections") is None
    listed = p.get("data_collections")
    if not isinstance(listed, list) or not all(isinstance(c, dict) for c in listed):
        return False
    counts = [p.get("event_count")] + [c.get("event_count") for c in listed]
    names = [c.get("data_collection") for c in listed]
    return (all(type(n) is int and 0 <= n < 1 << 63 for n in counts)
            and all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names)
            and sum(counts[1:]) == counts[0])


def _key_only_before(schema: dict[str, Any]) -> dict[str, Any]:
    """The envelope schema with the before image's columns optional: a delete under PostgreSQL's
    REPLICA IDENTITY DEFAULT carries only the key columns, Debezium writes null for the others."""
    schema = copy.deepcopy(schema)
    for field in schema.get("fields", []):
        if isinstance(field, dict) and field.get("field") == "before" and isinstance(field.get("fields"), list):
            for column in field["fields"]:
                if isinstance(column, dict):
                    column["optional"] = True
    return schema


def _envelope(raw: bytes | None, need_schema: bool = True) -> tuple[Any, Any] | None:
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(doc, dict) or "payload" not in doc or (need_schema and not schema_ok(doc.get("schema"))):
        return None
    return doc.get("schema"), doc["payload"]


def record_conforms(topic: str, key: bytes | None, value: bytes | None, keyed: bool) -> bool:
    """The record is a valid Debezium event, its key the key of its row."""
    if value is None:
        return True  # a tombstone
    if topic == TX_TOPIC:
        parts = _envelope(value, need_schema=False)
        return parts is not None and _marker_ok(parts[1])
    parts = _envelope(value)
    if parts is None:
        return False
    schema, payload = parts
    if isinstance(payload, dict) and payload.get("op") == "d" and isinstance(payload.get("before"), dict):
        schema = _key_only_before(schema)
    if not conforms(schema, payload):
        return False
    if not isinstance(payload, dict) or payload.get("op") not in ("r", "c", "u", "d", "t", "m"):
        return False
    if key is None:
        return not keyed or payload["op"] in ("t", "m")
    key_parts = _envelope(key)
    if key_parts is None or key_parts[0].get("type") != "struct" or not conforms(*key_parts):
        return False
    image = payload.get("before" if payload["op"] == "d" else "after")
    return payload["op"] in ("t", "m") or (isinstance(image, dict) and all(
        name in image and image[name] == v for name, v in key_parts[1].items()))


# ------------------------------------------------------------------ mutations

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([2**63, 2**63 - 1, -(2**63) - 1, 2**64, -1, 0, 1.5, -0.0, 1e300])
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6)
    | st.sampled_from(["NaN", "Infinity", "", "AQID", "!!", "2024-01-01T00:00:00Z", '["1","2"]', '["x"]', "BEGIN",
                      "END", "c", "u", "d", "t", "m", "r", "postgresql", "mysql", "struct", "int64", "bytes"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=4)


@st.composite
def _path_mutation(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one node at a random depth dropped, added to, or replaced by another JSON value."""
    doc = copy.deepcopy(doc)
    node = doc
    while True:
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node)) \
            if isinstance(node, list) else []
        containers = [(k, v) for k, v in children if isinstance(v, (dict, list)) and v]
        if not containers or draw(st.integers(0, 3)) == 0:
            break
        key, child = draw(st.sampled_from(containers))
        node = child
    action = draw(st.sampled_from(["drop", "add", "replace", "replace"]))
    if action == "add" or not node:
        if isinstance(node, dict):
            node[draw(st.sampled_from(["zz_fuzz", "optional", "name", "parameters", "default", "field"]))] = \
                draw(_json_values)
        elif isinstance(node, list):
            node.append(draw(_json_values))
        return doc
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    key = draw(st.sampled_from(keys))
    if action == "drop":
        del node[key]
    else:
        node[key] = draw(_json_values)
    return doc


@st.composite
def mutated_record(draw: st.DrawFn) -> tuple[int, bytes | None, bytes | None, list[Any] | None, str]:
    """(seed index, key bytes, value bytes, headers, mutation kind)."""
    index = draw(st.integers(0, len(SEEDS) - 1))
    topic, key, value = SEEDS[index]
    key_raw = None if key is None else _compact(key)
    value_raw = None if value is None else _compact(value)
    kind = draw(st.sampled_from(["value", "value", "value", "value", "truncate", "key", "header", "no-op"]))
    headers = None
    if kind == "value" and value is not None:
        value_raw = _compact(draw(_path_mutation(value)))
    elif kind == "truncate" and value_raw is not None:
        value_raw = value_raw[:draw(st.integers(0, len(value_raw) - 1))]
    elif kind == "key":
        choice = draw(st.sampled_from(["none", "bytes", "path"]))
        if choice == "none" or key is None:
            key_raw = None if choice == "none" else draw(st.binary(max_size=12))
        elif choice == "bytes":
            key_raw = draw(st.binary(max_size=40))
        else:
            key_raw = _compact(draw(_path_mutation(key)))
    elif kind == "header":
        headers = [{"key": "__debezium.oldkey", "value": draw(st.binary(max_size=20))},
                   {"key": draw(st.text(max_size=8)), "value": draw(st.binary(max_size=8))}]
    elif kind == "no-op" and value is not None:
        value_raw = json.dumps(value, indent=draw(st.integers(0, 3)), ensure_ascii=False).encode("utf-8")
    return index, key_raw, value_raw, headers, kind


# ------------------------------------------------------------------ decoding and comparing

def _decode(topic: str, original: tuple[bytes | None, bytes | None],
            second: tuple[bytes | None, bytes | None], headers: list[Any] | None = None) -> DecodedBatch:
    table = kafka_table([(topic, *original), (topic, *second)])
    if headers is not None:
        column = pa.array([None, headers], KAFKA_ARROW_SCHEMA.field("headers").type)
        table = table.set_column(table.schema.get_field_index("headers"), "headers", column)
    return Decoder(CONFIG).decode(table, NOW)


def _outcome(batch: DecodedBatch, offset: int) -> tuple[str, Any]:
    """What became of the record at ``offset``: ("row", (columns, row)), ("marker", marker), ..."""
    for segment in batch.segments:
        offsets = segment.rows.column("_offset").to_pylist()
        if offset in offsets:
            row = segment.rows.slice(offsets.index(offset), 1).to_pylist()[0]
            return "row", ([(c.name, c.data_type, c.nullable, c.connect_schema) for c in segment.columns],
                           segment.key_columns, segment.source, row)
    for marker in batch.tx_markers:
        if marker.offset == offset:
            return "marker", marker
    return "other", (batch.tombstones, batch.skipped, batch.heartbeats, len(batch.schema_changes))


def _check(index: int, key: bytes | None, value: bytes | None, headers: list[Any] | None) -> None:
    topic, seed_key, seed_value = SEEDS[index]
    original = (None if seed_key is None else _compact(seed_key), None if seed_value is None else _compact(seed_value))
    batch = _decode(topic, original, (key, value), headers)  # must not raise

    rows = sum(s.num_rows for s in batch.segments)
    total = (rows + len(batch.dead_letters) + batch.tombstones + len(batch.tx_markers) + batch.skipped
             + batch.heartbeats + len(batch.schema_changes))
    assert total == 2, f"counts do not add up: {batch}"
    decoded_offsets = {o for s in batch.segments for o in s.rows.column("_offset").to_pylist()}
    decoded_offsets |= {m.offset for m in batch.tx_markers}
    for letter in batch.dead_letters:
        assert letter.reason and "offset 1" in letter.reason or letter.offset == 0, letter
        assert letter.offset not in decoded_offsets, "a dead letter is also decoded"
    assert all(d.offset == 1 for d in batch.dead_letters), "the un-mutated record was refused"
    if any(d.offset == 1 for d in batch.dead_letters):
        return

    baseline = _decode(topic, original, original)
    got, expected = _outcome(batch, 1), _outcome(baseline, 1)
    if headers is not None and got[0] == "row":  # a garbled old-key header is ignored, or read as the old key
        old_key = got[1][3].pop("_old_key_json")
        expected[1][3].pop("_old_key_json")
        assert old_key is None or json.loads(headers[0]["value"]) is not None
    if got == expected:
        return
    keyed = seed_key is not None
    assert record_conforms(topic, key, value, keyed), (
        f"a record that is not a valid event decoded differently from its original:\n"
        f"key={key!r}\nvalue={value!r}\ngot={got}\nexpected={expected}")


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_record())
def test_no_mutation_of_a_real_event_escapes_or_becomes_a_wrong_row(case: tuple[int, Any, Any, Any, str]) -> None:
    index, key, value, headers, _ = case
    _check(index, key, value, headers)


@pytest.mark.parametrize("index", range(len(SEEDS)))
def test_every_seed_decodes_cleanly_and_reserialized_identically(index: int) -> None:
    """The seeds themselves are valid (no dead letters), and whitespace is a no-op."""
    topic, key, value = SEEDS[index]
    raw_key = None if key is None else _compact(key)
    raw = None if value is None else _compact(value)
    batch = _decode(topic, (raw_key, raw), (raw_key, raw))
    assert batch.dead_letters == []
    spaced = None if value is None else json.dumps(value, indent=2).encode()
    assert _outcome(_decode(topic, (raw_key, raw), (raw_key, spaced)), 1) == _outcome(batch, 1)


@pytest.mark.parametrize("header", [b"null", b'{"schema":{"type":"int32","optional":true},"payload":null}',
                                    b'{"schema":null,"payload":null}'])
def test_a_null_old_key_header_names_no_old_key(header: bytes) -> None:
    """Found by the mutation test above: a JSON null key header became the text "null"."""
    from lakecdc.ingest.converter_json import key_text

    assert key_text(header) is None
    assert key_text(b'{"schema":{"type":"int32"},"payload":7}') == "7"
