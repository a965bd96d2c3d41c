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

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The property parsers live with the configuration; connectors read them from here too.
from lakecdc.config.signaling import BUILT_CHANNELS, CHANNELS, parse_channels, parse_table_id

log = logging.getLogger(__name__)

__all__ = ["BUILT_CHANNELS", "CHANNELS", "Signal", "SignalProcessor", "parse_channels", "parse_data", "parse_table_id"]


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
