"""``PropertiesModel``: pydantic models keyed by Debezium's dotted property names.

A subclass declares each property once, with its Debezium name as the alias::

    class SlotConfig(PropertiesModel):
        slot_name: str = Field("debezium", alias="slot.name")
        plugin_name: Literal["pgoutput", "decoderbufs"] = Field("pgoutput", alias="plugin.name")

    SlotConfig.from_properties({"slot.name": "s1"}).slot_name == "s1"

What the base adds to plain pydantic:

- an unknown property is a ``ConfigError`` naming it and the closest valid name
  (``unknown property 'slot.nam' — did you mean 'slot.name'?``);
- an invalid value names the property and, for choices, the allowed values; choices are matched
  case-insensitively and surrounding whitespace is dropped (as Kafka's ``ConfigDef`` does);
- names that belong to Kafka Connect / the worker rather than the connector (``connector.class``,
  ``key.converter``, ``producer.*``, ...) are accepted and kept in :attr:`passthrough` when the class
  lists them in ``accepted_names`` / ``accepted_prefixes``;
- renamed Debezium properties are accepted under their old name (``legacy_names``,
  ``legacy_prefixes``), the current name winning when both are given with the same value;
- families of dynamic names (``snapshot.select.statement.overrides.<table>``) are gathered into a
  dict field through ``prefix_fields``.

``load_properties`` and ``Secret`` are re-exported here: this module is the config contract.
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator

from lakecdc.config.redact import MASK
from lakecdc.config.secret import Secret
from lakecdc.config.sources import load_properties
from lakecdc.errors import ConfigError

__all__ = ["PropertiesModel", "Secret", "load_properties", "literal_choices"]

ModelT = TypeVar("ModelT", bound="PropertiesModel")


def literal_choices(annotation: Any) -> tuple[str, ...] | None:
    """The allowed strings of a ``Literal[...]`` (or ``Literal[...] | None``) annotation."""
    if typing.get_origin(annotation) is Literal:
        return tuple(str(a) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = literal_choices(arg)
            if found:
                return found
    return None


def _is_secret(annotation: Any) -> bool:
    if annotation is Secret:
        return True
    return any(_is_secret(a) for a in typing.get_args(annotation))


class PropertiesModel(BaseModel):
    """Base of every configuration model; see the module docstring."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid", validate_default=True)

    accepted_names: ClassVar[frozenset[str]] = frozenset()
    accepted_prefixes: ClassVar[tuple[str, ...]] = ()
    legacy_names: ClassVar[Mapping[str, str]] = {}
    legacy_prefixes: ClassVar[Mapping[str, str]] = {}
    prefix_fields: ClassVar[Mapping[str, str]] = {}

    _passthrough: dict[str, str] = PrivateAttr(default_factory=dict)
    _given: dict[str, str] = PrivateAttr(default_factory=dict)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_properties(cls: type[ModelT], properties: Mapping[str, Any]) -> ModelT:
        """Validate a flat ``{dotted.name: value}`` mapping; every failure is a ``ConfigError``."""
        try:
            return cls.model_validate(dict(properties))
        except ValidationError as exc:
            raise cls._config_error(exc) from None

    @classmethod
    def from_file(
        cls: type[ModelT], path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
    ) -> ModelT:
        """``load_properties(path)`` (with ``LAKECDC_CONFIG_*`` overrides) then validate.

        Errors start with the file name: ``conf/pg.properties: unknown property 'slot.nam' ...``.
        """
        properties = load_properties(path, environ=environ, known_names=cls.known_names())
        try:
            return cls.from_properties(properties)
        except ConfigError as exc:
            raise ConfigError(f"{os.fspath(path)}: {exc}", exc.property_name) from None

    @classmethod
    def known_names(cls) -> list[str]:
        """Every exact property name this model accepts (modelled, kept and legacy)."""
        names = [cls._alias(name) for name in cls.model_fields]
        names.extend(cls.accepted_names)
        names.extend(cls.legacy_names)
        return sorted(set(names))

    @classmethod
    def _alias(cls, field_name: str) -> str:
        return cls.model_fields[field_name].alias or field_name

    @model_validator(mode="wrap")
    @classmethod
    def _sort_properties(cls, data: Any, handler: Any) -> Any:
        if not isinstance(data, Mapping):
            return handler(data)
        modelled, kept = cls._split(data)
        model = handler(modelled)
        model._passthrough = kept
        model._given = {str(k): (MASK if cls._names_secret(str(k)) else str(v)) for k, v in data.items()}
        return model

    @classmethod
    def _split(cls, data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        by_alias = {cls._alias(name): name for name in cls.model_fields}
        modelled: dict[str, Any] = {}
        kept: dict[str, str] = {}
        gathered: dict[str, dict[str, Any]] = {}
        unknown: list[str] = []
        for raw_name, value in data.items():
            name = str(raw_name).strip()
            name = cls._current_name(name)
            field = by_alias.get(name) or (name if name in cls.model_fields else None)
            if field is not None:
                cls._put(modelled, field, name, cls._clean(field, value))
                continue
            prefix = next((p for p in cls.prefix_fields if name.startswith(p) and len(name) > len(p)), None)
            if prefix is not None:
                gathered.setdefault(cls.prefix_fields[prefix], {})[name[len(prefix) :]] = value
            elif name in cls.accepted_names or (name.startswith(cls.accepted_prefixes)
                                                and not cls._looks_like_typo(name)):
                kept[name] = str(value)
            else:
                unknown.append(name)
        if unknown:
            raise cls._unknown_error(unknown)
        for field, values in gathered.items():
            modelled[field] = {**values, **dict(modelled.get(field) or {})}
        return modelled, kept

    @classmethod
    def _looks_like_typo(cls, name: str) -> bool:
        # `database.*` and friends pass through to drivers; `database.hostnme` is still a typo.
        return bool(difflib.get_close_matches(name, cls.known_names(), n=1, cutoff=0.88))

    @classmethod
    def _current_name(cls, name: str) -> str:
        if name in cls.legacy_names:
            return cls.legacy_names[name]
        for old, new in cls.legacy_prefixes.items():
            if name.startswith(old):
                return new + name[len(old) :]
        return name

    @staticmethod
    def _put(modelled: dict[str, Any], field: str, name: str, value: Any) -> None:
        if field in modelled and modelled[field] != value:
            raise ConfigError(
                f"property '{name}' is given twice (also under a legacy name) with different values", name
            )
        modelled[field] = value

    @classmethod
    def _clean(cls, field: str, value: Any) -> Any:
        info = cls.model_fields[field]
        if not isinstance(value, str) or _is_secret(info.annotation):
            return value
        value = value.strip()
        if value == "" and not info.is_required():
            return info.get_default(call_default_factory=True)
        choices = literal_choices(info.annotation)
        if choices:
            lowered = {c.lower(): c for c in choices}
            return lowered.get(value.lower(), value)
        return value

    @classmethod
    def _names_secret(cls, name: str) -> bool:
        field = {cls._alias(n): n for n in cls.model_fields}.get(cls._current_name(name))
        if field is not None and _is_secret(cls.model_fields[field].annotation):
            return True
        lowered = name.lower()
        return any(word in lowered for word in ("password", "secret", "sasl.jaas.config", "token"))

    # ------------------------------------------------------------------ errors

    @classmethod
    def _unknown_error(cls, names: list[str]) -> ConfigError:
        known = cls.known_names()
        parts = []
        for name in names:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f" — did you mean '{close[0]}'?" if close else ""
            parts.append(f"unknown property '{name}'{hint}")
        return ConfigError("; ".join(parts), names[0])

    @classmethod
    def _config_error(cls, exc: ValidationError) -> ConfigError:
        messages: list[str] = []
        first: str | None = None
        for err in exc.errors():
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, ConfigError) and len(exc.errors()) == 1:
                return cause
            loc = err.get("loc") or ()
            field = str(loc[0]) if loc else ""
            name = cls._alias(field) if field in cls.model_fields else field
            first = first or name or None
            messages.append(cls._describe(err, name, cause))
        return ConfigError("; ".join(messages), first)

    @classmethod
    def _describe(cls, err: Any, name: str, cause: Any) -> str:
        if isinstance(cause, ConfigError):
            return str(cause)
        if not name:
            return str(cause or err.get("msg"))
        if err.get("type") == "missing":
            return f"missing required property '{name}'"
        field = {cls._alias(n): n for n in cls.model_fields}.get(name)
        shown = MASK if cls._names_secret(name) else repr(err.get("input"))
        choices = literal_choices(cls.model_fields[field].annotation) if field else None
        if choices and err.get("type") == "literal_error":
            allowed = ", ".join(choices)
            return f"invalid value {shown} for property '{name}': allowed values are {allowed}"
        detail = str(cause) if cause is not None else err.get("msg", "invalid")
        return f"invalid value {shown} for property '{name}': {detail}"

    # ------------------------------------------------------------------ access

    def __eq__(self, other: object) -> bool:
        # How a value was spelled (alias, legacy name, spacing) does not make two configs differ.
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, PropertiesModel)
        fields = type(self).model_fields
        return all(getattr(self, n) == getattr(other, n) for n in fields) and self._passthrough == other._passthrough

    __hash__ = None  # type: ignore[assignment]  # dict-valued fields make configs unhashable anyway

    @property
    def passthrough(self) -> dict[str, str]:
        """Accepted properties the model does not interpret (Kafka Connect, driver, producer...)."""
        return dict(self._passthrough)

    def properties_with_prefix(self, prefix: str) -> dict[str, str]:
        """Kept properties under ``prefix``, prefix stripped: ``producer.acks`` -> ``acks``."""
        return {k[len(prefix) :]: v for k, v in self._passthrough.items() if k.startswith(prefix)}

    def given_properties(self) -> dict[str, str]:
        """The properties as given, credentials masked: safe to log or print."""
        return dict(self._given)
