"""PropertiesModel: Debezium names as aliases, unknown/invalid names reported with the closest name."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import Field

from lakecdc.config.base import PropertiesModel, literal_choices
from lakecdc.errors import ConfigError


class SlotModel(PropertiesModel):
    accepted_names = frozenset({"connector.class"})
    accepted_prefixes = ("producer.", "database.")
    legacy_names = {"database.server.name": "topic.prefix"}
    prefix_fields = {"snapshot.select.statement.overrides.": "overrides"}

    topic_prefix: str = Field(alias="topic.prefix")
    slot_name: str = Field("debezium", alias="slot.name")
    database_hostname: str | None = Field(None, alias="database.hostname")
    snapshot_mode: Literal["initial", "never", "when_needed"] = Field("initial", alias="snapshot.mode")
    port: int = Field(5432, alias="database.port")
    drop: bool = Field(False, alias="slot.drop.on.stop")
    query: str | None = Field(None, alias="heartbeat.action.query")
    overrides: dict[str, str] = Field(default_factory=dict)


def test_populates_by_debezium_name_and_by_field_name() -> None:
    by_alias = SlotModel.from_properties({"topic.prefix": "p", "slot.name": "s1", "database.port": "6543"})
    by_field = SlotModel.from_properties({"topic_prefix": "p", "slot_name": "s1", "port": 6543})
    assert by_alias == by_field
    assert by_alias.port == 6543


def test_unknown_property_suggests_closest_valid_name() -> None:
    with pytest.raises(ConfigError) as info:
        SlotModel.from_properties({"topic.prefix": "p", "slot.nam": "x"})
    assert str(info.value) == "unknown property 'slot.nam' — did you mean 'slot.name'?"
    assert info.value.property_name == "slot.nam"


def test_every_unknown_property_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        SlotModel.from_properties({"topic.prefix": "p", "snapshot.mod": "x", "completely.different": "y"})
    message = str(info.value)
    assert "unknown property 'snapshot.mod' — did you mean 'snapshot.mode'?" in message
    assert "unknown property 'completely.different'" in message
    assert message.count("did you mean") == 1


def test_passthrough_prefix_typo_of_known_name_is_still_unknown() -> None:
    with pytest.raises(ConfigError, match="'database.hostnme' — did you mean 'database.hostname'"):
        SlotModel.from_properties({"topic.prefix": "p", "database.hostnme": "h"})


def test_accepted_names_and_prefixes_are_kept() -> None:
    model = SlotModel.from_properties(
        {"topic.prefix": "p", "connector.class": "io.x.C", "producer.acks": "all", "database.sslmode": "require"}
    )
    assert model.passthrough == {"connector.class": "io.x.C", "producer.acks": "all", "database.sslmode": "require"}
    assert model.properties_with_prefix("producer.") == {"acks": "all"}


def test_invalid_choice_names_property_and_allowed_values() -> None:
    with pytest.raises(ConfigError) as info:
        SlotModel.from_properties({"topic.prefix": "p", "snapshot.mode": "sometimes"})
    assert str(info.value) == (
        "invalid value 'sometimes' for property 'snapshot.mode': allowed values are initial, never, when_needed"
    )
    assert info.value.property_name == "snapshot.mode"


def test_choices_are_case_insensitive_and_trimmed() -> None:
    model = SlotModel.from_properties({"topic.prefix": " p ", "snapshot.mode": " When_Needed "})
    assert model.snapshot_mode == "when_needed"
    assert model.topic_prefix == "p"


def test_invalid_number_and_bool_name_the_property() -> None:
    with pytest.raises(ConfigError, match="invalid value 'abc' for property 'database.port'"):
        SlotModel.from_properties({"topic.prefix": "p", "database.port": "abc"})
    with pytest.raises(ConfigError, match="property 'slot.drop.on.stop'"):
        SlotModel.from_properties({"topic.prefix": "p", "slot.drop.on.stop": "maybe"})


def test_missing_required_property() -> None:
    with pytest.raises(ConfigError, match="missing required property 'topic.prefix'"):
        SlotModel.from_properties({})


def test_empty_value_of_optional_property_means_default() -> None:
    model = SlotModel.from_properties({"topic.prefix": "p", "heartbeat.action.query": "", "slot.name": ""})
    assert model.query is None
    assert model.slot_name == "debezium"


def test_legacy_name_maps_to_current_and_conflicts_are_errors() -> None:
    assert SlotModel.from_properties({"database.server.name": "old"}).topic_prefix == "old"
    assert SlotModel.from_properties({"database.server.name": "same", "topic.prefix": "same"}).topic_prefix == "same"
    with pytest.raises(ConfigError, match="'topic.prefix' is given twice"):
        SlotModel.from_properties({"database.server.name": "a", "topic.prefix": "b"})


def test_prefix_fields_gather_dynamic_names() -> None:
    model = SlotModel.from_properties(
        {"topic.prefix": "p", "snapshot.select.statement.overrides.public.orders": "SELECT * FROM public.orders"}
    )
    assert model.overrides == {"public.orders": "SELECT * FROM public.orders"}


def test_models_are_frozen() -> None:
    model = SlotModel.from_properties({"topic.prefix": "p"})
    with pytest.raises(Exception, match="frozen"):
        model.slot_name = "other"  # type: ignore[misc]


def test_known_names_lists_aliases_kept_and_legacy_names() -> None:
    names = SlotModel.known_names()
    assert {"slot.name", "topic.prefix", "connector.class", "database.server.name"} <= set(names)
    assert "slot_name" not in names


def test_literal_choices_of_optional_literal() -> None:
    assert literal_choices(Literal["a", "b"] | None) == ("a", "b")
    assert literal_choices(int) is None
