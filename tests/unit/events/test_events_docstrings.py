"""The examples in the events modules' docstrings are true (run as doctests)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["javanum", "serde", "positions", "position_text", "topics", "logical", "transaction"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"lakecdc.events.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
