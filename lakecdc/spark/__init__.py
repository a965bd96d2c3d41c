"""Spark outside a managed platform: the session lakecdc opens where none is active (``session``), its log
file (``output``), and the jars it needs (``jars``: Iceberg offline, ``jar_cache``: what the bootstrap fetched).

Nothing is imported here, so ``import lakecdc.spark`` never needs PySpark. On Databricks or under
spark-submit the active session is used and none of this runs.
"""
