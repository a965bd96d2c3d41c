"""What a maintenance run may do (``MaintenanceOptions``) and how retention is written (``7d``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from lakecdc.errors import ConfigError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str, option: str = "expire-older-than") -> timedelta:
    """``30s``, ``15m``, ``12h``, ``7d``, ``2w`` as a ``timedelta``.

    >>> parse_duration("7d")
    datetime.timedelta(days=7)
    """
    match = _DURATION.match(text.lower())
    if not match:
        raise ConfigError(f"{option}: duration {text!r} is not <number><s|m|h|d|w> (e.g. 7d, 12h)", option)
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


#: Orphan files younger than this are never removed, whatever the retention: a writer may have
#: written them for a commit still in progress (Iceberg's remove_orphan_files refuses less too).
ORPHAN_MIN_AGE = timedelta(days=1)


@dataclass(frozen=True)
class MaintenanceOptions:
    """Defaults keep a week of history (time travel, ``lakecdc audit``) and at least
    ``retain_last`` snapshots, like Iceberg's and Delta's own defaults do."""

    #: snapshots / unreferenced files older than this are removed (time travel stops there)
    expire_older_than: timedelta = timedelta(days=7)
    #: Iceberg: snapshots kept whatever their age (the newest lakecdc commit is always kept too)
    retain_last: int = 5
    #: also delete files no snapshot/version references (left by killed writes) once older than
    #: ``expire_older_than`` (at least ``ORPHAN_MIN_AGE``: younger ones may be a commit in progress)
    remove_orphans: bool = False
    #: key-sorted tables (silver, ledger) are compacted sorted by key (Iceberg sort, Delta Z-order),
    #: which keeps the key-range pruning of the silver MERGE effective
    sort_by_key: bool = True
    #: delete-ledger removals older than this (source time) are dropped; None keeps them all
    #: (``lakecdc.maintenance.ledger`` says what that trades away)
    ledger_retention: timedelta | None = None
    #: report what would be done, change nothing
    dry_run: bool = False

    def __post_init__(self) -> None:
        if self.expire_older_than < timedelta(0):
            raise ConfigError("expire-older-than must not be negative", "expire-older-than")
        if self.remove_orphans and self.expire_older_than < ORPHAN_MIN_AGE:
            raise ConfigError(f"remove-orphans needs expire-older-than of at least {ORPHAN_MIN_AGE.days}d: a "
                              f"younger file no commit references yet may belong to a write in progress, and "
                              f"removing it would corrupt that commit", "expire-older-than")
        if self.ledger_retention is not None and self.ledger_retention < timedelta(0):
            raise ConfigError("ledger-retention must not be negative", "ledger-retention")
        if self.retain_last < 1:
            raise ConfigError("retain-last must be at least 1 (the current snapshot)", "retain-last")
