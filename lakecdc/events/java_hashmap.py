"""Java's ``HashMap`` iteration order, which Debezium's output follows wherever it fills a default
``new HashMap<>()`` (a transaction's END ``data_collections``, PostgreSQL ``hstore`` maps)."""

from __future__ import annotations

from typing import Any


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode()`` (over UTF-16 code units, 32-bit wrap-around), unsigned."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def java_hashmap_order(pairs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The iteration order of a default ``new HashMap<>()`` filled with ``pairs`` in order: by
    bucket ``(h ^ h >>> 16) & (capacity - 1)`` of the final table (16, doubled whenever size exceeds
    0.75 of it), insertion order within a bucket (resizing keeps it)."""
    if len(pairs) < 2:
        return pairs
    capacity = 16
    while len(pairs) > capacity * 3 // 4:
        capacity *= 2
    mask = capacity - 1

    def bucket(item: tuple[int, tuple[str, Any]]) -> tuple[int, int]:
        h = java_string_hash(item[1][0])
        return (h ^ (h >> 16)) & mask, item[0]

    return [pair for _, pair in sorted(enumerate(pairs), key=bucket)]
