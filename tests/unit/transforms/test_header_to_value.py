"""HeaderToValue with nested (dotted) fields, as Debezium's ConnectRecordUtil builds them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.events.envelope import ChangeRecord
from lakecdc.events.schema import INT32, STRING, ConnectSchema, primitive, struct
from lakecdc.transforms import TransformDataError, build_chain
from lakecdc.transforms.headers import header_bytes

from .records import ENVELOPE, change, row

H2V = "io.debezium.transforms.HeaderToValue"
UNWRAP = "io.debezium.transforms.ExtractNewRecordState"
OPT_STRING = primitive("string", True)
POINT = struct([("x", INT32), ("y", INT32)], optional=True, name="Point")


def with_headers(record: ChangeRecord, *headers: tuple[str, ConnectSchema, Any]) -> ChangeRecord:
    return replace(record, headers=[*record.headers, *((n, header_bytes(s, v, True)) for n, s, v in headers)])


def h2v(fields: str, headers: str, *, unwrap: bool = False, operation: str = "copy") -> Any:
    props = {"transforms": "u,h" if unwrap else "h", "transforms.u.type": UNWRAP, "transforms.h.type": H2V,
             "transforms.h.fields": fields, "transforms.h.headers": headers, "transforms.h.operation": operation}
    return build_chain(props)


def one(chain: Any, record: ChangeRecord) -> ChangeRecord:
    [out] = chain.apply([record])
    return out


def test_into_an_existing_struct_of_the_envelope() -> None:
    record = with_headers(change("c", None, row(1)), ("h1", STRING, "v1"), ("h2", POINT, {"x": 1, "y": 2}))
    out = one(h2v("source.h1,source.pt", "h1,h2"), record)
    source = out.value_schema.field("source").schema
    original = ENVELOPE.field("source").schema
    assert source.field_names == (*original.field_names, "h1", "pt")
    assert source.name == original.name and not source.optional  # copySchemaBasics: name kept, required
    assert source.field("pt").schema == POINT
    assert out.value["source"]["h1"] == "v1" and out.value["source"]["pt"] == {"x": 1, "y": 2}
    assert out.value["after"] == record.value["after"] and out.value["op"] == "c"
    assert out.value_schema.field_names == ENVELOPE.field_names
    # only the walked struct is rebuilt; the others keep their schema
    assert out.value_schema.field("after").schema == ENVELOPE.field("after").schema


def test_into_a_new_struct_at_the_top_level() -> None:
    record = with_headers(change("c", None, row(1)), ("op", STRING, "c"), ("db", OPT_STRING, None), ("f", STRING, "c"))
    out = one(h2v("meta.op,meta.db,flat", "op,db,f", unwrap=True), record)
    meta = out.value_schema.field("meta").schema
    assert out.value_schema.field_names[-2:] == ("flat", "meta")
    assert meta.optional and meta.name is None and meta.field_names == ("op", "db")
    assert out.value["meta"] == {"op": "c", "db": None} and out.value["flat"] == "c"
    assert out.value["name"] == "a" and out.value["id"] == 1


def test_move_removes_the_headers_copy_keeps_them() -> None:
    record = with_headers(change("c", None, row(1)), ("h", STRING, "v"))
    assert [k for k, _ in one(h2v("source.h", "h", operation="move"), record).headers] == \
        [k for k, _ in record.headers if k != "h"]
    assert one(h2v("source.h", "h"), record).headers == record.headers


def test_a_primitive_on_the_path_is_an_error() -> None:
    record = with_headers(change("c", None, row(1)), ("h", STRING, "v"))
    with pytest.raises(TransformDataError, match="Field 'name' is a primitive type, not a struct. Cannot add "
                                                 "nested field 'name.x'"):
        h2v("name.x", "h", unwrap=True).apply([record])


def test_debeziums_corner_cases_are_kept() -> None:
    record = with_headers(change("c", None, row(1)), ("h", STRING, "v"))
    # a missing struct two levels down is created empty: the header is lost
    out = one(h2v("source.meta.x", "h"), record)
    assert out.value["source"]["meta"] == {}
    assert out.value_schema.field("source").schema.field("meta").schema.fields == ()
    # a missing struct at the top with a longer path gets the second name
    out = one(h2v("a.b.c", "h"), record)
    assert out.value["a"] == {"b": "v"}
    # a null struct on the path (before of a create) is not walked
    out = one(h2v("before.h", "h"), record)
    assert out.value["before"] is None
    assert out.value_schema.field("before").schema.field_names[-1] == "h"


def test_records_without_the_headers_or_with_a_null_value_pass() -> None:
    record = change("c", None, row(1))
    assert one(h2v("source.h", "h"), record) == record
    tombstone = with_headers(record, ("h", STRING, "v")).tombstone()
    assert one(h2v("source.h", "h"), tombstone) == tombstone


_NAMES = st.sampled_from(["source.h", "transaction.h", "meta.h", "meta.k", "top", "other.z"])


@given(st.lists(st.tuples(_NAMES, st.text(max_size=5)), min_size=1, max_size=5, unique_by=lambda t: t[0]))
def test_every_header_lands_where_its_name_points_and_nothing_else_changes(plan: list[tuple[str, str]]) -> None:
    headers = [(f"h{i}", OPT_STRING, text) for i, (_, text) in enumerate(plan)]
    record = with_headers(change("c", None, row(1)), *headers)
    out = one(h2v(",".join(name for name, _ in plan), ",".join(h for h, _, _ in headers)), record)
    for name, text in plan:
        parent, _, leaf = name.rpartition(".")
        holder = out.value[parent] if parent else out.value
        assert holder[leaf] == text
        schema = out.value_schema.field(parent).schema if parent else out.value_schema
        assert schema.field(leaf).schema == OPT_STRING
    for f in ENVELOPE.fields:  # what was there is still there, with its value
        original = record.value[f.name]
        if isinstance(original, dict):
            assert {k: v for k, v in out.value[f.name].items() if k in original} == original
        else:
            assert out.value[f.name] == original
    new_parents = [p for p in ("meta", "other") if any(n.startswith(p + ".") for n, _ in plan)]
    assert out.value_schema.field_names == (*ENVELOPE.field_names, *[n for n, _ in plan if "." not in n],
                                            *sorted(new_parents, key=[n.split(".")[0] for n, _ in plan].index))
