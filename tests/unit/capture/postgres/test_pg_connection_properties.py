"""PostgreSQL connection properties handed to libpq: pgjdbc's TLS files under libpq's names, the
key's password as a secret; database.initial.statements split as Debezium's JdbcConnection does."""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict

from lakecdc.capture.postgres.config import PostgresConnectorConfig


def config(**props: str) -> PostgresConnectorConfig:
    return PostgresConnectorConfig.from_properties({"topic.prefix": "p", **{k.replace("__", "."): v
                                                                             for k, v in props.items()}})


def test_tls_files_reach_libpq_under_its_names() -> None:
    cfg = config(database__sslmode="verify-full", database__sslcert="/etc/cdc/client's.crt",
                 database__sslkey="/etc/cdc/client.key", database__sslrootcert="/etc/cdc/root.crt",
                 database__sslpassword="k3y pass")
    parsed = conninfo_to_dict(cfg.conninfo())
    assert (parsed["sslcert"], parsed["sslkey"], parsed["sslrootcert"], parsed["sslpassword"]) == (
        "/etc/cdc/client's.crt", "/etc/cdc/client.key", "/etc/cdc/root.crt", "k3y pass")
    assert parsed["sslmode"] == "verify-full"
    assert "k3y pass" not in repr(cfg) and "k3y pass" not in str(cfg.given_properties())
    replication = conninfo_to_dict(cfg.conninfo(replication=True))
    assert replication["sslrootcert"] == "/etc/cdc/root.crt" and replication["replication"] == "database"


def test_without_tls_files_libpq_defaults_apply() -> None:
    parsed = conninfo_to_dict(config().conninfo())
    assert not {"sslcert", "sslkey", "sslrootcert", "sslpassword"} & set(parsed)


def test_initial_statements_split_on_semicolons_with_doubled_ones_kept() -> None:
    cfg = config(database__initial__statements="SET search_path = a;; SET x = 'a;;b' ; SELECT 1;")
    assert cfg.initial_statements == ("SET search_path = a; SET x = 'a;b'", "SELECT 1")
    assert config().initial_statements == ()
