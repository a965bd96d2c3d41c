"""The dead-letter sink's summary names a record's topic, partition and offset once: the decoder's
reason already starts with them (docs/CONTRACTS.md), the log line used to repeat the prefix."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

import pytest
from ingest_records import encode, golden_records, kafka_table

from lakecdc.config.ingest import IngestConfig
from lakecdc.ingest.dead_letter import DeadLetterSink
from lakecdc.ingest.decode import Decoder


def test_a_dead_letter_is_logged_with_its_position_once(caplog: pytest.LogCaptureFixture) -> None:
    good = next(r for r in golden_records() if r["value"] is not None and r["topic"].endswith("customers"))
    table = kafka_table([(good["topic"], encode(good["key"]), b"{not json")])
    config = IngestConfig.from_properties({"kafka.bootstrap.servers": "127.0.0.1:1", "topic.prefix": "dbz"})
    letters = Decoder(config).decode(table, datetime(2026, 11, 22, tzinfo=timezone.utc)).dead_letters
    assert len(letters) == 1
    prefix = f"topic '{good['topic']}' partition 0 offset 0: "
    assert letters[0].reason.startswith(prefix)  # the reason stored in the dead-letter table
    stored: list[list[dict]] = []
    with caplog.at_level(logging.WARNING, logger="lakecdc.ingest.dead_letter"):
        DeadLetterSink(stored.append).write(letters)
    assert stored[0][0]["reason"] == letters[0].reason
    message = caplog.records[-1].getMessage()
    assert message.count("partition 0 offset 0") == 1, message
    assert message.endswith(letters[0].reason), message
