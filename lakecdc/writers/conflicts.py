"""Commit conflicts between writers of one table, and retrying the work that lost.

Ingest and maintenance (``lakecdc maintain`` from cron, or the job's own periodic compaction) may
commit to the same table at the same moment. Both formats detect it at commit time (optimistic
concurrency) and the loser fails without changing the table:

- Iceberg: a MERGE whose position deletes point at data files a compaction replaced ("Cannot
  commit, missing data files"), a compaction of files a MERGE deleted from ("found new position
  delete for replaced data file"), ``CommitFailedException`` once Iceberg's own retries are spent;
  a statement planned on a snapshot whose files an expiry deleted fails reading them (``NotFoundException``).
- Iceberg's JDBC catalog on SQLite: ``SQLITE_BUSY`` ("database is locked") when the catalog
  update waited longer than the busy timeout for another connection's write;
- delta-rs: ``CommitFailedError`` (a concurrent transaction removed or rewrote the same files).

The lost work is redone from the table's new state: ``LakeWriter.apply`` is idempotent (progress
in the commits), maintenance recomputes what to fold. After ``COMMIT_ATTEMPTS`` tries the
conflict is reported as ``CommitConflictError`` naming the table.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from lakecdc.errors import TransientError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: tries of one piece of work (the first included) before a conflict is reported
COMMIT_ATTEMPTS = 6
#: first wait between tries; doubled each time (with jitter, so two losers do not meet again)
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0

#: Text of the Java exceptions (Py4JJavaError carries the stack trace with its causes) that mean
#: the table moved under the statement. Iceberg's other ValidationExceptions (schema checks) are
#: not conflicts and are not retried.
_ICEBERG_CONFLICTS = (
    "org.apache.iceberg.exceptions.CommitFailedException",
    "ValidationException: Cannot commit",  # missing data files / new position delete for replaced file
    "ValidationException: Found conflicting",
    "ValidationException: Found new conflicting",
    "ValidationException: Missing required files to delete",
    "org.apache.iceberg.exceptions.NotFoundException",  # a file an expiry deleted after planning
    # The JDBC catalog on SQLite: the commit's UPDATE of the table's metadata pointer met another
    # connection's write (the statement failed, the pointer is unchanged).
    "SQLITE_BUSY",
)


class CommitConflictError(TransientError):
    """Work on a table kept losing against concurrent commits to it; retrying later may succeed."""

    def __init__(self, table: str, attempts: int, cause: BaseException) -> None:
        super().__init__(f"{table}: still conflicting with concurrent commits to the table after {attempts} "
                         f"tries ({first_line(cause)})")
        self.table = table


def first_line(error: BaseException) -> str:
    """The error's message without the Java stack trace (py4j appends it)."""
    text = str(error).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("An error occurred while calling"):
            return line[:500]
    return type(error).__name__


def is_commit_conflict(error: BaseException) -> bool:
    """True when ``error`` says another commit to the same table won (module docstring)."""
    try:
        from deltalake.exceptions import CommitFailedError
    except ImportError:  # no delta extra: only Iceberg's conflicts can occur
        CommitFailedError = ()  # type: ignore[assignment,misc]  # noqa: N806
    if isinstance(error, CommitFailedError):
        return True
    if type(error).__name__ == "Py4JJavaError" or type(error).__module__.startswith("pyspark"):
        text = str(error)
        return any(marker in text for marker in _ICEBERG_CONFLICTS)
    return False


def retry_on_conflict(table: str, work: Callable[[], T], what: str = "commit",
                      attempts: int = COMMIT_ATTEMPTS) -> T:
    """``work()``, tried again from scratch while it fails with a commit conflict on ``table``."""
    backoff = FIRST_BACKOFF_S
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except Exception as error:
            if not is_commit_conflict(error):
                raise
            if attempt == attempts:
                raise CommitConflictError(table, attempts, error) from error
            log.warning("%s of %s conflicted with a concurrent commit (try %d of %d), trying again: %s",
                        what, table, attempt, attempts, first_line(error))
            time.sleep(backoff * random.uniform(0.5, 1.5))
            backoff = min(backoff * 2, MAX_BACKOFF_S)
    raise AssertionError("unreachable")
