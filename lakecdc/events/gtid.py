"""GTIDs and GTID sets: MySQL ``uuid:N`` / ``uuid:1-5:7`` and MariaDB ``domain-server-seq``.

MySQL GTID set text (``gtid_executed``, Debezium offset ``gtids``)::

    "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7-9,8f2b...:1-3"

MariaDB GTID position (``gtid_binlog_pos``, Debezium MariaDB offset ``gtids``)::

    "0-1-100,1-2-5"      # domain-server-sequence, one entry per replication domain
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAG = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


@dataclass(frozen=True, slots=True, order=True)
class MariaDbGtid:
    """One MariaDB GTID ``domain-server-sequence``; orders by (domain, sequence) then server."""

    domain: int
    sequence: int
    server: int

    @classmethod
    def parse(cls, text: str) -> MariaDbGtid:
        parts = text.strip().split("-")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise ValueError(f"not a MariaDB GTID (domain-server-sequence): {text!r}")
        return cls(domain=int(parts[0]), server=int(parts[1]), sequence=int(parts[2]))

    def __str__(self) -> str:
        return f"{self.domain}-{self.server}-{self.sequence}"


@dataclass(frozen=True, slots=True)
class MySqlGtid:
    """One MySQL GTID ``source_uuid:transaction_id`` (tagged GTIDs ``uuid:tag:N`` keep the tag)."""

    source: str
    transaction: int
    tag: str | None = None

    @classmethod
    def parse(cls, text: str) -> MySqlGtid:
        parts = text.strip().split(":")
        if len(parts) not in (2, 3) or not _UUID.match(parts[0]) or not parts[-1].isdigit():
            raise ValueError(f"not a MySQL GTID (uuid:N): {text!r}")
        tag = parts[1] if len(parts) == 3 else None
        return cls(source=parts[0].lower(), transaction=int(parts[-1]), tag=tag)

    def __str__(self) -> str:
        middle = f":{self.tag}" if self.tag else ""
        return f"{self.source}{middle}:{self.transaction}"


@dataclass(frozen=True, slots=True)
class GtidSet:
    """A set of GTIDs in either flavour, kept as intervals per source (MySQL; ``uuid`` or
    ``uuid:tag``) or as the highest sequence per domain (MariaDB).

    ``contains`` answers "was this transaction already processed?", the question a restart asks.
    """

    mysql: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()
    mariadb: tuple[MariaDbGtid, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> GtidSet:
        if not text or not text.strip():
            return cls()
        entries = [e.strip() for e in text.replace("\n", "").split(",") if e.strip()]
        if all(re.fullmatch(r"\d+-\d+-\d+", e) for e in entries):
            by_domain: dict[int, MariaDbGtid] = {}
            for e in entries:
                g = MariaDbGtid.parse(e)
                by_domain[g.domain] = max(by_domain.get(g.domain, g), g)
            return cls(mariadb=tuple(sorted(by_domain.values())))
        sources: dict[str, list[tuple[int, int]]] = {}
        for e in entries:
            parts = e.split(":")
            if not _UUID.match(parts[0]) or len(parts) < 2:
                raise ValueError(f"not a GTID set entry (uuid[:tag]:interval[:interval...]): {e!r}")
            uuid = parts[0].lower()
            key = uuid
            for part in parts[1:]:
                if _TAG.match(part):  # MySQL 8.3+ tagged GTIDs: the tag applies to what follows
                    key = f"{uuid}:{part.lower()}"
                    continue
                lo, _, hi = part.partition("-")
                if not lo.isdigit() or (hi and not hi.isdigit()):
                    raise ValueError(f"bad GTID interval {part!r} in {e!r}")
                sources.setdefault(key, []).append((int(lo), int(hi or lo)))
        return cls(mysql=tuple(sorted((s, _merge(iv)) for s, iv in sources.items())))

    def __str__(self) -> str:
        if self.mariadb:
            return ",".join(str(g) for g in self.mariadb)
        return ",".join(
            src + "".join(f":{lo}" if lo == hi else f":{lo}-{hi}" for lo, hi in intervals)
            for src, intervals in self.mysql
        )

    def contains(self, gtid: str | MySqlGtid | MariaDbGtid) -> bool:
        if isinstance(gtid, str):
            gtid = MariaDbGtid.parse(gtid) if re.fullmatch(r"\d+-\d+-\d+", gtid.strip()) else MySqlGtid.parse(gtid)
        if isinstance(gtid, MariaDbGtid):
            return any(g.domain == gtid.domain and g.sequence >= gtid.sequence for g in self.mariadb)
        key = _mysql_key(gtid)
        for src, intervals in self.mysql:
            if src == key:
                return any(lo <= gtid.transaction <= hi for lo, hi in intervals)
        return False

    def latest(self) -> tuple[MySqlGtid | MariaDbGtid, ...]:
        """The newest GTID of each stream: per MariaDB domain its last GTID, per MySQL source
        (``uuid`` or ``uuid:tag``) the highest transaction number. Within a stream GTIDs follow
        binlog order, so a binlog reader that has processed these has processed the whole set."""
        if self.mariadb:
            return self.mariadb
        out: list[MySqlGtid] = []
        for key, intervals in self.mysql:
            source, _, tag = key.partition(":")
            out.append(MySqlGtid(source=source, transaction=intervals[-1][1], tag=tag or None))
        return tuple(out)

    def add(self, gtid: str | MySqlGtid | MariaDbGtid) -> GtidSet:
        """A new set that also holds ``gtid``."""
        if isinstance(gtid, str):
            gtid = MariaDbGtid.parse(gtid) if re.fullmatch(r"\d+-\d+-\d+", gtid.strip()) else MySqlGtid.parse(gtid)
        if isinstance(gtid, MariaDbGtid):
            by_domain = {g.domain: g for g in self.mariadb}
            current = by_domain.get(gtid.domain)
            by_domain[gtid.domain] = gtid if current is None else max(current, gtid)
            return GtidSet(mariadb=tuple(sorted(by_domain.values())))
        sources = {s: list(iv) for s, iv in self.mysql}
        sources.setdefault(_mysql_key(gtid), []).append((gtid.transaction, gtid.transaction))
        return GtidSet(mysql=tuple(sorted((s, _merge(iv)) for s, iv in sources.items())))


def _mysql_key(gtid: MySqlGtid) -> str:
    return f"{gtid.source}:{gtid.tag.lower()}" if gtid.tag else gtid.source


def _merge(intervals: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return tuple(merged)
