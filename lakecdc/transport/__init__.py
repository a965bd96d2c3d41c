"""Capture outputs: the ``Sink`` protocol, Kafka and JSON-lines sinks, and ``make_sink``.

``KafkaSink`` needs the ``kafka`` extra; it is imported only when asked for, so
``from lakecdc.transport import make_sink`` works without confluent-kafka installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakecdc.transport.jsonl import JsonlSink, read_jsonl
from lakecdc.transport.registry import make_sink
from lakecdc.transport.sink import RecordSerializer, Sink

if TYPE_CHECKING:
    from lakecdc.transport.kafka import KafkaSink

__all__ = ["JsonlSink", "KafkaSink", "RecordSerializer", "Sink", "make_sink", "read_jsonl"]


def __getattr__(name: str) -> Any:
    if name == "KafkaSink":
        try:
            from lakecdc.transport.kafka import KafkaSink
        except ImportError as exc:
            from lakecdc.errors import MissingExtraError

            raise MissingExtraError("KafkaSink", "kafka", str(exc)) from None
        return KafkaSink
    raise AttributeError(f"module 'lakecdc.transport' has no attribute {name!r}")
