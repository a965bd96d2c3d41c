"""lakecdc: Debezium-compatible CDC into Delta Lake and Apache Iceberg."""
__version__ = "0.1.0"
