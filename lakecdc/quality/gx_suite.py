"""A great-expectations (1.x) bridge: an expectation suite built from a silver table, run by GX on Spark.

``silver_suite(df, keys)`` expects: key columns not null, the (compound) key unique, and every source
column of the Spark type it has now (GX's Spark type names, ``LongType``, ``StringType``...), so a
later run catches a type drift. ``run_suite(df, suite)`` validates a Spark DataFrame through GX's Spark
data source in an ephemeral GX context: Spark evaluates the expectations' metrics, only they reach the
driver. It returns the GX result (``.success``; ``.results[i].expectation_config.type``, ``.result``).
``validate_on_spark`` is the one way lakecdc runs a suite on Spark (team suites, pipeline expectations).

Example::

    df = LakeTable.iceberg(spark, "silver.customers").spark_df()
    suite = silver_suite(df, ("id",), name="silver.customers")
    run_suite(df, suite).success                                                # True
    failed_expectations(run_suite(df.withColumn("id", df["id"].cast("string")), suite))
    # ['expect_column_values_to_be_of_type(id)']
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from lakecdc.audit.tables import row_columns
from lakecdc.errors import MissingExtraError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _gx() -> Any:
    try:
        import great_expectations as gx
    except ImportError as error:
        raise MissingExtraError("the great-expectations bridge", "quality", str(error)) from error
    return gx


_CONTEXT: Any = None


def _context() -> Any:
    """One ephemeral GX context per process (GX needs an active context to build suites)."""
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = _gx().get_context(mode="ephemeral")
        from great_expectations.data_context.types.base import ProgressBarsConfig

        # per-metric progress bars flood notebooks and logs; results say everything
        _CONTEXT.variables.progress_bars = ProgressBarsConfig(globally=False)
    return _CONTEXT


def validate_on_spark(df: DataFrame, suite: Any, result_format: str | dict[str, Any] = "SUMMARY") -> Any:
    """GX's ``ExpectationSuiteValidationResult`` of ``suite`` on the Spark DataFrame ``df``, through GX's
    Spark data source in the process's ephemeral context (nothing is written to disk)."""
    context = _context()
    tag = uuid.uuid4().hex[:8]
    was_cached = df.is_cached
    source = context.data_sources.add_spark(name=f"lakecdc_spark_{tag}")
    # one context, many runs: each registers its own copy, so names never clash and the caller's suite is untouched
    copy = context.suites.add(type(suite)(name=f"{suite.name}_{tag}",
                                          expectations=[e.configuration for e in suite.expectations]))
    try:
        batch = source.add_dataframe_asset(name=f"frame_{tag}").add_batch_definition_whole_dataframe(
            f"whole_{tag}").get_batch(batch_parameters={"dataframe": df})
        return batch.validate(copy, result_format=result_format)
    finally:
        # an ingest job validates every batch: leave no data source, suite or cached frame (GX persists
        # the frame it validates) behind, or the driver and the executors' storage grow with each batch
        context.data_sources.delete(source.name)
        context.suites.delete(copy.name)
        if not was_cached:
            df.unpersist()


def silver_suite(df: DataFrame, keys: tuple[str, ...] | list[str], name: str = "lakecdc_silver") -> Any:
    """An ``ExpectationSuite`` for a silver table shaped like the Spark DataFrame ``df`` with key ``keys``."""
    gx = _gx()
    from great_expectations import expectations as gxe

    _context()
    suite = gx.ExpectationSuite(name=name)
    for key in keys:
        suite.add_expectation(gxe.ExpectColumnValuesToNotBeNull(column=key))
    if len(keys) > 1:
        suite.add_expectation(gxe.ExpectCompoundColumnsToBeUnique(column_list=list(keys)))
    else:  # GX wants two or more columns in a compound key
        suite.add_expectation(gxe.ExpectColumnValuesToBeUnique(column=keys[0]))
    types = {field.name: type(field.dataType).__name__ for field in df.schema.fields}
    for column in row_columns(list(df.columns)):
        # GX on Spark checks the type's class only: a decimal's precision or an array's element type may drift unseen
        suite.add_expectation(gxe.ExpectColumnValuesToBeOfType(column=column, type_=types[column]))
    return suite


def run_suite(df: DataFrame, suite: Any) -> Any:
    """Validate the Spark DataFrame ``df`` against ``suite`` (``validate_on_spark``); ``suite`` is left as it was."""
    return validate_on_spark(df, suite)


def failed_expectations(result: Any) -> list[str]:
    """``"expect_column_values_to_not_be_null(id)"`` for each failed expectation of a GX result."""
    failed = []
    for item in result.results:
        if not item.success:
            config = item.expectation_config
            kwargs = config.kwargs
            target = kwargs.get("column") or ",".join(kwargs.get("column_list") or [])
            failed.append(f"{config.type}({target})")
    return failed
