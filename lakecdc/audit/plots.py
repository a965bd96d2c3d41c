"""Pictures of a table's history: rows and changes per version, and source-to-table lag over time.

matplotlib with the Agg backend (no display needed); each function saves a PNG and returns its path::

    plot_versions(table_versions(silver), "versions.png", title="silver.customers")
    plot_lag(table_versions(silver), "lag.png")
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from lakecdc.audit.versions import TableVersion


def _pyplot() -> ModuleType:
    import matplotlib

    matplotlib.use("Agg")  # headless: files only, never a window
    import matplotlib.pyplot as plt

    return plt


def plot_versions(versions: list[TableVersion], path: str | Path, title: str = "",
                  total_rows: list[int | None] | None = None) -> Path:
    """Bars: rows written and removed by each commit; line: rows in the table after it.

    ``total_rows`` overrides ``TableVersion.total_rows`` (Delta does not record it; the CLI counts).
    """
    plt = _pyplot()
    labels = [str(i) for i in range(len(versions))]
    written = [v.rows_written or 0 for v in versions]
    removed = [-(v.rows_removed or 0) for v in versions]
    totals = total_rows if total_rows is not None else [v.total_rows for v in versions]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.5 * len(versions) + 3), 4.2), dpi=110)
    ax.bar(labels, written, color="#4C72B0", label="rows written (insert/update)")
    ax.bar(labels, removed, color="#DD8452", label="rows removed (delete)")
    ax.axhline(0, color="#444444", linewidth=0.8)
    ax.set_xlabel("commit (oldest first; batch id above the bar)")
    ax.set_ylabel("rows changed by the commit")
    for i, v in enumerate(versions):
        if v.batch_id is not None:
            ax.annotate(f"b{v.batch_id}", (i, written[i]), ha="center", va="bottom", fontsize=7, color="#333333")
    if any(t is not None for t in totals):
        twin = ax.twinx()
        points = [(i, t) for i, t in enumerate(totals) if t is not None]
        twin.plot([labels[i] for i, _ in points], [t for _, t in points], color="#55A868", marker="o",
                  label="rows in table")
        twin.set_ylabel("rows in table after the commit")
        # put both zeros on one line, so the table-size line never seems to dip below empty
        low, high = ax.get_ylim()
        scale = max(max(t for _, t in points), 1) * 1.08 / high if high > 0 else 1.0
        twin.set_ylim(low * scale, high * scale)
        handles, names = ax.get_legend_handles_labels()
        more, more_names = twin.get_legend_handles_labels()
        ax.legend(handles + more, names + more_names, loc="upper left", fontsize=8)
    else:
        ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title or "rows and changes per table version")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out


def plot_lag(versions: list[TableVersion], path: str | Path, title: str = "") -> Path:
    """Seconds between the newest source commit a version holds and the version's own commit."""
    plt = _pyplot()
    points = [(v.committed_at, v.lag_seconds) for v in versions if v.lag_seconds is not None]
    fig, ax = plt.subplots(figsize=(7.0, 3.8), dpi=110)
    if points:
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", color="#C44E52")
        ax.fill_between([p[0] for p in points], [p[1] for p in points], alpha=0.15, color="#C44E52")
    else:
        ax.text(0.5, 0.5, "no lakecdc commits with a source time", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xlabel("table commit time (UTC)")
    ax.set_ylabel("source-to-table lag (s)")
    ax.set_title(title or "source-to-table lag per commit")
    ax.grid(alpha=0.3)
    fig.autofmt_xdate()
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out)
    plt.close(fig)
    return out
