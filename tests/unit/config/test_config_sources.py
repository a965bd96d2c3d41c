"""Reading .properties and YAML files into flat Debezium property maps."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_paths import SHARED_ROOT

from lakecdc.config.sources import (
    apply_env_overrides,
    env_name,
    load_properties,
    parse_java_properties,
    parse_yaml_properties,
)
from lakecdc.errors import ConfigError

SHARED_PROPERTIES = SHARED_ROOT / "conformance/postgres/workload.properties"


def test_java_properties_separators_comments_and_blank_lines() -> None:
    text = "# comment\n! also a comment\n\n  a.b=1\nc : two\nd three\ne=\nf\n"
    assert parse_java_properties(text) == {"a.b": "1", "c": "two", "d": "three", "e": "", "f": ""}


def test_java_properties_continuations_drop_leading_whitespace() -> None:
    text = "table.include.list=public.a,\\\n    public.b,\\\n\tpublic.c\nnext=x\n"
    assert parse_java_properties(text) == {"table.include.list": "public.a,public.b,public.c", "next": "x"}


def test_java_properties_even_backslashes_do_not_continue() -> None:
    assert parse_java_properties("path=C:\\\\dir\\\\\nnext=1") == {"path": "C:\\dir\\", "next": "1"}


def test_java_properties_escapes_and_escaped_separators_in_keys() -> None:
    text = "my\\=key\\ x = tab\\tnl\\nuni\\u00e9 \\#x\nk2=a\\:b\n"
    assert parse_java_properties(text) == {"my=key x": "tab\tnl\nunié #x", "k2": "a:b"}


def test_java_properties_comment_line_ending_in_backslash_does_not_swallow_next_line() -> None:
    assert parse_java_properties("# comment \\\nkey=v") == {"key": "v"}


def test_java_properties_crlf_and_last_duplicate_wins() -> None:
    assert parse_java_properties("a=1\r\nb=2\ra=3") == {"a": "3", "b": "2"}


def test_java_properties_malformed_unicode_escape_is_an_error() -> None:
    with pytest.raises(ConfigError, match="uxxxx"):
        parse_java_properties("a=\\u12G4")


def test_shared_debezium_properties_file_loads_unchanged() -> None:
    props = load_properties(SHARED_PROPERTIES, environ={})
    assert props["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert props["table.include.list"] == "public.customers,public.audit_full,public.nopk_events"
    assert props["topic.prefix"] == "dbz"
    lines = [line for line in SHARED_PROPERTIES.read_text().splitlines() if "=" in line]
    assert len(props) == len(lines)  # one property per line, none lost


def test_yaml_nested_and_dotted_forms_are_equal() -> None:
    nested = parse_yaml_properties("database:\n  hostname: db1\n  port: 5432\nslot: {name: s1}\n")
    dotted = parse_yaml_properties("database.hostname: db1\ndatabase.port: 5432\nslot.name: s1\n")
    assert nested == dotted == {"database.hostname": "db1", "database.port": "5432", "slot.name": "s1"}


def test_yaml_scalars_become_java_strings() -> None:
    props = parse_yaml_properties(
        "tombstones.on.delete: false\nprovide.transaction.metadata: true\n"
        "table.include.list: [public.a, public.b]\nheartbeat.action.query: null\n"
    )
    assert props == {
        "tombstones.on.delete": "false",
        "provide.transaction.metadata": "true",
        "table.include.list": "public.a,public.b",
        "heartbeat.action.query": "",
    }


@pytest.mark.parametrize(
    "text",
    [
        "name: inv\nconfig:\n  topic.prefix: shop\n",
        "connector:\n  name: inv\n  config:\n    topic: {prefix: shop}\n",
        '{"name": "inv", "config": {"topic.prefix": "shop"}}',
        "connector:\n  name: inv\n  topic.prefix: shop\n",
    ],
)
def test_yaml_connector_and_config_sections(text: str) -> None:
    assert parse_yaml_properties(text) == {"name": "inv", "topic.prefix": "shop"}


def test_yaml_same_property_twice_is_an_error() -> None:
    with pytest.raises(ConfigError, match="'database.hostname' is given twice"):
        parse_yaml_properties("database.hostname: a\ndatabase:\n  hostname: b\n")


def test_yaml_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match="must hold a mapping"):
        parse_yaml_properties("- a\n- b\n")


def test_yaml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="bad.yaml' is not valid YAML"):
        load_properties(path, environ={})


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read configuration file .*nope.properties"):
        load_properties(tmp_path / "nope.properties", environ={})


def test_latin1_properties_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_bytes("note=caf\u00e9\n".encode("iso-8859-1"))
    assert load_properties(path, environ={}) == {"note": "café"}


def test_env_overrides_replace_known_and_add_new_names(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("database.hostname=db1\nslot.name=a\n")
    environ = {
        "LAKECDC_CONFIG_DATABASE_HOSTNAME": "db2",
        "LAKECDC_CONFIG_SNAPSHOT_FETCH_SIZE": "100",
        "LAKECDC_CONFIG_PUBLICATION_AUTOCREATE_MODE": "filtered",
        "LAKECDC_HOME": "/not/a/property",
    }
    props = load_properties(path, environ=environ, known_names=["publication.autocreate.mode"])
    assert props == {
        "database.hostname": "db2",
        "slot.name": "a",
        "snapshot.fetch.size": "100",
        "publication.autocreate.mode": "filtered",
    }


def test_env_name_and_hyphenated_names() -> None:
    assert env_name("binary.handling.mode") == "LAKECDC_CONFIG_BINARY_HANDLING_MODE"
    props = apply_env_overrides({"a-b.c": "1"}, {"LAKECDC_CONFIG_A_B_C": "2"})
    assert props == {"a-b.c": "2"}
