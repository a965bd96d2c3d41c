"""The transformation chain of a connector: ``transforms`` and ``predicates``, as Kafka Connect runs it.

::

    transforms=route,unwrap
    transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
    transforms.route.regex=dbz\\.public\\.(.*)
    transforms.route.replacement=shop.$1
    transforms.unwrap.type=io.debezium.transforms.ExtractNewRecordState
    transforms.unwrap.predicate=not_heartbeats
    transforms.unwrap.negate=true
    predicates=not_heartbeats
    predicates.not_heartbeats.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches
    predicates.not_heartbeats.pattern=__debezium-heartbeat.*

Each record goes through the transforms in the listed order (``TransformationChain``); a transform
with a predicate applies only when ``predicate.test(record) != negate``; a transform that returns
no record drops it and the rest of the chain is skipped. The chain is built when the configuration
is loaded: an unknown class, a missing required property or an undefined predicate is a
``ConfigError`` naming the alias and the property. A property a transform does not define is
ignored by Kafka Connect; lakecdc says so once at start (``not_applied``). A record a transform
fails on is retried, skipped or stops the capture, per ``errors.*`` (:mod:`.errors`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lakecdc.errors import ConfigError
from lakecdc.transforms.base import Factory, Record, Settings, Transform, TransformContext, TransformDataError
from lakecdc.transforms.changed import ExtractChangedRecordState
from lakecdc.transforms.errors import TRANSFORMATION, ErrorHandling
from lakecdc.transforms.fields import InsertField, MaskField, ReplaceField, ValueToKey
from lakecdc.transforms.header_to_value import HeaderToValue
from lakecdc.transforms.outbox import EventRouter
from lakecdc.transforms.predicates import PREDICATES, Predicate
from lakecdc.transforms.routers import ByLogicalTableRouter, RegexRouter
from lakecdc.transforms.shared_headers import DeleteHeaders
from lakecdc.transforms.timestamps import TimestampConverter
from lakecdc.transforms.unwrap import REMOVED, ExtractNewRecordState

_KAFKA = "org.apache.kafka.connect.transforms."
TRANSFORMS: dict[str, Factory] = {
    _KAFKA + "RegexRouter": RegexRouter,
    _KAFKA + "InsertField$Value": InsertField,
    _KAFKA + "InsertField$Key": InsertField,
    _KAFKA + "ReplaceField$Value": ReplaceField,
    _KAFKA + "ReplaceField$Key": ReplaceField,
    _KAFKA + "MaskField$Value": MaskField,
    _KAFKA + "MaskField$Key": MaskField,
    _KAFKA + "ValueToKey": ValueToKey,
    _KAFKA + "TimestampConverter$Value": TimestampConverter,
    _KAFKA + "TimestampConverter$Key": TimestampConverter,
    "io.debezium.transforms.ByLogicalTableRouter": ByLogicalTableRouter,
    "io.debezium.transforms.ExtractNewRecordState": ExtractNewRecordState,
    "io.debezium.transforms.ExtractChangedRecordState": ExtractChangedRecordState,
    "io.debezium.transforms.outbox.EventRouter": EventRouter,
    "io.debezium.transforms.HeaderToValue": HeaderToValue,
}
#: what a transform's own settings may not be called: the chain reads them
_STAGE_KEYS = ("type", "predicate", "negate")


@dataclass(frozen=True)
class Stage:
    alias: str
    class_name: str
    transform: Transform
    predicate: Predicate | None
    negate: bool

    def applies(self, record: Record) -> bool:
        """Kafka Connect's ``TransformationStage.apply``: the transform runs when ``test != negate``."""
        return self.predicate is None or self.predicate.test(record) != self.negate

    def run(self, record: Record) -> Record | None | _NotApplied:
        """The transform's result, or :data:`NOT_APPLIED` when the predicate says to pass ``record`` on."""
        if not self.applies(record):
            return NOT_APPLIED
        return self.transform.apply(record)


class _NotApplied:
    """What a stage whose predicate does not match returns (the record goes on unchanged)."""


NOT_APPLIED = _NotApplied()


class TransformChain:
    """The configured stages; ``apply`` maps a batch of records to the records to send."""

    def __init__(self, stages: list[Stage], not_applied: dict[str, str], errors: ErrorHandling | None = None) -> None:
        self.stages = stages
        self.not_applied = not_applied
        self.errors = errors or ErrorHandling()
        self._deletes = DeleteHeaders()

    def __bool__(self) -> bool:
        return bool(self.stages)

    def apply(self, records: list[Record]) -> list[Record]:
        out: list[Record] = []
        execute = self.errors.execute
        for record in records:
            current: Record | None = self._deletes.start(record)
            delete = record.value is not None and record.op == "d"
            for stage in self.stages:
                assert current is not None
                # Connect's TransformationChain: each TransformationStage (predicate and transform)
                # runs in the error handler, which retries, skips or stops per errors.*
                result = execute(TRANSFORMATION, stage.class_name, stage.run, current, record,
                                 f"transform '{stage.alias}' ({stage.class_name})", TransformDataError)
                if isinstance(result, _NotApplied):
                    continue
                self._deletes.transformed(stage.transform, current, result, delete)
                current = result
                if current is None:
                    break
            if current is not None:
                out.append(current)
        return out


def build_chain(properties: Mapping[str, str], context: TransformContext | None = None) -> TransformChain:
    """The chain ``properties`` (a connector's, names as given) configure; ConfigError when invalid."""
    context = context or TransformContext()
    errors = ErrorHandling.from_properties(properties)
    predicates, unused = _predicates(properties)
    not_applied: dict[str, str] = {}
    stages: list[Stage] = []
    aliases = _aliases(properties, "transforms")
    for alias in aliases:
        own = _own(properties, "transforms", alias)
        class_name = _type(own, "transforms", alias)
        factory = TRANSFORMS.get(class_name)
        if factory is None:
            raise ConfigError(f"transform '{alias}': class '{class_name}' is not supported by lakecdc; supported: "
                              + ", ".join(sorted(TRANSFORMS)), f"transforms.{alias}.type")
        settings = Settings("transforms", alias, class_name, {k: v for k, v in own.items() if k not in _STAGE_KEYS})
        transform = factory(settings, context)
        predicate_alias = own.get("predicate")
        negate_text = own.get("negate")
        if negate_text is not None and negate_text.strip().lower() not in ("true", "false"):
            raise ConfigError(f"property 'transforms.{alias}.negate': expected true or false, got {negate_text!r}",
                              f"transforms.{alias}.negate")
        negate = (negate_text or "false").strip().lower() == "true"
        predicate = None
        if predicate_alias is not None:
            predicate = predicates.get(predicate_alias.strip())
            if predicate is None:
                raise ConfigError(f"transform '{alias}' names predicate '{predicate_alias}', which is not listed in "
                                  "'predicates'", f"transforms.{alias}.predicate")
            unused.discard(predicate_alias.strip())
        elif negate_text is not None:
            raise ConfigError(f"property 'transforms.{alias}.negate' needs 'transforms.{alias}.predicate'",
                              f"transforms.{alias}.negate")
        for key in sorted(set(settings.values) - settings.read):
            not_applied[settings.name(key)] = f"not a property of {class_name} (Kafka Connect ignores it)"
            if class_name.endswith("ExtractNewRecordState") and key in REMOVED:
                not_applied[settings.name(key)] = REMOVED[key]
        stages.append(Stage(alias, class_name, transform, predicate, negate))
    for name in properties:
        for family, listed in (("transforms", aliases), ("predicates", list(predicates))):
            unlisted = _alias_of(name, family)
            if unlisted is not None and unlisted not in listed:
                not_applied[name] = f"'{unlisted}' is not listed in '{family}'"
    for alias in sorted(unused):
        not_applied[f"predicates.{alias}.type"] = f"predicate '{alias}' is used by no transform"
    return TransformChain(stages, not_applied, errors)


def _aliases(properties: Mapping[str, str], family: str) -> list[str]:
    text = (properties.get(family) or "").strip()
    aliases = [a.strip() for a in text.split(",")] if text else []
    if any(not a for a in aliases):
        raise ConfigError(f"property '{family}' has an empty alias: {properties.get(family)!r}", family)
    duplicate = next((a for a in aliases if aliases.count(a) > 1), None)
    if duplicate is not None:
        raise ConfigError(f"property '{family}' lists '{duplicate}' twice (Duplicate alias provided.)", family)
    return aliases


def _alias_of(name: str, family: str) -> str | None:
    prefix = family + "."
    if not name.startswith(prefix):
        return None
    alias, dot, _ = name[len(prefix):].partition(".")
    return alias if dot else None


def _own(properties: Mapping[str, str], family: str, alias: str) -> dict[str, str]:
    prefix = f"{family}.{alias}."
    return {k[len(prefix):]: v for k, v in properties.items() if k.startswith(prefix)}


def _type(own: Mapping[str, str], family: str, alias: str) -> str:
    class_name = (own.get("type") or "").strip()
    if not class_name:
        raise ConfigError(f"{family[:-1]} '{alias}' has no class: property '{family}.{alias}.type' is required",
                          f"{family}.{alias}.type")
    return class_name


def _predicates(properties: Mapping[str, str]) -> tuple[dict[str, Predicate], set[str]]:
    found: dict[str, Predicate] = {}
    for alias in _aliases(properties, "predicates"):
        own = _own(properties, "predicates", alias)
        class_name = _type(own, "predicates", alias)
        kind = PREDICATES.get(class_name)
        if kind is None:
            raise ConfigError(f"predicate '{alias}': class '{class_name}' is not supported by lakecdc; supported: "
                              + ", ".join(sorted(PREDICATES)), f"predicates.{alias}.type")
        found[alias] = kind(Settings("predicates", alias, class_name, {k: v for k, v in own.items() if k != "type"}))
    return found, set(found)
