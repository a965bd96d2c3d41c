"""Scraping a lakecdc ``/metrics`` endpoint in tests."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int) -> Samples:
    """Every sample of ``/metrics``: (name, sorted labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def wait_for(port: int, done: Callable[[Samples], bool], what: str, timeout: float = 180) -> Samples:
    deadline = time.monotonic() + timeout
    samples: Samples = {}
    while time.monotonic() < deadline:
        try:
            samples = scrape(port)
        except OSError:
            samples = {}
        if samples and done(samples):
            return samples
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}; last scrape:\n"
                         + "\n".join(f"{k}: {v}" for k, v in sorted(samples.items()) if "lakecdc" in k[0]))
