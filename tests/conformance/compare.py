"""Record-by-record comparison of two captures after masking what legitimately differs.

A capture is a list of ``{"topic", "key", "value", "headers"}`` dicts (JSON-lines as written by
``JsonlSink`` and by ``debezium_runner.py``). Masking follows the rules of
/work/shared/conformance/normalize.py, reimplemented here and configurable per connector:

- ``ts_ms``/``ts_us``/``ts_ns`` anywhere in a key or value payload -> ``"<ts>"``;
- position fields of the ``source`` block (``lsn``, ``txId``, ``xmin``, ``sequence``, ``file``,
  ``pos``, ``row``, ``thread``, ``gtid``, ``server_id``, ``query``) -> a placeholder;
- transaction ids (``"<txId>:<lsn>"`` PostgreSQL, ``"<a>-<b>-<c>"`` MySQL) in ``id`` fields;
- schema-change ``position`` objects;
- headers named in ``header_masks`` (Debezium's per-run ``__debezium.context.runId``).

Everything else (topics, schemas, keys, before/after, op, order, counts) must be equal, with
JSON types compared strictly (``1`` is not ``1.0``, ``true`` is not ``1``).

>>> exp = [{"topic": "t", "key": None, "value": {"payload": {"after": {"b": "AA=="}, "ts_ms": 1}}, "headers": []}]
>>> act = [{"topic": "t", "key": None, "value": {"payload": {"after": {"b": "AB=="}, "ts_ms": 2}}, "headers": []}]
>>> [str(d) for d in compare(exp, act)]
["record 0 value.payload.after.b: 'AA==' != 'AB=='"]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Record = Mapping[str, Any]

TS_KEYS = frozenset({"ts_ms", "ts_us", "ts_ns"})
ALL_SOURCE_MASKS: Mapping[str, str] = {
    "lsn": "<pos>", "txId": "<txid>", "xmin": "<xmin>", "sequence": "<pos>", "file": "<pos>",
    "pos": "<pos>", "row": "<pos>", "thread": "<thread>", "gtid": "<txid>", "server_id": "<server>",
    "query": "<query>",
}
TXID = re.compile(r"^[0-9]+:[0-9]+$|^[0-9]+-[0-9]+-[0-9]+$")
RECORD_PARTS = ("topic", "key", "value", "headers")
# Transaction ids per connector (Debezium 3.x): PostgreSQL "<txId>:<lsn>"; MySQL a GTID
# "<server uuid>:<n>" or "<file>-<pos>-<row>"-like triples (MariaDB GTIDs "0-1-5"); SQL Server
# the commit LSN "00000025:00000d08:0025"; Oracle the XID in hex.
TXID_BY_CONNECTOR: Mapping[str, re.Pattern[str]] = {
    "postgres": re.compile(r"^[0-9]+:[0-9]+$"),
    "mysql": re.compile(r"^[0-9a-fA-F-]{36}:[0-9]+(-[0-9]+)?$|^[0-9]+-[0-9]+-[0-9]+$"),
    "sqlserver": re.compile(r"^[0-9a-fA-F]{8}:[0-9a-fA-F]{8}:[0-9a-fA-F]{4}$"),
    "oracle": re.compile(r"^[0-9a-fA-F]{16}$"),
}


@dataclass(frozen=True)
class MaskRules:
    """What :func:`compare` masks before comparing. ``for_connector`` gives the presets."""

    ts_keys: frozenset[str] = TS_KEYS
    source_masks: Mapping[str, str] = field(default_factory=lambda: dict(ALL_SOURCE_MASKS))
    txid_pattern: re.Pattern[str] | None = TXID
    mask_schema_change_position: bool = True
    header_masks: frozenset[str] = frozenset({"__debezium.context.runId"})
    compare_headers: bool = True
    extra_paths: frozenset[str] = frozenset()  # dotted paths masked as "<masked>", e.g. "value.payload.source.version"

    @classmethod
    def for_connector(cls, connector: str, **overrides: Any) -> MaskRules:
        """Preset per connector: only that connector's source position fields are masked."""
        fields = {
            "postgres": ("lsn", "txId", "xmin", "sequence"),
            "mysql": ("file", "pos", "row", "thread", "gtid", "server_id", "query", "sequence"),
            "sqlserver": ("change_lsn", "commit_lsn", "event_serial_no", "sequence"),
            "oracle": ("scn", "commit_scn", "txId", "rs_id", "ssn", "redo_thread", "sequence"),
        }.get(connector)
        if fields is None:
            raise ValueError(f"no mask preset for connector '{connector}': use postgres, mysql, sqlserver or oracle")
        masks = {name: ALL_SOURCE_MASKS.get(name, "<pos>") for name in fields}
        return replace(cls(source_masks=masks, txid_pattern=TXID_BY_CONNECTOR[connector]), **overrides)


@dataclass(frozen=True)
class Difference:
    """One difference between an expected and an actual record (or a missing/extra/moved one)."""

    kind: str  # "value", "missing", "extra", "order"
    expected_index: int | None
    actual_index: int | None
    path: str = ""
    expected: Any = None
    actual: Any = None

    def __str__(self) -> str:
        where = (f"record {self.expected_index}" if self.expected_index is not None
                 else f"actual record {self.actual_index}")
        if self.kind == "value" and self.actual_index != self.expected_index:
            where += f" (actual {self.actual_index})"
        if self.kind == "missing":
            return f"{where} missing from actual: {_summary(self.expected)}"
        if self.kind == "extra":
            return f"{where} not expected: {_summary(self.actual)}"
        if self.kind == "order":
            return f"{where} found at actual position {self.actual_index} (order differs): {_summary(self.expected)}"
        return f"{where} {self.path}: {_show(self.expected)} != {_show(self.actual)}"


# --------------------------------------------------------------------------- masking


def mask_record(record: Record, rules: MaskRules) -> dict[str, Any]:
    """A masked copy of ``record`` holding only topic/key/value/headers.

    Payloads and headers are copied (JSON round trip: exact, ~10x faster than ``copy.deepcopy``)
    and masked; the Connect schemas, which masking never touches, are shared with ``record``.
    Treat the result as read-only.
    """
    out: dict[str, Any] = {"topic": record.get("topic")}
    for part in ("key", "value"):
        node = record.get(part)
        if isinstance(node, dict) and "payload" in node:
            payload = _json_copy(node["payload"])
            _walk(payload, None, rules)
            node = {**node, "payload": payload}
        elif isinstance(node, dict):  # schemas disabled: the payload is the node itself
            node = _json_copy(node)
            _walk(node, None, rules)
        out[part] = node
    headers = _json_copy(record.get("headers") or []) if rules.compare_headers else []
    for header in headers:
        if header.get("key") in rules.header_masks:
            header["value"] = "<masked>"
    out["headers"] = headers
    if rules.extra_paths:
        out = _json_copy(out)
        for path in rules.extra_paths:
            _mask_path(out, path.split("."))
    return out


def _json_copy(node: Any) -> Any:
    return json.loads(json.dumps(node))


def _walk(node: Any, parent: str | None, rules: MaskRules) -> None:
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if key in rules.ts_keys and isinstance(value, (int, float)) and not isinstance(value, bool):
                node[key] = "<ts>"
            elif parent == "source" and key in rules.source_masks and value is not None:
                node[key] = rules.source_masks[key]
            elif key == "id" and isinstance(value, str) and rules.txid_pattern and rules.txid_pattern.match(value):
                node[key] = "<txid>"
            elif key == "position" and isinstance(value, dict) and rules.mask_schema_change_position:
                node[key] = "<pos>"
            else:
                _walk(value, key, rules)
    elif isinstance(node, list):
        for item in node:
            _walk(item, parent, rules)


def _mask_path(node: Any, parts: list[str]) -> None:
    for part in parts[:-1]:
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
    if isinstance(node, dict) and parts[-1] in node and node[parts[-1]] is not None:
        node[parts[-1]] = "<masked>"


# --------------------------------------------------------------------------- comparison


def compare(expected: Sequence[Record], actual: Sequence[Record], rules: MaskRules | None = None) -> list[Difference]:
    """Every difference between two captures after masking, each with its path.

    Records are aligned by identity (topic, key payload, op, tombstone) so that one missing or
    extra record is reported as such instead of shifting every later comparison; records found
    at another position are reported as order differences.
    """
    rules = rules or MaskRules()
    exp = [mask_record(r, rules) for r in expected]
    act = [mask_record(r, rules) for r in actual]
    exp_text = [json.dumps(r) for r in exp]  # equal texts: strictly equal records (1 vs 1.0 differ)
    act_text = [json.dumps(r) for r in act]
    if exp_text == act_text:
        return []
    differences: list[Difference] = []
    missing: list[int] = []
    extra: list[int] = []
    for tag, i1, i2, j1, j2 in align([_identity(r) for r in exp], [_identity(r) for r in act]):
        if tag in ("equal", "replace"):
            pairs = min(i2 - i1, j2 - j1)
            for offset in range(pairs):
                i, j = i1 + offset, j1 + offset
                if exp_text[i] != act_text[j]:
                    differences.extend(_diff_record(i, j, exp[i], act[j]))
            missing.extend(range(i1 + pairs, i2))
            extra.extend(range(j1 + pairs, j2))
        elif tag == "delete":
            missing.extend(range(i1, i2))
        elif tag == "insert":
            extra.extend(range(j1, j2))
    differences.extend(_missing_extra_or_moved(exp, act, missing, extra))
    return differences


Opcode = tuple[str, int, int, int, int]


def align(a: Sequence[str], b: Sequence[str], max_edits: int = 2000) -> list[Opcode]:
    """A shortest edit script between two sequences, as difflib-style opcodes.

    Common prefix and suffix are matched first (the usual case: a few differences in a long
    capture costs O(n)); the middle uses Myers' O((N+M)·D) algorithm. Beyond ``max_edits``
    differences the middle is paired by position (the captures are too different for an
    alignment to help the reader).
    """
    n, m = len(a), len(b)
    start = 0
    while start < n and start < m and a[start] == b[start]:
        start += 1
    end_a, end_b = n, m
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    opcodes: list[Opcode] = []
    if start:
        opcodes.append(("equal", 0, start, 0, start))
    middle = _myers(a[start:end_a], b[start:end_b], max_edits)
    if middle is None:
        opcodes.append(("replace", start, end_a, start, end_b))
    else:
        opcodes.extend((tag, i1 + start, i2 + start, j1 + start, j2 + start) for tag, i1, i2, j1, j2 in middle)
    if end_a < n:
        opcodes.append(("equal", end_a, n, end_b, m))
    return [op for op in opcodes if op[1] != op[2] or op[3] != op[4]]


def _myers(a: Sequence[str], b: Sequence[str], max_edits: int) -> list[Opcode] | None:
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return [("replace" if n and m else "delete" if n else "insert", 0, n, 0, m)] if n or m else []
    frontier = {1: 0}
    trace: list[dict[int, int]] = []
    for d in range(min(n + m, max_edits) + 1):
        trace.append(dict(frontier))
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and frontier.get(k - 1, -1) < frontier.get(k + 1, -1)):
                x = frontier.get(k + 1, 0)
            else:
                x = frontier.get(k - 1, 0) + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            frontier[k] = x
            if x >= n and y >= m:
                return _script(trace, a, b, k, d)
    return None


def _script(trace: list[dict[int, int]], a: Sequence[str], b: Sequence[str], k: int, d: int) -> list[Opcode]:
    steps: list[tuple[str, int, int]] = []  # ("equal"|"delete"|"insert", i, j), backwards
    x, y = len(a), len(b)
    for depth in range(d, 0, -1):
        frontier = trace[depth]
        down = k == -depth or (k != depth and frontier.get(k - 1, -1) < frontier.get(k + 1, -1))
        prev_k = k + 1 if down else k - 1
        prev_x = frontier.get(prev_k, 0)
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x, y = x - 1, y - 1
            steps.append(("equal", x, y))
        if down:
            y -= 1
            steps.append(("insert", x, y))
        else:
            x -= 1
            steps.append(("delete", x, y))
        k = prev_k
    while x > 0 and y > 0:
        x, y = x - 1, y - 1
        steps.append(("equal", x, y))
    steps.reverse()
    return _group(steps)


def _group(steps: list[tuple[str, int, int]]) -> list[Opcode]:
    """Runs of equal steps; a run of deletions and insertions between two equal runs is a 'replace'."""
    opcodes: list[Opcode] = []
    index = 0
    while index < len(steps):
        tag, i, j = steps[index]
        if tag == "equal":
            end = index
            while end < len(steps) and steps[end][0] == "equal":
                end += 1
            opcodes.append(("equal", i, i + end - index, j, j + end - index))
        else:
            end = index
            while end < len(steps) and steps[end][0] != "equal":
                end += 1
            deletes = [s for s in steps[index:end] if s[0] == "delete"]
            inserts = [s for s in steps[index:end] if s[0] == "insert"]
            i1 = deletes[0][1] if deletes else i
            j1 = inserts[0][2] if inserts else j
            tag_out = "replace" if deletes and inserts else "delete" if deletes else "insert"
            opcodes.append((tag_out, i1, i1 + len(deletes), j1, j1 + len(inserts)))
        index = end
    return opcodes


def compare_by_topic(expected: Sequence[Record], actual: Sequence[Record],
                     rules: MaskRules | None = None) -> list[Difference]:
    """Like :func:`compare`, per topic: for captures read back from Kafka, which orders records
    only within a topic (partition). Paths are prefixed with the topic; indexes are per topic."""
    differences: list[Difference] = []
    topics = list(dict.fromkeys([r.get("topic") for r in expected] + [r.get("topic") for r in actual]))
    for topic in topics:
        found = compare([r for r in expected if r.get("topic") == topic],
                        [r for r in actual if r.get("topic") == topic], rules)
        differences.extend(replace(d, path=f"[{topic}] {d.path}".rstrip()) for d in found)
    return differences


def _missing_extra_or_moved(exp: list[dict[str, Any]], act: list[dict[str, Any]],
                            missing: list[int], extra: list[int]) -> Iterable[Difference]:
    unused_extra = {j: _canonical(act[j]) for j in extra}
    for i in missing:
        text = _canonical(exp[i])
        moved = next((j for j, t in unused_extra.items() if t == text), None)
        if moved is not None:
            del unused_extra[moved]
            yield Difference("order", i, moved, expected=exp[i])
        else:
            yield Difference("missing", i, None, expected=exp[i])
    for j in unused_extra:
        yield Difference("extra", None, j, actual=act[j])


def _diff_record(i: int, j: int, expected: dict[str, Any], actual: dict[str, Any]) -> list[Difference]:
    found: list[Difference] = []
    for part in RECORD_PARTS:
        _diff_node(expected[part], actual[part], part, lambda p, e, a: found.append(Difference("value", i, j, p, e, a)))
    return found


def _diff_node(expected: Any, actual: Any, path: str, report: Any) -> None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            child = f"{path}.{key}"
            if key not in actual:
                report(child, expected[key], "<absent>")
            elif key not in expected:
                report(child, "<absent>", actual[key])
            else:
                _diff_node(expected[key], actual[key], child, report)
        return
    if isinstance(expected, list) and isinstance(actual, list):
        for index in range(max(len(expected), len(actual))):
            child = f"{path}[{index}]"
            if index >= len(actual):
                report(child, expected[index], "<absent>")
            elif index >= len(expected):
                report(child, "<absent>", actual[index])
            else:
                _diff_node(expected[index], actual[index], child, report)
        return
    if type(expected) is not type(actual) or expected != actual:
        report(path, expected, actual)


def _identity(record: dict[str, Any]) -> str:
    key = record.get("key")
    value = record.get("value")
    key_payload = key.get("payload", key) if isinstance(key, dict) else key
    payload = value.get("payload", value) if isinstance(value, dict) else value
    op = payload.get("op") if isinstance(payload, dict) else None
    status = payload.get("status") if isinstance(payload, dict) else None  # transaction BEGIN/END
    return json.dumps([record.get("topic"), key_payload, op, status, value is None], sort_keys=True)


def _canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True)


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 160 else text[:157] + "..."


def _summary(record: Any) -> str:
    if not isinstance(record, dict):
        return _show(record)
    key = record.get("key")
    value = record.get("value")
    payload = value.get("payload", value) if isinstance(value, dict) else None
    op = payload.get("op") if isinstance(payload, dict) else None
    key_payload = key.get("payload", key) if isinstance(key, dict) else key
    kind = "tombstone" if value is None else f"op={op}" if op else "record"
    return f"{record.get('topic')} key={json.dumps(key_payload, sort_keys=True)} {kind}"


# --------------------------------------------------------------------------- reporting


def format_report(differences: Sequence[Difference], expected_count: int, actual_count: int, limit: int = 40) -> str:
    """A readable multi-line report: counts first, then the first ``limit`` differences."""
    kinds = {k: sum(1 for d in differences if d.kind == k) for k in ("value", "missing", "extra", "order")}
    head = (f"{len(differences)} differences between {expected_count} expected and {actual_count} actual records "
            f"({kinds['value']} field, {kinds['missing']} missing, {kinds['extra']} extra, {kinds['order']} order)")
    lines = [head] + [f"  {d}" for d in differences[:limit]]
    if len(differences) > limit:
        lines.append(f"  ... and {len(differences) - limit} more")
    return "\n".join(lines)


def assert_conformant(expected: Sequence[Record], actual: Sequence[Record], rules: MaskRules | None = None,
                      *, limit: int = 40) -> None:
    """pytest helper: fail with a readable report unless the captures are equal after masking."""
    differences = compare(expected, actual, rules)
    if differences:
        raise AssertionError(format_report(differences, len(expected), len(actual), limit))
