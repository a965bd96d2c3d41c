"""Local development stack: broker, PostgreSQL, MariaDB on loopback ports, and offline Spark.

The Spark session factory lives in ``lakecdc.devstack.spark`` and is not imported here, so
``import lakecdc.devstack`` never needs PySpark.
"""

from lakecdc.devstack.broker import Broker, kafka_client_defaults
from lakecdc.devstack.errors import DevStackError, PartStartError
from lakecdc.devstack.mariadb import MariaDB
from lakecdc.devstack.postgres import Postgres
from lakecdc.devstack.stack import DevStack

__all__ = ["Broker", "DevStack", "DevStackError", "MariaDB", "PartStartError", "Postgres",
           "kafka_client_defaults"]
