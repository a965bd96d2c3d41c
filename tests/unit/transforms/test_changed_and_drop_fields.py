"""ExtractChangedRecordState's headers and ExtractNewRecordState's drop.fields.header.name /
drop.fields.from.key / drop.fields.keep.schema.compatible."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.events.schema import INT32, STRING, ConnectSchema, primitive, struct
from lakecdc.transforms import TransformDataError, build_chain
from lakecdc.transforms.headers import header_bytes

from .records import ROW, change, delete_pair, row

CHANGED = "io.debezium.transforms.ExtractChangedRecordState"
UNWRAP = "io.debezium.transforms.ExtractNewRecordState"
NAMES = ConnectSchema(type="array", optional=True, items=primitive("string", True))


def chain(unwrap: dict[str, str] | None = None, **changed: str) -> Any:
    props = {"transforms": "c,u" if unwrap is not None else "c", "transforms.c.type": CHANGED,
             "transforms.u.type": UNWRAP}
    props.update({f"transforms.c.{k.replace('_', '.')}": v for k, v in changed.items()})
    props.update({f"transforms.u.{k}": v for k, v in (unwrap or {}).items()})
    return build_chain(props)


def header(record: Any, name: str) -> Any:
    [raw] = [v for k, v in record.headers if k == name]
    return json.loads(raw)


def test_changed_and_unchanged_names_of_an_update_with_the_old_row() -> None:
    [out] = chain(header_changed_name="Changed", header_unchanged_name="Unchanged").apply(
        [change("u", row(1, "a", 1), row(1, "b", 1))])
    assert header(out, "Changed") == {"schema": {"type": "array", "items": {"type": "string", "optional": True},
                                                 "optional": True, "name": "Changed"}, "payload": ["name"]}
    assert header(out, "Unchanged")["payload"] == ["id", "qty", "seen"]
    assert out.value == change("u", row(1, "a", 1), row(1, "b", 1)).value


def test_every_envelope_gets_the_headers_empty_without_both_images() -> None:
    c = chain(header_changed_name="Changed")
    records = [change("c", None, row(1)), change("u", None, row(1)), delete_pair(1)[0]]
    assert [header(r, "Changed")["payload"] for r in c.apply(records)] == [[], [], []]
    assert chain().apply(records) == records  # no header names: nothing added
    tombstone = delete_pair(1)[1]
    assert chain(header_changed_name="Changed").apply([tombstone]) == [tombstone]


def test_the_tombstone_after_a_delete_carries_what_was_added_to_the_deletes_headers() -> None:
    """Debezium's tombstone shares the delete's Headers object, to which ExtractChangedRecordState adds
    in place; a later transform that copies the record (RegexRouter) ends the sharing."""
    c = chain(header_changed_name="Changed")
    deleted, tombstone = delete_pair(1)
    out = c.apply([deleted])  # the tombstone may come in the next batch
    [after] = c.apply([tombstone])
    assert after.value is None and [k for k, _ in after.headers] == ["Changed"] and after.headers == out[0].headers[-1:]
    # a tombstone that does not follow its delete, or follows another key's, gets nothing
    assert c.apply([change("c", None, row(2)), tombstone]) [1] == tombstone
    assert c.apply([delete_pair(3)[0], tombstone])[1] == tombstone
    # added after a copying transform: not on the tombstone; before it: on it
    props = {"transforms": "r,c", "transforms.r.type": "org.apache.kafka.connect.transforms.RegexRouter",
             "transforms.r.regex": "(.*)", "transforms.r.replacement": "$1", "transforms.c.type": CHANGED,
             "transforms.c.header.changed.name": "Changed"}
    assert build_chain(props).apply([deleted, tombstone])[1] == tombstone
    props["transforms"] = "c,r"
    assert [k for k, _ in build_chain(props).apply([deleted, tombstone])[1].headers] == ["Changed"]


def test_a_bit_column_always_counts_as_changed_as_debeziums_byte_arrays() -> None:
    bits = primitive("bytes", True, name="io.debezium.data.Bits", version=1)
    schema = struct([("id", INT32), ("b", bits), ("raw", primitive("bytes", True))], optional=True, name="R")
    base = change("u", row(1), row(1))
    envelope = replace(base.value_schema, fields=tuple(
        replace(f, schema=schema) if f.name in ("before", "after") else f for f in base.value_schema.fields))
    value = {**base.value, "before": {"id": 1, "b": b"\x01", "raw": b"\x02"}, "after": {"id": 1, "b": b"\x01",
                                                                                        "raw": b"\x02"}}
    [out] = chain(header_changed_name="C").apply([replace(base, value_schema=envelope, value=value)])
    assert header(out, "C")["payload"] == ["b"]


@given(st.lists(st.sampled_from(ROW.field_names), unique=True), st.booleans(), st.booleans())
def test_drop_fields_removes_the_listed_optional_fields(names: list[str], from_key: bool, compatible: bool) -> None:
    """Whatever the header lists: the value loses the listed fields (only the optional ones when the
    schema is kept compatible), keeps the others with their values, and the key likewise with
    drop.fields.from.key."""
    props = {"drop.fields.header.name": "drop", "drop.fields.from.key": str(from_key).lower(),
             "drop.fields.keep.schema.compatible": str(compatible).lower()}
    unwrap = build_chain({"transforms": "u", "transforms.u.type": UNWRAP,
                          **{f"transforms.u.{k}": v for k, v in props.items()}})
    record = change("c", None, row(4, "n", 3))
    record = replace(record, headers=[*record.headers, ("drop", header_bytes(NAMES, names, True))])
    [out] = unwrap.apply([record])
    dropped = {n for n in names if not compatible or ROW.field(n).schema.optional}
    assert out.value_schema.field_names == tuple(n for n in ROW.field_names if n not in dropped)
    assert out.value == {n: v for n, v in row(4, "n", 3).items() if n not in dropped}
    key_dropped = from_key and "id" in names and not compatible  # the key's id is required
    assert out.key == ({} if key_dropped else {"id": 4})


def test_update_with_unchanged_columns_dropped_after_add_fields() -> None:
    c = chain({"drop.fields.header.name": "Unchanged", "add.fields": "op"}, header_unchanged_name="Unchanged")
    [out] = c.apply([change("u", row(1, "a", 1, None), row(1, "b", 1, None))])
    # id is required (kept); qty and seen unchanged and optional: dropped; __op was added first
    assert out.value == {"id": 1, "name": "b", "__op": "u"}


def test_delete_in_rewrite_mode_drops_before_adding_fields() -> None:
    record = delete_pair(1)[0]
    record = replace(record, headers=[*record.headers, ("d", header_bytes(NAMES, ["name"], True))])
    c = build_chain({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.drop.fields.header.name": "d",
                     "transforms.u.delete.tombstone.handling.mode": "rewrite", "transforms.u.add.fields": "op"})
    [out] = c.apply([record])
    assert list(out.value) == ["id", "qty", "seen", "__deleted", "__op"]


def test_no_header_null_header_or_empty_list_change_nothing() -> None:
    c = build_chain({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.drop.fields.header.name": "d"})
    plain = build_chain({"transforms": "u", "transforms.u.type": UNWRAP})
    for headers in ([], [("d", header_bytes(NAMES, None, True))], [("d", header_bytes(NAMES, [], True))]):
        record = change("c", None, row(1))
        record = replace(record, headers=[*record.headers, *headers])
        assert c.apply([record]) == plain.apply([record])


def test_a_header_that_is_not_a_list_fails_the_record() -> None:
    c = build_chain({"transforms": "u", "transforms.u.type": UNWRAP, "transforms.u.drop.fields.header.name": "d"})
    record = change("c", None, row(1))
    record = replace(record, headers=[*record.headers, ("d", header_bytes(STRING, "name", True))])
    with pytest.raises(TransformDataError, match="not a list of field names"):
        c.apply([record])
