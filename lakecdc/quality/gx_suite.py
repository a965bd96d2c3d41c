"""A great-expectations (1.x) bridge: an expectation suite built from a silver table, run on pandas.

``silver_suite(table_df, keys)`` expects: key columns not null, the (compound) key unique, and every
source column of the pandas type it has now (so a later run catches a type drift).
``run_suite(df, suite)`` validates a DataFrame in an ephemeral GX context and returns the GX result
(``.success``; ``.results[i].expectation_config.type``, ``.result``).

Example::

    df = LakeTable.delta("/lake", "silver.customers").pandas()
    result = run_suite(df, silver_suite(df, ("id",), name="silver.customers"))
    result.success
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from lakecdc.audit.tables import row_columns
from lakecdc.errors import MissingExtraError

if TYPE_CHECKING:
    import pandas as pd


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


def silver_suite(df: pd.DataFrame, keys: tuple[str, ...] | list[str], name: str = "lakecdc_silver") -> Any:
    """An ``ExpectationSuite`` for a silver table shaped like ``df`` with key ``keys``."""
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
    for column in row_columns(list(df.columns)):
        dtype = str(df[column].dtype)
        if dtype != "object":  # object columns hold mixed Python values: no single type to expect
            suite.add_expectation(gxe.ExpectColumnValuesToBeOfType(column=column, type_=dtype))
    return suite


def run_suite(df: pd.DataFrame, suite: Any) -> Any:
    """Validate ``df`` against ``suite`` in the process's ephemeral GX context (nothing is written to disk)."""
    context = _context()
    tag = uuid.uuid4().hex[:8]
    source = context.data_sources.add_pandas(name=f"lakecdc_{tag}")
    asset = source.add_dataframe_asset(name=f"table_{tag}")
    batch_definition = asset.add_batch_definition_whole_dataframe(f"whole_{tag}")
    suite.name = f"{suite.name}_{tag}"  # one context, many runs: names must not clash
    registered = context.suites.add(suite)
    batch = batch_definition.get_batch(batch_parameters={"dataframe": df})
    return batch.validate(registered)


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
