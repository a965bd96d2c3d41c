"""Rules that replay the bronze change log: no resurrected deletes, silver equals the replay of bronze.

The replay runs in the engine as one grouped aggregate over bronze (``latest``): per key, the newest
event's operation, position and an md5 of its source columns -- silver's rule (``lakecdc.lake.merge_plan``):
the newest event wins; ``d`` removes the key; ``t`` removes every row older than it. A column an event
names in ``_unavailable`` (PostgreSQL's unchanged TOAST value, Oracle's LOB placeholder) keeps the
value of the key's newest event that carried it. Silver is hashed the same way and the two are joined
on the key, so only keys and hashes move through the engine's join, never whole rows.

Only the sampled failing keys come back; their detail (which columns differ) is worked out from
their own bronze events and silver rows, read by key (``_sample_detail``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakecdc.audit.diff import same_value
from lakecdc.audit.tables import describe_value
from lakecdc.quality.engine import NULL_TEXT
from lakecdc.quality.rules import CheckContext, RuleResult, needs_bronze, result, rule

if TYPE_CHECKING:
    import pandas as pd

MISSING = "in the bronze replay but not in silver"
EXTRA = "in silver but not in the bronze replay"


def _carried(ctx: CheckContext) -> list[str]:
    """Compared columns some bronze event names as unavailable (usually none)."""
    if "_unavailable" not in ctx.bronze_schema.names:
        return []
    found = ctx.engine.sql(f"SELECT DISTINCT u FROM (SELECT {ctx.engine.explode('_unavailable')} AS u "
                           f"FROM {ctx.bronze}) x").column(0).to_pylist()
    return [c for c, _ in ctx.compared_columns() if c in set(found)]


def _hashes(ctx: CheckContext, carried: list[str], bronze: bool) -> str:
    """Per row: ``h`` over the plain columns, ``hc0..`` one per carried column (bronze: null where the
    event holds a placeholder or deletes the key, so the newest real value wins)."""
    e, q = ctx.engine, ctx.engine.quote
    columns = ctx.compared_columns()
    parts = [f"{e.row_hash([(c, t) for c, t in columns if c not in carried])} AS h"]
    for i, (name, type_) in enumerate((c, t) for c, t in columns if c in carried):
        value = f"md5(coalesce({e.text(q(name), type_)}, '{NULL_TEXT}'))"
        if bronze:
            value = f"CASE WHEN {e.contains('_unavailable', e.literal(name))} OR _op = 'd' THEN NULL ELSE {value} END"
        parts.append(f"{value} AS hc{i}")
    return ", ".join(parts)


def _truncated_before(ctx: CheckContext) -> str:
    """SQL condition on ``sk``: older than bronze's newest truncate (``FALSE`` when there is none)."""
    newest = ctx.engine.sql(f"SELECT max({ctx.engine.seq_key()}) AS t FROM {ctx.bronze} WHERE _op = 't'")
    position = newest.column(0).to_pylist()[0]
    return "FALSE" if position is None else f"sk < {ctx.engine.literal(position)}"


def latest(ctx: CheckContext, carried: list[str]) -> str:
    """Per key the newest non-truncate bronze event: ``op``, ``sk`` (position), ``h``, ``hc..``, ``gone``."""
    e = ctx.engine
    order = ["sk", "kp", "ko"]
    names = set(ctx.bronze_schema.names)
    partition = "_kafka_partition" if "_kafka_partition" in names else "0"
    offset = "_offset" if "_offset" in names else "0"
    events = (f"(SELECT {ctx.key_list()}, _op AS op, {e.seq_key()} AS sk, {partition} AS kp, {offset} AS ko, "
              f"{_hashes(ctx, carried, bronze=True)} FROM {ctx.bronze} WHERE _op <> 't')")
    newest = [f"{e.newest(c, order)} AS {c}" for c in ("op", "sk", "h")]
    newest += [f"{e.newest(f'hc{i}', order)} FILTER (WHERE hc{i} IS NOT NULL) AS hc{i}" for i in range(len(carried))]
    grouped = f"(SELECT {ctx.key_list()}, {', '.join(newest)} FROM {events} ev GROUP BY {ctx.key_list()})"
    return f"(SELECT g.*, (op = 'd' OR {_truncated_before(ctx)}) AS gone FROM {grouped} g)"


@rule("no_resurrected_deletes")
def no_resurrected_deletes(ctx: CheckContext) -> RuleResult:
    missing = needs_bronze("no_resurrected_deletes", ctx)
    if missing:
        return missing
    failing = (f"(SELECT {ctx.key_list('s.')} FROM {ctx.live()} s JOIN {latest(ctx, [])} l "
               f"ON {ctx.key_match('s', 'l')} WHERE l.gone)")
    return result("no_resurrected_deletes", ctx.count(failing),
                  lambda: ctx.rows_for(ctx.live(), ctx.sample_keys(failing)), ctx.count(ctx.live()),
                  "no silver row was deleted or truncated later in bronze",
                  "{n} silver rows whose newest bronze event is a delete (or older than a truncate)")


@rule("silver_matches_bronze_replay")
def silver_matches_bronze_replay(ctx: CheckContext) -> RuleResult:
    """Silver equals the replay of bronze: per key the newest non-delete event newer than the last
    truncate, with the same source column values. Failing rows carry ``_problem``."""
    missing = needs_bronze("silver_matches_bronze_replay", ctx)
    if missing:
        return missing
    carried = _carried(ctx)
    expected = f"(SELECT * FROM {latest(ctx, carried)} l WHERE NOT gone)"
    silver = f"(SELECT {ctx.key_list()}, {_hashes(ctx, carried, bronze=False)} FROM {ctx.live()} s)"
    q = ctx.engine.quote
    keys = ", ".join(f"coalesce(e.{q(k)}, s.{q(k)}) AS {q(k)}" for k in ctx.keys)
    empty = f"md5('{NULL_TEXT}')"
    differs = " OR ".join(["e.h <> s.h", *(f"coalesce(e.hc{i}, {empty}) <> s.hc{i}" for i in range(len(carried)))])
    diff = (f"(SELECT {keys}, CASE WHEN s.h IS NULL THEN '{MISSING}' WHEN e.h IS NULL THEN '{EXTRA}' "
            f"ELSE 'differs' END AS problem FROM {expected} e FULL OUTER JOIN {silver} s "
            f"ON {ctx.key_match('e', 's')} WHERE e.h IS NULL OR s.h IS NULL OR {differs})")
    live_keys = ctx.count(expected)
    return result("silver_matches_bronze_replay", ctx.count(diff), lambda: _sample_detail(ctx, diff),
                  ctx.count(ctx.live()), f"silver equals the replay of bronze ({live_keys} live keys)",
                  "{n} keys differ between silver and the replay of bronze")


def _sample_detail(ctx: CheckContext, diff: str) -> pd.DataFrame:
    """The sampled keys' silver rows (or replayed events) with ``_problem`` naming what differs."""
    import pandas as pd

    sample = ctx.engine.sql(f"SELECT * FROM {diff} d LIMIT {ctx.sample}")
    keys = sample.select(list(ctx.keys))
    silver, events = ctx.rows_for(ctx.live(), keys), ctx.rows_for(ctx.bronze, keys)
    columns = [c for c, _ in ctx.compared_columns()]
    rows = {_key(r, ctx.keys): r for r in silver.to_dict("records")}
    newest = _latest_events(events, ctx.keys)
    problems: list[dict[str, Any]] = []
    for found in sample.to_pylist():
        key = tuple(describe_value(found[k]) for k in ctx.keys)
        if found["problem"] == MISSING:
            event = newest.get(key, {})
            problems.append({**{c: event.get(c) for c in columns}, "_problem": MISSING})
            continue
        row = rows.get(key, dict(zip(ctx.keys, key)))
        if found["problem"] == EXTRA:
            problems.append({**row, "_problem": EXTRA})
            continue
        want = newest.get(key, {})
        differing = [c for c in columns if not same_value(want.get(c), row.get(c))]
        problems.append({**row, "_problem": f"differs from the replay in {', '.join(differing)}"})
    return pd.DataFrame(problems)


def _key(row: dict[str, Any], keys: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(describe_value(row[k]) for k in keys)


def _latest_events(bronze: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Per key, the newest bronze event, unavailable columns carried from older events (a few keys' events)."""
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    records = [r for r in bronze.to_dict("records") if r["_op"] != "t"]
    records.sort(key=lambda r: (tuple(int(v) for v in describe_value(r["_seq"])), r.get("_kafka_partition") or 0,
                                r.get("_offset") or 0))
    for r in records:
        key = _key(r, keys)
        previous = latest.get(key)
        unavailable = set(describe_value(r.get("_unavailable")) or [])
        if previous is not None and unavailable and previous["_op"] != "d":
            r = {**r, **{c: previous.get(c) for c in unavailable}}  # placeholders keep the stored value
        latest[key] = r
    return latest
