"""Encode throughput of the event serde, side by side with plain ``json.dumps`` of the same payload.

Run: ``.venv/bin/python bench/bench_serde.py [--events N]``. Rows come from the real Debezium
workload: a typical ``customers`` update (8 columns: int, text, text, numeric, timestamptz,
boolean, jsonb, text[]; before and after images) and a small 2-column insert, each in the full
Debezium envelope with source and transaction blocks, as capture emits them.
The baseline is ``json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()`` of the
same envelope payload already turned into JSON types (bytes pre-encoded to base64) and without the
schema part, i.e. less work than the converter does; our figures include everything on the wire.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakecdc.events.schema import ConnectSchema
from lakecdc.events.serde import RecordEncoder
from lakecdc.events.values import connect_to_json, json_to_connect

WORKLOAD = Path(__file__).resolve().parents[1] / "tests" / "data" / "events" / "debezium-3.6.3-pg-workload.jsonl"


def workload_record(topic: str, op: str) -> tuple[ConnectSchema, Any]:
    for line in WORKLOAD.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        value = record["value"]
        if record["topic"] == topic and value and value["payload"].get("op") == op:
            schema = ConnectSchema.from_json(value["schema"])
            return schema, json_to_connect(schema, value["payload"])
    raise SystemExit(f"no {op!r} event on {topic} in {WORKLOAD}")


def rate(fn: Callable[[], Any], events: int) -> tuple[float, float]:
    """(events per wall-clock second, events per CPU second of this process).

    The CPU figure is what the code costs; the wall figure also counts time the machine gave to
    other processes, so on a shared machine it is lower.
    """
    fn()  # warm up
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(events):
        fn()
    return events / (time.perf_counter() - wall), events / (time.process_time() - cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()

    cases = [
        ("customers UPDATE (8 columns, before+after)", *workload_record("dbz.public.customers", "u")),
        ("nopk_events INSERT (2 columns)", *workload_record("dbz.public.nopk_events", "c")),
    ]
    for title, schema, payload in cases:
        with_schema = RecordEncoder(schema, schemas_enable=True)
        without_schema = RecordEncoder(schema, schemas_enable=False)
        json_payload = connect_to_json(schema, payload)

        def baseline(tree: Any = json_payload) -> bytes:
            return json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode()

        rows = [
            ("lakecdc RecordEncoder, schemas.enable=true", with_schema.encode, with_schema.encode(payload)),
            ("lakecdc RecordEncoder, schemas.enable=false", without_schema.encode, without_schema.encode(payload)),
            ("baseline json.dumps(payload), no schema", lambda _p: baseline(), baseline()),
        ]
        print(f"{title}: full Debezium envelope, {args.events} events per line")
        for label, encode, sample in rows:
            wall, cpu = rate(lambda encode=encode: encode(payload), args.events)
            print(f"  {label:<46} {cpu:>10,.0f} events/CPU-s {wall:>10,.0f} events/s wall"
                  f"   {len(sample or b''):>6} bytes/event")


if __name__ == "__main__":
    main()
