"""The examples in the config and transport docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

from lakecdc.config.redact import forget_secrets

MODULES = [
    "lakecdc.config", "lakecdc.config.sources", "lakecdc.config.filters", "lakecdc.config.redact",
    "lakecdc.config.columns", "lakecdc.transport.jsonl", "lakecdc.transport.kafka",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    try:
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    finally:
        forget_secrets()  # the redact example registers one
    assert result.failed == 0
    if name in {"lakecdc.config.sources", "lakecdc.config.filters", "lakecdc.config.redact"}:
        assert result.attempted > 0
