"""Operational visibility: where a capture and an ingest job stand (``lakecdc status``), and the
Prometheus metrics they serve while running.

- ``capture_status``: the stored source offset and how far the source log is ahead of it;
- ``table_commits``: the lakecdc properties and row counts of a table's newest commit, read from
  the table's own metadata (no Spark);
- ``ingest_status``: per source table, the last committed batch, Kafka offsets, source position
  and lag;
- ``prometheus``: the ``/metrics`` endpoint and the ``metrics.port`` setting;
- ``capture_exporter`` / ``ingest_exporter``: capture's and ingest's metrics (names in each docstring);
- ``snapshot_estimates``: the source's row estimates behind snapshot progress.
"""
