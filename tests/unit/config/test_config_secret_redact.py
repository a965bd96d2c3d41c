"""Secrets: lazy env:/file: resolution, never shown in repr, dumps, logs or exception texts."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import Field

from lakecdc.config.base import PropertiesModel
from lakecdc.config.redact import (
    MASK,
    SecretRedactingFilter,
    forget_secrets,
    install_log_redaction,
    redact,
    register_secret,
    uninstall_log_redaction,
)
from lakecdc.config.secret import Secret
from lakecdc.errors import ConfigError, SecretResolutionError


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    forget_secrets()
    yield
    uninstall_log_redaction()  # leave the process's logging as other tests expect it
    forget_secrets()


class Creds(PropertiesModel):
    password: Secret = Field(alias="database.password")
    port: int = Field(5432, alias="database.port")


def test_env_reference_resolves_lazily() -> None:
    environ: dict[str, str] = {}
    secret = Secret("env:PGPASSWORD", environ=environ)
    assert secret.kind == "env"
    environ["PGPASSWORD"] = "late-value-1"
    assert secret.get_secret_value() == "late-value-1"


def test_missing_env_variable_names_the_reference_only() -> None:
    with pytest.raises(SecretResolutionError, match="'env:NOPE_PW': variable NOPE_PW is not set"):
        Secret("env:NOPE_PW", environ={}).get_secret_value()


def test_file_reference_drops_one_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "pg"
    path.write_text("from-file-pw\n")
    assert Secret(f"file:{path}").get_secret_value() == "from-file-pw"


def test_unreadable_file_reference_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SecretResolutionError, match="file:.*missing"):
        Secret(f"file:{tmp_path / 'missing'}").get_secret_value()


def test_literal_and_escaped_literal() -> None:
    assert Secret("plain-pass").get_secret_value() == "plain-pass"
    assert Secret("literal:env:looks-like-ref").get_secret_value() == "env:looks-like-ref"


def test_repr_str_and_model_dumps_never_show_the_value() -> None:
    model = Creds.from_properties({"database.password": "hunter2hunter2"})
    texts = [repr(model), str(model), model.model_dump_json(), str(model.model_dump(by_alias=True)),
             str(model.given_properties()), repr(model.password), str(model.password)]
    for text in texts:
        assert "hunter2hunter2" not in text
    assert model.model_dump(by_alias=True)["database.password"] == MASK
    assert model.password.get_secret_value() == "hunter2hunter2"


def test_reference_is_shown_but_not_its_value() -> None:
    assert repr(Secret("env:PGPASSWORD", environ={"PGPASSWORD": "abcdef"})) == "Secret('env:PGPASSWORD')"


def test_invalid_value_error_for_secret_property_masks_input() -> None:
    with pytest.raises(ConfigError) as info:
        Creds.from_properties({"database.password": ["a-list-password"]})
    assert "a-list-password" not in str(info.value)
    assert "database.password" in str(info.value)


def test_resolved_secret_is_redacted_in_text() -> None:
    Secret("env:PW", environ={"PW": "Zq9-secret"}).get_secret_value()
    assert redact("auth failed for Zq9-secret") == f"auth failed for {MASK}"


def test_redact_masks_dsn_passwords_even_when_unregistered() -> None:
    text = "dsn host=db password='a b' user=x; url postgresql://u:pw123@h:5432/d; password=plain end"
    assert redact(text) == (f"dsn host=db password={MASK} user=x; url postgresql://u:{MASK}@h:5432/d; "
                            f"password={MASK} end")


def test_short_values_are_not_registered() -> None:
    register_secret("ab")
    assert redact("ab cab") == "ab cab"


def test_longest_secret_masked_first() -> None:
    register_secret("abcd")
    register_secret("abcdefgh")
    assert redact("x abcdefgh y abcd") == f"x {MASK} y {MASK}"


def _capture_logger(name: str) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger(name)
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, stream


def test_log_filter_masks_message_args_and_traceback() -> None:
    Secret("literal-S3cret-value")
    logger, stream = _capture_logger("lakecdc.test.redact")
    install_log_redaction(logger)
    install_log_redaction(logger)  # idempotent
    assert sum(isinstance(f, SecretRedactingFilter) for f in logger.handlers[0].filters) == 1
    logger.info("connecting with %s", "literal-S3cret-value")
    try:
        raise RuntimeError("driver said: password literal-S3cret-value rejected")
    except RuntimeError:
        logger.exception("connect failed")
    output = stream.getvalue()
    assert "literal-S3cret-value" not in output
    assert output.count(MASK) == 3  # the argument, the traceback source line, the exception text
    assert "RuntimeError: driver said: password ****** rejected" in output


def test_log_filter_keeps_records_with_broken_format_strings() -> None:
    logger, stream = _capture_logger("lakecdc.test.redact2")
    install_log_redaction(logger)
    logger.info("bad %d format", "not-a-number")
    assert "bad %d format" in stream.getvalue()


def test_handlers_added_after_installation_are_covered_too() -> None:
    install_log_redaction(logging.getLogger("lakecdc.test.none"))
    Secret("late-handler-secret-1")
    logger, stream = _capture_logger("lakecdc.test.redact3")  # handler created after install, no filter
    assert not any(isinstance(f, SecretRedactingFilter) for f in logger.handlers[0].filters)
    logger.warning("value=%s", "late-handler-secret-1")
    try:
        raise ValueError("late-handler-secret-1 in an exception")
    except ValueError:
        logger.exception("boom")
    assert "late-handler-secret-1" not in stream.getvalue()
    assert stream.getvalue().count(MASK) >= 3
    uninstall_log_redaction()
    logger.warning("after uninstall: %s", "late-handler-secret-1")
    assert stream.getvalue().endswith("after uninstall: late-handler-secret-1\n")


def test_connection_string_is_whole_for_drivers_and_masked_in_tracebacks() -> None:
    from lakecdc.config.redact import ConnectionString

    dsn = ConnectionString("host=db port=5432 user=u password=Zq9-unique-pw dbname=x")
    url = ConnectionString("mysql://u:Zq9-unique-pw@db:3306/x")
    assert str(dsn).count("Zq9-unique-pw") == 1 and f"{url}".count("Zq9-unique-pw") == 1
    assert dsn == "host=db port=5432 user=u password=Zq9-unique-pw dbname=x"
    assert "Zq9-unique-pw" not in repr(dsn) and "password=******" in repr(dsn)
    assert "Zq9-unique-pw" not in repr(url) and "u:******@db" in repr(url)
    assert "Zq9-unique-pw" not in repr({"dsn": dsn})  # containers print members with repr
