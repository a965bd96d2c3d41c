"""Table writers: one ``TableWriter`` interface, one apply sequence, several formats.

``lakecdc.writers.base.create_writer(format, spark, ...)`` picks and imports a backend lazily:
``iceberg`` (Spark SQL ``MERGE INTO``), ``delta`` (Spark SQL when the session has Delta, delta-rs
otherwise), ``delta-spark``, ``delta-rs``. This package module imports nothing heavy, so code that
only needs names (configuration, CLI help) does not start Spark or load delta-rs.
"""
