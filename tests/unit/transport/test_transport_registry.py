"""make_sink: sink specs, configuration hand-over, and the missing-extra hint."""

from __future__ import annotations

import builtins
import sys
from pathlib import Path
from typing import Any

import pytest

from lakecdc.config import CommonConnectorConfig
from lakecdc.errors import ConfigError, MissingExtraError
from lakecdc.transport import JsonlSink, make_sink
from lakecdc.transport.kafka_config import PRODUCER_DEFAULTS, producer_settings


def test_jsonl_spec_with_config_flags(tmp_path: Path) -> None:
    cfg = CommonConnectorConfig.from_properties({"topic.prefix": "p", "key.converter.schemas.enable": "false"})
    sink = make_sink(f"jsonl:{tmp_path / 'x.jsonl'}", cfg)
    assert isinstance(sink, JsonlSink)
    assert sink._serializer.key_schemas_enable is False and sink._serializer.value_schemas_enable is True
    sink.close()


def test_jsonl_needs_a_path() -> None:
    with pytest.raises(ConfigError, match="needs a path"):
        make_sink("jsonl")


def test_unknown_sink_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown sink 'kinesis:x': use one of jsonl:PATH, kafka"):
        make_sink("kinesis:x")


def test_kafka_without_brokers_names_the_property() -> None:
    cfg = CommonConnectorConfig.from_properties({"topic.prefix": "p"})
    with pytest.raises(ConfigError) as info:
        make_sink("kafka", cfg)
    assert info.value.property_name == "bootstrap.servers"


def test_missing_kafka_extra_gives_pip_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_confluent(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("confluent_kafka"):
            raise ImportError("No module named 'confluent_kafka'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_confluent)
    for module in [m for m in sys.modules if m.startswith("confluent_kafka")]:
        monkeypatch.delitem(sys.modules, module)
    with pytest.raises(MissingExtraError, match=r"pip install 'lakecdc\[kafka\]'"):
        make_sink("kafka:127.0.0.1:1")


def test_producer_settings_defaults_and_overrides() -> None:
    settings = producer_settings("b:9092", {"compression.type": "zstd", "key.serializer": "org.x.S"})
    assert settings["compression.type"] == "zstd"
    assert settings["acks"] == "all" and settings["enable.idempotence"] is True
    assert "key.serializer" not in settings
    assert {k: v for k, v in PRODUCER_DEFAULTS.items() if k != "compression.type"}.items() <= settings.items()


def test_producer_jaas_and_secret_references(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKECDC_TEST_KPW", "kafka-pass-1")
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" password="pw-123";'
    settings = producer_settings("b:9092", {"sasl.jaas.config": jaas, "ssl.key.password": "env:LAKECDC_TEST_KPW"})
    assert settings["sasl.username"] == "svc" and settings["sasl.password"] == "pw-123"
    assert "sasl.jaas.config" not in settings
    assert settings["ssl.key.password"] == "kafka-pass-1"


def test_transactional_id_forces_idempotence() -> None:
    settings = producer_settings("b:9092", {"enable.idempotence": "false"}, transactional_id="cap-1")
    assert settings["transactional.id"] == "cap-1" and settings["enable.idempotence"] is True


def test_kafka_sink_rejects_unknown_producer_setting() -> None:
    from lakecdc.transport.kafka import KafkaSink

    with pytest.raises(ConfigError, match="no.such.setting"):
        KafkaSink("127.0.0.1:1", producer_config={"no.such.setting": "1"}, create_topics=False)
