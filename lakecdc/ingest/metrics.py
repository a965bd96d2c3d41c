"""Per-batch figures in the user's words: events, events/s, lag behind the source.

One log line per micro-batch, e.g.::

    batch 12: applied 5,000 changes to 3 tables in 2.1 s (2,381 changes/s), 1.2 s behind the source;
    4 held back for open transactions; 1 record to the dead-letter table

``lag`` is now minus the newest source commit time applied (``source.ts_ms``). When the job runs
in a terminal, the same line is shown as a live status line (rich) instead of scrolling. While
``lakecdc.ingest.exporter.serve_ingest_metrics`` serves an endpoint, every batch is also
counted in its Prometheus metrics.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, Any

from lakecdc.ingest.exporter import IngestExporter, active_ingest_exporter

if TYPE_CHECKING:
    from lakecdc.ingest.job import IngestSummary
    from lakecdc.ingest.processor import BatchReport

log = logging.getLogger("lakecdc.ingest")


def describe(report: BatchReport, now_ms: int | None = None) -> str:
    """The batch's summary sentence (see the module docstring)."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    rate = report.events / report.seconds if report.seconds > 0 else 0.0
    text = (f"batch {report.batch_id}: applied {report.events:,} change{'s' if report.events != 1 else ''} to "
            f"{len(report.tables)} table{'s' if len(report.tables) != 1 else ''} in {report.seconds:.1f} s "
            f"({rate:,.0f} changes/s)")
    if report.max_source_ts_ms is not None:
        text += f", {max(0, now_ms - report.max_source_ts_ms) / 1000:.1f} s behind the source"
    extras = []
    if report.held_events:
        extras.append(f"{report.held_events:,} held back for open transactions")
    if report.replayed:
        extras.append(f"{report.replayed:,} already in the tables (skipped)")
    if report.dead_letters:
        extras.append(f"{report.dead_letters:,} record{'s' if report.dead_letters != 1 else ''} "
                      "to the dead-letter table")
    if report.failed_tables:
        extras.append(f"stopped tables: {', '.join(sorted(report.failed_tables))}")
    return text + ("; " + "; ".join(extras) if extras else "")


class BatchMetrics:
    """Logs every batch; also keeps a live status line when stderr is a terminal, and feeds the
    Prometheus exporter being served (if any)."""

    def __init__(self, interactive: bool | None = None, exporter: IngestExporter | None = None) -> None:
        self._interactive = sys.stderr.isatty() if interactive is None else interactive
        self._exporter = exporter or active_ingest_exporter()
        self._status: Any = None
        if self._interactive:
            from rich.console import Console

            self._status = Console(stderr=True).status("waiting for the first batch...")
            self._status.start()

    def report(self, report: BatchReport) -> None:
        line = describe(report)
        log.info(line)
        if self._exporter is not None:
            self._exporter.batch(report)
        if self._status is not None:
            self._status.update(line)

    def finish(self, summary: IngestSummary) -> None:
        if self._status is not None:
            self._status.stop()
        log.info("ingest finished: %d batch(es), %s change(s) applied to %d table(s) in %.1f s%s%s",
                 summary.batches, f"{summary.events:,}", len(summary.tables), summary.seconds,
                 f"; {summary.dead_letters} dead letter(s)" if summary.dead_letters else "",
                 "; stopped by signal" if summary.stopped_by_signal else "")
