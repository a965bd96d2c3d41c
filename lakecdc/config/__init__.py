"""Configuration: the connectors' Debezium property names and the ingest job's (``config.ingest``),
validated; secrets never shown.

>>> from lakecdc.config import CommonConnectorConfig, load_properties
>>> cfg = CommonConnectorConfig.from_properties({"topic.prefix": "shop", "table.include.list": "public.orders"})
>>> cfg.table_filter.matches("public", "orders")
True
"""

from lakecdc.config.base import PropertiesModel, Secret, load_properties
from lakecdc.config.connector import CommonConnectorConfig
from lakecdc.config.filters import ColumnFilter, KeyColumns, TableFilter
from lakecdc.config.redact import install_log_redaction, redact, register_secret

__all__ = [
    "ColumnFilter",
    "CommonConnectorConfig",
    "KeyColumns",
    "PropertiesModel",
    "Secret",
    "TableFilter",
    "install_log_redaction",
    "load_properties",
    "redact",
    "register_secret",
]
