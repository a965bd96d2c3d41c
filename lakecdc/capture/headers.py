"""Debezium 3.x context headers, on every data change record (``extended.headers.enabled``).

Each value is written by the header converter (JSON, schemas on by default)::

    __debezium.context.connectorLogicalName  {"schema":{"type":"string","optional":false},"payload":"dbz"}
    __debezium.context.taskId                {"schema":{"type":"string","optional":false},"payload":"0"}
    __debezium.context.connectorName         {"schema":{"type":"string","optional":false},"payload":"postgresql"}
    __debezium.context.runId                 {"schema":{"type":"string","optional":false},"payload":"<uuid>"}

Transaction metadata records carry none. The list is built once per run and shared by records
(never mutated).
"""

from __future__ import annotations

import uuid

from lakecdc.events.schema import STRING
from lakecdc.events.serde import RecordEncoder

Headers = list[tuple[str, bytes]]


def context_headers(logical_name: str, connector_name: str, schemas_enable: bool = True,
                    task_id: str = "0", run_id: str | None = None) -> Headers:
    encode = RecordEncoder(STRING, schemas_enable).encode
    values = (
        ("__debezium.context.connectorLogicalName", logical_name),
        ("__debezium.context.taskId", task_id),
        ("__debezium.context.connectorName", connector_name),
        ("__debezium.context.runId", run_id or str(uuid.uuid4())),
    )
    return [(name, encode(value) or b"") for name, value in values]
