"""Property tests: arbitrary Connect schemas and payloads survive encode -> bytes -> decode."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.events.javanum import (
    float32_round,
    java_double_str,
    java_float_str,
    java_number_format,
    set_java_number_format,
)
from lakecdc.events.schema import ConnectSchema, array, map_, primitive, struct
from lakecdc.events.serde import RecordEncoder, decode, jackson_dumps, jackson_string
from lakecdc.events.values import connect_to_json, json_to_connect

INT_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}
JAVA_DOUBLE = re.compile(r"^-?(\d+\.\d+|\d\.\d+E-?\d+)$")

names = st.text(min_size=1, max_size=8)
primitive_types = st.sampled_from(
    ["int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes"]
)


@st.composite
def primitive_schemas(draw: st.DrawFn) -> ConnectSchema:
    type_name = draw(primitive_types)
    name = draw(st.none() | st.sampled_from(["io.debezium.data.Json", "x.y.Z"]))
    params = draw(st.none() | st.dictionaries(names, st.text(max_size=5), max_size=2))
    return primitive(
        type_name,
        draw(st.booleans()),
        name=name,
        version=draw(st.none() | st.integers(1, 3)) if name else None,
        doc=draw(st.none() | st.text(max_size=10)),
        parameters=params,
    )


def _extend(children: st.SearchStrategy[ConnectSchema]) -> st.SearchStrategy[ConnectSchema]:
    structs = st.lists(st.tuples(names, children), max_size=4, unique_by=lambda t: t[0]).flatmap(
        lambda fields: st.builds(
            lambda opt, name: struct(fields, optional=opt, name=name),
            st.booleans(),
            st.none() | st.just("dbz.s.t.Value"),
        )
    )
    arrays = st.builds(lambda items, opt: array(items, optional=opt), children, st.booleans())
    maps = st.builds(
        lambda k, v, opt: map_(k, v, optional=opt),
        st.sampled_from([primitive("string"), primitive("int32")]),
        children,
        st.booleans(),
    )
    return structs | arrays | maps


schemas = st.recursive(primitive_schemas(), _extend, max_leaves=8)
top_schemas = schemas.filter(lambda s: s.type == "struct") | st.builds(
    lambda fields: struct(fields, name="k"), st.lists(st.tuples(names, schemas), max_size=4, unique_by=lambda t: t[0])
)


def values_for(schema: ConnectSchema, allow_null: bool = True) -> st.SearchStrategy[Any]:
    strategy: st.SearchStrategy[Any]
    t = schema.type
    if t in INT_RANGES:
        bits = INT_RANGES[t]
        strategy = st.integers(-(2**bits), 2**bits - 1)
    elif t == "double":
        strategy = st.floats(allow_nan=True, allow_infinity=True)
    elif t == "float":
        strategy = st.floats(width=32, allow_nan=False, allow_infinity=False)
    elif t == "boolean":
        strategy = st.booleans()
    elif t == "string":
        strategy = st.text(max_size=20)
    elif t == "bytes":
        strategy = st.binary(max_size=12)
    elif t == "array":
        assert schema.items is not None
        strategy = st.lists(values_for(schema.items), max_size=3)
    elif t == "map":
        assert schema.keys is not None and schema.values is not None
        strategy = st.dictionaries(values_for(schema.keys, False), values_for(schema.values), max_size=3)
    else:
        strategy = st.fixed_dictionaries({f.name: values_for(f.schema) for f in schema.fields})
    if allow_null and schema.optional:
        strategy = st.none() | strategy
    return strategy


schema_and_value = top_schemas.flatmap(lambda s: st.tuples(st.just(s), values_for(s, allow_null=False)))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=200, deadline=None)
@given(schemas)
def test_schema_json_round_trip(schema: ConnectSchema) -> None:
    assert ConnectSchema.from_json(schema.to_json()) == schema
    assert ConnectSchema.from_json(json.loads(jackson_dumps(schema.to_json()))) == schema


@settings(max_examples=150, deadline=None)
@given(schema_and_value)
def test_payload_round_trip_through_wire_bytes(case: tuple[ConnectSchema, Any]) -> None:
    schema, value = case
    for schemas_enable in (True, False):
        encoder = RecordEncoder(schema, schemas_enable=schemas_enable)
        data = encoder.encode(value)
        assert data is not None
        schema_json, payload = decode(data, schemas_enable=schemas_enable)
        if schemas_enable:
            assert ConnectSchema.from_json(schema_json) == schema
        # The compiled encoder and the generic tree writer must agree byte for byte.
        assert encoder.encode_text(value) == jackson_dumps(connect_to_json(schema, value))
        assert _same(json_to_connect(schema, payload), _expected_after_wire(schema, value))


def _expected_after_wire(schema: ConnectSchema, value: Any) -> Any:
    """What a reader gets back: float32 values come back as their float32 rounding."""
    if value is None:
        return None
    t = schema.type
    if t == "float":
        return float32_round(value)
    if t == "array":
        return [_expected_after_wire(schema.items, v) for v in value]  # type: ignore[arg-type]
    if t == "map":
        return {k: _expected_after_wire(schema.values, v) for k, v in value.items()}  # type: ignore[arg-type]
    if t == "struct":
        return {f.name: _expected_after_wire(f.schema, value[f.name]) for f in schema.fields}
    return value


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_text_reads_back_and_has_java_shape(value: float) -> None:
    text = java_double_str(value)
    assert float(text) == value and math.copysign(1, float(text)) == math.copysign(1, value)
    assert JAVA_DOUBLE.match(text), text
    magnitude = abs(value)
    assert ("E" in text) == (magnitude != 0 and not 1e-3 <= magnitude < 1e7)


@settings(max_examples=500, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_java_float_text_is_shortest_float32(value: float) -> None:
    text = java_float_str(value)
    assert float32_round(float(text)) == value
    assert JAVA_DOUBLE.match(text), text
    digits = text.split("E")[0].replace("-", "").replace(".", "").strip("0")
    assert len(digits) <= 9


def test_java_number_vectors() -> None:
    # Values whose Java 19+ text is well known (Double.toString / Float.toString); the Java 17
    # differences are covered by test_events_java_numbers.
    before = java_number_format()
    set_java_number_format("jdk19")
    try:
        _check_java19_vectors()
    finally:
        set_java_number_format(before)


def _check_java19_vectors() -> None:
    assert [java_double_str(v) for v in (1.0, -0.0, 0.001, 0.0001, 1e7, 9999999.0, 1e-300, 2.5e-5, 123456789.0)] == [
        "1.0", "-0.0", "0.001", "1.0E-4", "1.0E7", "9999999.0", "1.0E-300", "2.5E-5", "1.23456789E8",
    ]
    assert java_double_str(5e-324) == "4.9E-324"  # Double.MIN_VALUE: Java's 1-or-2 digit rule
    assert java_double_str(1e23) == "1.0E23"
    assert java_double_str(float("nan")) == '"NaN"' and java_double_str(float("-inf")) == '"-Infinity"'
    assert [java_float_str(v) for v in (0.1, 1e10, 3.4028234663852886e38, 1.401298464324817e-45)] == [
        "0.1", "1.0E10", "3.4028235E38", "1.4E-45",
    ]


def test_jackson_string_escapes() -> None:
    assert jackson_string('a"b\\c') == '"a\\"b\\\\c"'
    assert jackson_string("\n\t\r\b\f") == '"\\n\\t\\r\\b\\f"'
    assert jackson_string("\x00\x1f") == '"\\u0000\\u001F"'
    assert jackson_string("\\u001f") == '"\\\\u001f"'  # a literal backslash-u stays as written
    assert jackson_string("é€") == '"é€"'  # non-ASCII stays UTF-8 ...
    assert jackson_string("😀") == '"\\uD83D\\uDE00"'  # ... except beyond U+FFFF (surrogate pair)
