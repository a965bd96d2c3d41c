"""``Secret``: a credential given literally or by reference, never shown.

Accepted forms of a property value (``database.password``, ``producer.sasl.password``, ...):

- ``env:PGPASSWORD`` — read from the environment when first needed;
- ``file:/run/secrets/pg`` — read from the file when first needed (one trailing newline dropped,
  as written by ``echo`` or Docker/Kubernetes secrets);
- ``literal:env:abc`` — the literal text after ``literal:`` (for a password that starts with a
  reference prefix);
- anything else — the literal password.

``repr``/``str``, pydantic dumps and JSON output show ``******``. The value is resolved lazily by
:meth:`Secret.get_secret_value` and is then registered with :mod:`lakecdc.config.redact`, so log
records and exception texts mask it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from lakecdc.config.redact import MASK, register_secret
from lakecdc.errors import SecretResolutionError


class Secret:
    """A lazily resolved credential. ``Secret("env:PGPASSWORD").get_secret_value()``."""

    __slots__ = ("_reference", "_value", "_environ")

    def __init__(self, reference: str, *, environ: Mapping[str, str] | None = None) -> None:
        self._reference = reference
        self._environ = environ
        self._value: str | None = None
        if self.kind == "literal":
            self._value = reference[len("literal:") :] if reference.startswith("literal:") else reference
            register_secret(self._value)

    @property
    def kind(self) -> str:
        """``env``, ``file`` or ``literal``."""
        if self._reference.startswith("env:"):
            return "env"
        if self._reference.startswith("file:"):
            return "file"
        return "literal"

    @property
    def reference(self) -> str:
        """Where the value comes from, safe to show: ``env:PGPASSWORD``, ``file:/x`` or ``******``."""
        return self._reference if self.kind != "literal" else MASK

    def get_secret_value(self) -> str:
        """The credential itself. Raises ``SecretResolutionError`` naming the reference."""
        if self._value is None:
            self._value = self._resolve()
            register_secret(self._value)
        return self._value

    def _resolve(self) -> str:
        kind, _, target = self._reference.partition(":")
        if kind == "env":
            environ = os.environ if self._environ is None else self._environ
            if target not in environ:
                raise SecretResolutionError(f"secret reference 'env:{target}': variable {target} is not set")
            return environ[target]
        try:
            text = Path(target).read_text(encoding="utf-8")
        except OSError as exc:
            raise SecretResolutionError(f"secret reference 'file:{target}': {exc.strerror}") from exc
        return text[:-1] if text.endswith("\n") else text

    def __repr__(self) -> str:
        return f"Secret('{self.reference}')"

    def __str__(self) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._reference == self._reference

    def __hash__(self) -> int:
        return hash(self._reference)

    def __bool__(self) -> bool:
        return bool(self._reference)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        from_str = core_schema.no_info_plain_validator_function(_to_secret)
        return core_schema.json_or_python_schema(
            json_schema=from_str,
            python_schema=from_str,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda s: str(s)),
        )


def _to_secret(value: Any) -> Secret:
    if isinstance(value, Secret):
        return value
    if isinstance(value, (str, int)):
        return Secret(str(value))
    raise ValueError("expected a password text or an env:/file: reference")
