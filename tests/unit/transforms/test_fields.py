"""InsertField, ReplaceField, MaskField, ValueToKey and HeaderToValue on lakecdc's records."""

from __future__ import annotations

import decimal
import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakecdc.errors import ConfigError
from lakecdc.events.logical import decimal_schema
from lakecdc.events.schema import INT32, STRING, primitive, struct
from lakecdc.events.serde import RecordEncoder
from lakecdc.transforms import TransformDataError, build_chain

from .records import ROW, change, delete_pair, row

K = "org.apache.kafka.connect.transforms."
UNWRAP = {"transforms.u.type": "io.debezium.transforms.ExtractNewRecordState"}


def chain(names: str, **props: str):  # noqa: ANN201
    return build_chain({"transforms": names, **UNWRAP, **{k.replace("__", "."): v for k, v in props.items()}})


def unwrapped(record, *more: str, **props: str):  # noqa: ANN001, ANN201
    out = chain(",".join(["u", *more]), **props).apply([record])
    return out[0] if out else None


def test_insert_field_topic_static_and_absent_timestamp() -> None:
    out = unwrapped(change("c", None, row(1)), "i", transforms__i__type=K + "InsertField$Value",
                    transforms__i__topic__field="t!", transforms__i__static__field="s",
                    transforms__i__static__value="v", transforms__i__timestamp__field="ts")
    schema = out.value_schema
    assert schema.field_names[-3:] == ("t", "ts", "s")
    assert schema.field("t").schema == STRING and schema.field("s").schema.optional
    assert schema.field("ts").schema.name == "org.apache.kafka.connect.data.Timestamp"
    assert (out.value["t"], out.value["s"], out.value["ts"]) == ("dbz.public.items", "v", None)


@pytest.mark.parametrize("part", ["Value", "Key"])
def test_insert_field_offset_field_fails_every_source_record_as_kafka_connect(part: str) -> None:
    """Connect accepts offset.field and fails each source record with a value/key to insert into
    (requireSinkRecord); a tombstone (no value) passes through untouched, and errors.tolerance=all
    skips the failing records."""
    props = {"transforms.i.type": K + f"InsertField${part}", "transforms.i.offset.field": "off"}
    insert = build_chain({"transforms": "i", **props})
    with pytest.raises(TransformDataError, match=r"Only SinkRecord supported for \[field insertion\], found: "
                                                 r"org\.apache\.kafka\.connect\.source\.SourceRecord"):
        insert.apply([change("c", None, row(1))])
    tolerant = build_chain({"transforms": "i", **props, "errors.tolerance": "all"})
    deleted, tombstone = delete_pair(1)
    expected = [tombstone] if part == "Value" else []
    assert tolerant.apply([change("c", None, row(1)), deleted, tombstone]) == expected


def test_insert_field_needs_a_field_and_a_static_value() -> None:
    with pytest.raises(ConfigError, match="No field insertion configured"):
        chain("i", transforms__i__type=K + "InsertField$Value")
    with pytest.raises(ConfigError, match="static.value"):
        chain("i", transforms__i__type=K + "InsertField$Value", transforms__i__static__field="x")


@given(st.sets(st.sampled_from(ROW.field_names)), st.sets(st.sampled_from(ROW.field_names)),
       st.dictionaries(st.sampled_from(ROW.field_names), st.from_regex(r"[a-z]{1,6}", fullmatch=True), max_size=2))
def test_replace_field_keeps_renames_in_schema_order(exclude: set[str], include: set[str],
                                                     renames: dict[str, str]) -> None:
    targets = [renames.get(n, n) for n in ROW.field_names if n not in exclude and (not include or n in include)]
    props = {"transforms__r__type": K + "ReplaceField$Value", "transforms__r__exclude": ",".join(sorted(exclude)),
             "transforms__r__include": ",".join(sorted(include)),
             "transforms__r__renames": ",".join(f"{a}:{b}" for a, b in renames.items())}
    if len(set(targets)) != len(targets):
        with pytest.raises(TransformDataError):
            unwrapped(change("c", None, row(1)), "r", **props)
        return
    out = unwrapped(change("c", None, row(1)), "r", **props)
    assert list(out.value_schema.field_names) == targets and list(out.value) == targets
    reverse = {b: a for a, b in renames.items()}
    assert all(out.value[t] == row(1)[reverse.get(t, t)] for t in targets)
    assert not out.value_schema.optional and out.value_schema.name == ROW.name


def test_replace_field_renames_must_be_pairs() -> None:
    with pytest.raises(ConfigError, match="Invalid rename mapping: a"):
        chain("r", transforms__r__type=K + "ReplaceField$Value", transforms__r__renames="a")


def masked(value_schema, value, **props: str):  # noqa: ANN001, ANN201
    record = replace(change("c", None, row(1)), value_schema=value_schema, value=value)
    return build_chain({"transforms": "m", "transforms.m.type": K + "MaskField$Value",
                        **{f"transforms.m.{k}": v for k, v in props.items()}}).apply([record])[0].value


def test_mask_field_empty_values_per_type() -> None:
    schema = struct([("i", INT32), ("s", primitive("string", True)), ("b", primitive("boolean")),
                     ("d", primitive("double")), ("n", primitive("string", True)),
                     ("dec", decimal_schema(0, 6)),
                     ("day", primitive("int32", name="org.apache.kafka.connect.data.Date"))])
    value = {"i": 5, "s": "x", "b": True, "d": 1.5, "n": None, "dec": b"\x7f", "day": 19000}
    assert masked(schema, value, fields="i,s,b,d,n,dec,day") == {
        "i": 0, "s": "", "b": False, "d": 0.0, "n": None, "dec": b"\x00", "day": 0}
    assert masked(schema, value, fields="i,s,d", replacement="12") == {**value, "i": 12, "s": "12", "d": 12.0}
    with pytest.raises(TransformDataError, match="with custom replacement"):
        masked(schema, value, fields="b", replacement="1")
    with pytest.raises(TransformDataError, match="to number"):
        masked(schema, value, fields="i", replacement="abc")
    # Connect's MaskField puts BigDecimal.ZERO (scale 0) in a scale-2 field: Struct.put checks the class
    # only, so the transform succeeds and the JSON converter refuses the record (Decimal.fromLogical)
    scaled = struct([("p", decimal_schema(2, 6))])
    assert masked(scaled, {"p": b"\x01"}, fields="p") == {"p": decimal.Decimal(0)}
    assert masked(scaled, {"p": b"\x01"}, fields="p", replacement="3") == {"p": decimal.Decimal(3)}
    assert masked(scaled, {"p": b"\x01"}, fields="p", replacement="1.50") == {"p": b"\x00\x96"}  # 150, scale 2
    for text in ("NaN", "-Infinity", "1e"):
        with pytest.raises(TransformDataError, match=f"Unable to convert {text} "):
            masked(scaled, {"p": b"\x01"}, fields="p", replacement=text)
    with pytest.raises(ValueError, match="does not fit schema"):
        RecordEncoder(scaled).encode({"p": decimal.Decimal(0)})


def test_mask_field_fails_on_a_tombstone_as_kafka_connect_does() -> None:
    with pytest.raises(TransformDataError, match="transform 'm'"):
        build_chain({"transforms": "m", "transforms.m.type": K + "MaskField$Value",
                     "transforms.m.fields": "x"}).apply([delete_pair(1)[1]])


def test_value_to_key_builds_an_unnamed_struct_key() -> None:
    out = unwrapped(change("c", None, row(3, "n")), "k", transforms__k__type=K + "ValueToKey",
                    transforms__k__fields="name,id")
    assert out.key == {"name": "n", "id": 3}
    assert out.key_schema.name is None and out.key_schema.field_names == ("name", "id")
    assert out.key_schema.field("name").schema == ROW.field("name").schema
    with pytest.raises(TransformDataError, match="Field does not exist: nope"):
        unwrapped(change("c", None, row(3)), "k", transforms__k__type=K + "ValueToKey", transforms__k__fields="nope")


def test_header_to_value_copy_and_move() -> None:
    props = {"transforms__u__add__headers": "op,table", "transforms__h__type": "io.debezium.transforms.HeaderToValue",
             "transforms__h__headers": "__op,__table", "transforms__h__fields": "op,tbl"}
    copied = unwrapped(change("c", None, row(1)), "h", transforms__h__operation="copy", **props)
    assert copied.value["op"] == "c" and copied.value["tbl"] == "items"
    assert copied.value_schema.field("op").schema.optional and any(k == "__op" for k, _ in copied.headers)
    moved = unwrapped(change("c", None, row(1)), "h", transforms__h__operation="move", **props)
    assert not any(k in ("__op", "__table") for k, _ in moved.headers)
    assert json.loads(moved.headers[0][1])["payload"] == "dbz"  # the record's own headers stay
    with pytest.raises(ConfigError, match="same number"):
        chain("h", transforms__h__type="io.debezium.transforms.HeaderToValue", transforms__h__headers="a,b",
              transforms__h__fields="x", transforms__h__operation="copy")
