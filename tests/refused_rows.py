"""Rows the JSON converter refuses, for tests of ``errors.tolerance`` on snapshot reads.

No real column value makes lakecdc's converter fail (it refuses only payloads that do not fit their
schema), so the compiled encoder itself (``RecordEncoder.encode_body``, which both the sink and a
parallel snapshot's worker processes encode with) is made to refuse the payloads of chosen rows, with
the ``ValueError`` its own failures raise. Patched before a snapshot's worker processes fork, it holds
in them too."""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

import pytest

from lakecdc.events.serde import RecordEncoder


def refuse_rows(monkeypatch: pytest.MonkeyPatch, topic: str, values: Collection[int] = (),
                keys: Collection[int] = ()) -> None:
    """Make the converter refuse, for the records of ``topic`` whose ``id`` is in ``values``, the
    value, and for those in ``keys``, the key."""
    real = RecordEncoder.encode_body
    value_schema, key_schema = f"{topic}.Envelope", f"{topic}.Key"

    def encode_body(self: RecordEncoder, payload: Any) -> bytes:
        name = self.schema.name
        if name == value_schema and isinstance(payload, dict) and (payload.get("after") or {}).get("id") in values:
            raise ValueError(f"refused the value of row {payload['after']['id']}")
        if name == key_schema and isinstance(payload, dict) and payload.get("id") in keys:
            raise ValueError(f"refused the key of row {payload['id']}")
        return real(self, payload)

    monkeypatch.setattr(RecordEncoder, "encode_body", encode_body)


def error_handler_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What Kafka Connect's error handler (``errors.log.enable``) logged about failed records."""
    return [r.getMessage() for r in caplog.records
            if r.name == "lakecdc.transforms" and r.levelno == logging.ERROR
            and r.getMessage().startswith("Error encountered in task")]
