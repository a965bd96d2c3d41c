"""Debezium signals: requests sent to a running connector (``execute-snapshot``, ``log`` ...).

A signal is ``(id, type, data)``: ``id`` only names the request in log lines, ``type`` is the
action, ``data`` a JSON object (text in the signal table). Channels deliver signals:

- **source** (``signal.enabled.channels`` default): rows inserted into the table named by
  ``signal.data.collection`` (columns ``id``, ``type``, ``data``), read from the change stream, so
  a signal is processed exactly where it sits among the changes. Debezium also emits those rows
  as ordinary change events on ``<prefix>.<schema>.<table>`` (checked against Debezium 3.6.3).
- **kafka**: JSON ``{"type": ..., "data": {...}}`` messages on ``signal.kafka.topic`` whose key
  equals ``topic.prefix``.

:class:`SignalProcessor` dispatches by type to the actions a connector registers; an unknown
type is a warning naming it (Debezium's wording), never a failure.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lakecdc.errors import ConfigError
from lakecdc.events.topics import TableId

log = logging.getLogger(__name__)

#: signal.enabled.channels values Debezium 3 defines, and those lakecdc builds
CHANNELS = ("source", "kafka", "jmx", "file", "in-process")
BUILT_CHANNELS = ("source", "kafka")


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    data: dict[str, Any] = field(default_factory=dict)
    channel: str = "source"

    def describe(self) -> str:
        return f"signal '{self.id}' of type '{self.type}' from the {self.channel} channel"


def parse_data(text: Any) -> dict[str, Any] | None:
    """The signal's ``data`` column: a JSON object, empty when NULL; None when it is not JSON."""
    if text is None or text == "":
        return {}
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def signal_from_row(row: Mapping[str, Any], channel: str = "source") -> Signal | None:
    """A signal-table row (``after`` of its insert); its first three columns are id, type and
    data, as Debezium reads them by position. None (and a warning) when it is malformed."""
    values = list(row.values())
    if len(values) < 3:
        log.warning("signal table row %s has %d columns; expected id, type, data: ignored", values, len(values))
        return None
    signal_id, signal_type, raw = values[0], values[1], values[2]
    data = parse_data(raw)
    if data is None:
        log.warning("signal '%s' of type '%s': data is not a JSON object (%r); ignored", signal_id, signal_type, raw)
        return None
    return Signal(str(signal_id), str(signal_type), data, channel)


def parse_table_id(text: str) -> TableId:
    """``schema.table`` with optional double quotes around a part that holds a dot:
    ``"public"."My.Table"``; a name without schema is in ``public``."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            if quoted and i + 1 < len(text) and text[i + 1] == '"':
                current.append('"')
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    if quoted or not all(parts) or len(parts) > 3:
        raise ConfigError(f"'{text}' is not a table id (<schema>.<table>, parts with dots in double quotes)",
                          "signal.data.collection")
    if len(parts) == 1:
        return TableId(None, "public", parts[0])
    return TableId(None, parts[-2], parts[-1])


def parse_channels(value: str) -> tuple[str, ...]:
    """``signal.enabled.channels``: a comma list of Debezium's channel names."""
    names = tuple(n.strip().lower() for n in value.split(",") if n.strip())
    for name in names:
        if name not in CHANNELS:
            close = difflib.get_close_matches(name, CHANNELS, n=1, cutoff=0.6)
            hint = f" — did you mean '{close[0]}'?" if close else ""
            raise ConfigError(f"signal.enabled.channels: unknown channel '{name}'{hint} (one of {', '.join(CHANNELS)})",
                              "signal.enabled.channels")
    return names


Action = Callable[[Signal], None]


class SignalProcessor:
    """Dispatches signals to actions by type, logging each one."""

    def __init__(self, offset: Callable[[], Any] | None = None) -> None:
        self._actions: dict[str, Action] = {"log": self._log}
        self._offset = offset or (lambda: "<none>")

    def register(self, name: str, action: Action) -> None:
        self._actions[name] = action

    def process(self, signal: Signal) -> None:
        log.info("received %s: %s", signal.describe(), json.dumps(signal.data, sort_keys=True))
        action = self._actions.get(signal.type)
        if action is None:
            # Debezium's SignalProcessor wording
            log.warning("Signal '%s' has been received but the type '%s' is not recognized", signal.id, signal.type)
            return
        action(signal)

    def _log(self, signal: Signal) -> None:
        """Debezium's ``log`` action: ``data.message``, with ``{}`` replaced by the current offset."""
        message = signal.data.get("message")
        if not message:
            log.warning("Logging signal '%s' has arrived but the requested field 'message' is missing from data",
                        signal.id)
            return
        logging.getLogger("lakecdc.signal").info(str(message).replace("{}", str(self._offset()), 1))
