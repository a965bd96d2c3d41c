"""Which tables maintenance looks after, and the key columns a key-sorted table is kept sorted by.

A warehouse or catalog may hold tables lakecdc did not write; maintenance takes those lakecdc
made: a table with a lakecdc commit (bronze, silver), the delete ledger of such a table
(``<silver>__deletes``: its commits carry no progress) and the dead-letter table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from lakecdc.lake.layout import LEDGER_SUFFIX, META_COLUMNS

DEAD_LETTER_TABLE = "lakecdc.dead_letters"


def lakecdc_tables(names: Iterable[str], has_progress: Callable[[str], bool],
                   dead_letter_table: str = DEAD_LETTER_TABLE) -> list[str]:
    """``names`` narrowed to lakecdc's tables, sorted (``has_progress``: a lakecdc commit in its history)."""
    candidates = sorted(set(names))
    ours = {n for n in candidates if not n.endswith(LEDGER_SUFFIX) and (n == dead_letter_table or has_progress(n))}
    ledgers = {n for n in candidates if n.endswith(LEDGER_SUFFIX) and n[: -len(LEDGER_SUFFIX)] in ours}
    return sorted(ours | ledgers)


def sort_keys(name: str, columns: Callable[[str], list[str] | None]) -> tuple[str, ...]:
    """The key columns ``name``'s rows are sorted by, () for bronze and dead letters.

    A ledger's key columns are its non-bookkeeping columns; a silver table's are its ledger's
    (``columns(name)``: a table's column names, None if it does not exist).
    """
    ledger = name if name.endswith(LEDGER_SUFFIX) else name + LEDGER_SUFFIX
    ledger_columns = columns(ledger)
    if not ledger_columns:
        return ()
    return tuple(c for c in ledger_columns if c not in META_COLUMNS)
