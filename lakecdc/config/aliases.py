"""Debezium's deprecated property names (``Field.withDeprecatedAliases``, Debezium 3.6.3): a file that
still uses one loads as if it used the current name, and is reported under that name.

    internal.legacy.snapshot.max.threads=true   # read as legacy.snapshot.max.threads=true
"""

from __future__ import annotations

#: every connector's (``CommonConnectorConfig.legacy_names``)
COMMON = {"internal.legacy.snapshot.max.threads": "legacy.snapshot.max.threads"}
#: ``OracleConnectorConfig``'s own
ORACLE = {
    "log.mining.buffer.memory.legacy.transaction.start": "log.mining.buffer.deferred.transaction.start",
    "internal.log.mining.read.only": "log.mining.read.only",
    "log.mining.readonly.hostname": "secondary.hostname",
    "database.out.server.name": "xstream.out.server.name",
}
