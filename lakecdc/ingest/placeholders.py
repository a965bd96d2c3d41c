"""Spotting Debezium's "value not available" placeholder in a column, in every form it travels in.

PostgreSQL does not send unchanged TOASTed values; Debezium writes the placeholder
``__debezium_unavailable_value`` (property ``unavailable.value.placeholder``) instead:

- text / json / xml / uuid columns:  ``"__debezium_unavailable_value"``
- bytea with binary.handling.mode=bytes: its bytes, base64 in JSON ``"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="``
  (hex mode: ``"5f5f646562657a69756d..."``; base64-url-safe likewise)
- arrays: a one-element list holding one of the above (``["__debezium_unavailable_value"]``)

Such a value is not the column's value: it is set to null and the column is listed in the row's
``_unavailable`` so the silver MERGE keeps the stored value.
"""

from __future__ import annotations

import base64
from typing import Any


class Placeholders:
    """The placeholder's spellings for one job configuration."""

    def __init__(self, placeholder: str, binary_handling_mode: str = "bytes") -> None:
        raw = placeholder.encode("utf-8")
        forms = {placeholder, base64.b64encode(raw).decode("ascii")}
        if binary_handling_mode == "hex":
            forms.add(raw.hex())
        if binary_handling_mode == "base64-url-safe":
            forms.add(base64.urlsafe_b64encode(raw).decode("ascii"))
        self.forms: frozenset[str] = frozenset(forms)

    def matches(self, value: Any) -> bool:
        if isinstance(value, str):
            return value in self.forms
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
            return value[0] in self.forms
        return False

    def take(self, column: str, values: list[Any], unavailable: list[list[str]], is_array: bool = False) -> None:
        """Null every placeholder in ``values`` (in place) and add ``column`` to those rows' lists."""
        if not is_array and not any(form in values for form in self.forms):
            return  # the common case: a scan in C finds no placeholder in the column
        for j, value in enumerate(values):
            if self.matches(value):
                values[j] = None
                unavailable[j].append(column)
