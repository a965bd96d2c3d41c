"""GX Data Docs for the team suites' runs: the HTML site great-expectations renders from validation results.

``build_data_docs(runs, directory)`` writes GX's own Data Docs site (``index.html``, one page per
suite, one page per validation run with each expectation's status, observed value and unexpected
values) to ``directory`` and returns the path of its ``index.html``.

The site is built in a fresh ephemeral GX context that holds only these runs' suites and results
(the shared context of ``gx_suite`` accumulates every suite validated in the process, and Data Docs
index everything their context's stores hold). Each run is stored the way a GX checkpoint stores it
(``ValidationResultsStore`` under a ``ValidationResultIdentifier``: suite name, run name and time,
batch identifier) and the site is rendered by GX's ``SiteBuilder``; lakecdc renders nothing itself.
The batch identifier names the table and version the run validated (``silver.orders@v12``), the
run name is the run id that ``record_results`` puts in ``quality_results``, so a dashboard row and
a Data Docs page point at each other.

Example::

    runs = [run_team_suite(table, suite) for suite in load_suites("gx/")]
    build_data_docs(runs, "docs/quality", run_id="nightly-42")   # -> docs/quality/index.html
"""

from __future__ import annotations

import copy
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from lakecdc.quality.gx_suite import _gx

if TYPE_CHECKING:
    from lakecdc.quality.team_suites import SuiteRun

SITE = "lakecdc_quality"


def build_data_docs(runs: list[SuiteRun], directory: str | Path, run_id: str | None = None,
                    run_at: datetime | None = None) -> Path:
    """Render ``runs`` as a GX Data Docs site in ``directory`` (see the module doc); its ``index.html``."""
    gx = _gx()
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    root = Path(directory).resolve()
    root.mkdir(parents=True, exist_ok=True)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    run = RunIdentifier(run_name=run_id or uuid.uuid4().hex, run_time=run_at or datetime.now(timezone.utc))
    added: set[str] = set()
    for item in runs:
        if item.suite not in added:  # the suite's own page: its expectations as the team wrote them
            context.suites.add(gx.ExpectationSuite(
                name=item.suite, expectations=[r.expectation_config for r in item.result.results]))
            added.add(item.suite)
        result = copy.deepcopy(item.result)
        result.suite_name = item.suite  # the run validated a per-run copy named <suite>_<tag>
        result.meta.update(run_id=run, validation_time=run.run_time, lakecdc_table=item.table.name,
                           lakecdc_table_version=item.version, lakecdc_source_position=item.source_position)
        batch = f"{item.table.name}@v{item.version}" if item.version is not None else item.table.name
        context.validation_results_store.set(ValidationResultIdentifier(
            expectation_suite_identifier=ExpectationSuiteIdentifier(name=item.suite), run_id=run,
            batch_identifier=batch), result)
    context.add_data_docs_site(SITE, {
        "class_name": "SiteBuilder", "show_how_to_buttons": False,
        "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(root)},
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"}})
    context.build_data_docs(site_names=[SITE])
    return root / "index.html"
