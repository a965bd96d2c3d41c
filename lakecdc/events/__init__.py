"""The Debezium wire model shared by capture and ingest (no Spark or Kafka imports).

Modules: ``schema`` (Kafka Connect schemas), ``values`` (Connect values <-> JSON trees),
``serde`` (JsonConverter bytes), ``javanum`` and ``jdk17_dtoa`` (Java number text), ``logical``
(logical types), ``envelope`` (op codes, envelope, ChangeRecord), ``source`` (source blocks),
``positions`` and ``position_text`` (ordered source positions, LSN text forms), ``gtid`` (GTID
sets), ``topics`` (topic/schema names), ``transaction`` (BEGIN/END metadata), ``heartbeat``.
"""
