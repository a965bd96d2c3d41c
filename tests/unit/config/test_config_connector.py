"""CommonConnectorConfig: shared Debezium properties, defaults, parsed views and cross-checks."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import Field
from shared_paths import SHARED_ROOT

from lakecdc.config import CommonConnectorConfig, load_properties
from lakecdc.errors import ConfigError

SHARED_PROPERTIES = SHARED_ROOT / "conformance/postgres/workload.properties"


class PgLike(CommonConnectorConfig):
    """What a connector subclass looks like: its own names and its snapshot modes."""

    snapshot_modes: ClassVar[tuple[str, ...]] = ("initial", "always", "never", "initial_only", "when_needed", "no_data")
    excluded_schemas: ClassVar[frozenset[str]] = frozenset({"pg_catalog", "information_schema"})
    database_port: int | None = Field(5432, alias="database.port")
    slot_name: str = Field("debezium", alias="slot.name")
    plugin_name: str = Field("decoderbufs", alias="plugin.name")
    publication_name: str = Field("dbz_publication", alias="publication.name")
    publication_autocreate_mode: str = Field("all_tables", alias="publication.autocreate.mode")


def base(**extra: str) -> dict[str, str]:
    return {"topic.prefix": "shop", **extra}


def test_shared_debezium_file_validates_with_a_connector_subclass() -> None:
    props = load_properties(SHARED_PROPERTIES, environ={})
    props["offset.storage.file.filename"] = "/tmp/offsets.dat"
    cfg = PgLike.from_properties(props)
    assert cfg.topic_prefix == "dbz"
    assert cfg.provide_transaction_metadata is True
    assert cfg.offset_storage_kind == "file"
    assert cfg.passthrough["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert cfg.table_filter.matches("public", "customers")
    assert not cfg.table_filter.matches("public", "orders")
    assert cfg.skipped_operation_codes == frozenset()  # the file sets skipped.operations=none


def test_debezium_defaults() -> None:
    cfg = CommonConnectorConfig.from_properties(base())
    assert (cfg.max_batch_size, cfg.max_queue_size, cfg.poll_interval_ms) == (2048, 8192, 500)
    assert cfg.tombstones_on_delete is True
    assert cfg.provide_transaction_metadata is False
    assert cfg.decimal_handling_mode == "precise" and cfg.time_precision_mode == "adaptive"
    assert cfg.binary_handling_mode == "bytes"
    assert cfg.unavailable_value_placeholder == "__debezium_unavailable_value"
    assert cfg.topic_transaction == "transaction" and cfg.topic_heartbeat_prefix == "__debezium-heartbeat"
    assert cfg.incremental_snapshot_chunk_size == 1024
    assert cfg.skipped_operation_codes == frozenset({"t"})
    assert cfg.offset_storage_kind == "memory"
    assert cfg.key_schemas_enable and cfg.value_schemas_enable


def test_legacy_names_of_renamed_properties() -> None:
    cfg = CommonConnectorConfig.from_properties(
        {
            "database.server.name": "legacy",
            "table.whitelist": "public.a",
            "transaction.topic": "tx",  # accepted, no effect (as in Debezium 3.6)
            "database.history.kafka.topic": "hist",
        }
    )
    assert cfg.topic_prefix == "legacy"
    assert cfg.table_include_list == "public.a"
    assert cfg.topic_transaction == "transaction" and cfg.ignored_properties() == ["transaction.topic"]
    assert cfg.schema_history_internal_kafka_topic == "hist"


def test_snapshot_mode_is_validated_by_the_subclass_set() -> None:
    assert PgLike.from_properties(base(**{"snapshot.mode": "NO_DATA"})).snapshot_mode == "no_data"
    with pytest.raises(ConfigError) as info:
        PgLike.from_properties(base(**{"snapshot.mode": "schema_only_recovery"}))
    assert info.value.property_name == "snapshot.mode"
    assert "allowed values are initial, always, never, initial_only, when_needed, no_data" in str(info.value)


def test_subclass_property_typo_suggests_subclass_name() -> None:
    with pytest.raises(ConfigError,
                       match="unknown property 'publication.autocreate' — did you mean 'publication.autocreate.mode'"):
        PgLike.from_properties(base(**{"publication.autocreate": "filtered"}))


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (base(**{"table.include.list": "a", "table.exclude.list": "b"}),
         "'table.include.list' and 'table.exclude.list' cannot both"),
        (base(**{"schema.include.list": "a", "schema.exclude.list": "b"}),
         "'schema.include.list' and 'schema.exclude.list'"),
        (base(**{"column.include.list": "a", "column.exclude.list": "b"}),
         "'column.include.list' and 'column.exclude.list'"),
        (base(**{"table.include.list": "public.(x"}),
         "'table.include.list': 'public.\\(x' is not a valid regular expression"),
        (base(**{"skipped.operations": "c,z"}),
         "'skipped.operations': allowed values are a comma list of c, u, d, t, or none"),
        ({"topic.prefix": "my topic"}, "'topic.prefix': only letters, digits"),
        (base(**{"max.batch.size": "8192"}),
         "'max.queue.size' \\(8192\\) must be larger than 'max.batch.size' \\(8192\\)"),
        (base(**{"offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore"}),
         "needs property 'offset.storage.file.filename'"),
        (base(**{"offset.storage": "kafka"}), "needs property 'offset.storage.topic'"),
        (base(**{"offset.storage": "redis"}), "invalid value 'redis' for property 'offset.storage'"),
        (base(**{"value.converter": "io.confluent.connect.avro.AvroConverter"}), "'value.converter' is 'io.confluent"),
        (base(**{"message.key.columns": "public.t"}),
         "'message.key.columns': 'public.t' is not '<table regex>:<column>"),
        (base(**{"snapshot.select.statement.overrides": "public.t"}),
         "'snapshot.select.statement.overrides.public.t' is missing"),
        (base(**{"column.mask.with.x.chars": "a.b.c"}), "'column.mask.with.x.chars' must end with '.<number>.chars'"),
        (base(**{"database.port": "70000"}), "invalid value '70000' for property 'database.port'"),
        (base(**{"binary.handling.mode": "base32"}), "allowed values are bytes, base64, base64-url-safe, hex"),
    ],
)
def test_invalid_configurations_name_the_property(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CommonConnectorConfig.from_properties(props)


def test_skipped_operations_none_and_lists() -> None:
    none = CommonConnectorConfig.from_properties(base(**{"skipped.operations": "none"}))
    assert none.skipped_operation_codes == frozenset()
    cfg = CommonConnectorConfig.from_properties(base(**{"skipped.operations": "U, d"}))
    assert cfg.skipped_operation_codes == frozenset({"u", "d"})


def test_message_key_columns_parsed_per_table() -> None:
    cfg = CommonConnectorConfig.from_properties(base(**{"message.key.columns": "public.orders:a, b;(.*).items:c"}))
    assert cfg.key_columns.for_table("public", "orders") == ["a", "b"]
    assert cfg.key_columns.for_table("sales", "items") == ["c"]
    assert cfg.key_columns.for_table("public", "other") is None


def test_snapshot_select_statement_overrides_per_table() -> None:
    cfg = CommonConnectorConfig.from_properties(
        base(
            **{
                "snapshot.select.statement.overrides": "public.orders,public.items",
                "snapshot.select.statement.overrides.public.orders": "SELECT * FROM public.orders WHERE id > 10",
                "snapshot.select.statement.overrides.public.items": "SELECT * FROM public.items LIMIT 5",
            }
        )
    )
    assert cfg.snapshot_select_statements == {
        "public.orders": "SELECT * FROM public.orders WHERE id > 10",
        "public.items": "SELECT * FROM public.items LIMIT 5",
    }


def test_column_mask_truncate_and_hash_rules() -> None:
    cfg = CommonConnectorConfig.from_properties(
        base(
            **{
                "column.truncate.to.20.chars": "public.t.note",
                "column.mask.with.5.chars": "public.t.card,public.u.card",
                "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K": "public.t.email",
            }
        )
    )
    kinds = [(r.kind, r.length, r.algorithm, r.salt) for r in cfg.column_rules]
    assert kinds == [("truncate", 20, None, None), ("mask", 5, None, None), ("hash", None, "SHA-256", "CzQMA0cB5K")]
    assert cfg.column_rules[1].applies_to("public.u", "card")
    assert not cfg.column_rules[1].applies_to("public.u", "name")


def test_converter_schemas_enable_precedence() -> None:
    cfg = CommonConnectorConfig.from_properties(
        base(**{"converter.schemas.enable": "false", "value.converter.schemas.enable": "true"})
    )
    assert cfg.key_schemas_enable is False
    assert cfg.value_schemas_enable is True


def test_offset_and_history_store_kinds() -> None:
    cfg = CommonConnectorConfig.from_properties(
        base(**{"offset.storage.topic": "offsets",
                "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory"})
    )
    assert cfg.offset_storage_kind == "kafka"
    assert cfg.schema_history_kind == "file"  # PostgreSQL-like connectors ignore history: no filename needed


def test_passthrough_groups_and_ignored_properties() -> None:
    cfg = CommonConnectorConfig.from_properties(
        base(
            **{
                "producer.compression.type": "zstd",
                "producer.linger.ms": "20",
                "topic.creation.default.partitions": "3",
                "transforms": "unwrap",
                "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
                "signal.kafka.topic": "signals",
            }
        )
    )
    assert cfg.producer_properties() == {"compression.type": "zstd", "linger.ms": "20"}
    assert cfg.topic_creation_properties() == {"partitions": "3"}
    assert cfg.ignored_properties() == []  # the transform is applied (lakecdc.transforms)
    assert [stage.alias for stage in cfg.transform_chain.stages] == ["unwrap"]


def test_password_secret_and_given_properties_masked() -> None:
    cfg = CommonConnectorConfig.from_properties(base(**{"database.password": "pa55word-xyz"}))
    assert cfg.database_password is not None
    assert cfg.database_password.get_secret_value() == "pa55word-xyz"
    assert "pa55word-xyz" not in repr(cfg)
    assert cfg.given_properties()["database.password"] == "******"


def test_yaml_file_gives_the_same_config_as_properties_file(tmp_path: Path) -> None:
    props_file = tmp_path / "c.properties"
    props_file.write_text("topic.prefix=shop\ndatabase.hostname=db1\ndatabase.port=5433\ntable.include.list=public.a,public.b\n")
    yaml_file = tmp_path / "c.yaml"
    yaml_file.write_text("topic.prefix: shop\ndatabase:\n  hostname: db1\n  port: 5433\ntable.include.list: "
                         "[public.a, public.b]\n")
    assert PgLike.from_file(props_file, environ={}) == PgLike.from_file(yaml_file, environ={})


def test_env_override_through_from_file(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("topic.prefix=shop\n")
    cfg = PgLike.from_file(path,
                           environ={"LAKECDC_CONFIG_SLOT_NAME": "from_env", "LAKECDC_CONFIG_SNAPSHOT_MODE": "never"})
    assert cfg.slot_name == "from_env"
    assert cfg.snapshot_mode == "never"


def test_errors_from_a_file_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "pg.properties"
    path.write_text("topic.prefix=shop\nslot.nam=x\n")
    with pytest.raises(ConfigError) as info:
        PgLike.from_file(path, environ={})
    assert str(info.value) == f"{path}: unknown property 'slot.nam' — did you mean 'slot.name'?"
    assert info.value.property_name == "slot.nam"
