"""The local stack's Spark session: the production factory (``lakecdc.spark.session``), under the name the
notebooks, benchmarks and tests have always used (``lakecdc.devstack.spark.spark_session``)."""

from lakecdc.spark.session import (
    CONNECTORS,
    ICEBERG_CATALOG,
    JDBC_CATALOG_FILE,
    delta_in_spark,
    iceberg_catalog_conf,
    spark_connectors,
    spark_packages,
    spark_session,
)

__all__ = ["CONNECTORS", "ICEBERG_CATALOG", "JDBC_CATALOG_FILE", "delta_in_spark", "iceberg_catalog_conf",
           "spark_connectors", "spark_packages", "spark_session"]
