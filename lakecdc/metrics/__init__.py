"""Prometheus plumbing both sides share, and what a table's own metadata says (no Spark).

- ``prometheus``: the ``/metrics`` endpoint and the ``metrics.port`` setting;
- ``table_commits``: the lakecdc properties and row counts of a table's newest commit, read from
  the table's own metadata.

Each side owns what it measures: capture's metrics, snapshot estimates and ``lakecdc status`` probe are
``capture.exporter``, ``capture.snapshot_estimates`` and ``capture.status``; ingest's are
``ingest.exporter`` and ``ingest.status``.
"""
