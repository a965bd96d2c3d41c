"""Local development stack: broker (tansu or Apache Kafka), PostgreSQL, MariaDB on loopback ports, and Spark.

The Spark session factory lives in ``lakecdc.devstack.spark`` and is not imported here, so
``import lakecdc.devstack`` never needs PySpark.
"""

from lakecdc.devstack.broker import Broker, kafka_client_defaults
from lakecdc.devstack.errors import DevStackError, PartStartError
from lakecdc.devstack.kafka import KafkaBroker
from lakecdc.devstack.mariadb import MariaDB
from lakecdc.devstack.postgres import Postgres
from lakecdc.devstack.stack import DevStack

__all__ = ["Broker", "DevStack", "DevStackError", "KafkaBroker", "MariaDB", "PartStartError", "Postgres",
           "kafka_client_defaults"]
