"""The capture coordinator runs the cyclic collector less often while it captures, and restores
the process's settings afterwards (also when capture fails)."""

from __future__ import annotations

import gc

import pytest

from lakecdc.capture.coordinator import CAPTURE_GC_THRESHOLD0, fewer_gc_passes


@pytest.fixture
def default_gc():
    old, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(700, 10, 10)
    gc.enable()
    yield
    gc.set_threshold(*old)
    (gc.enable if enabled else gc.disable)()


def test_threshold_raised_inside_and_restored_after_a_failure(default_gc):
    with pytest.raises(RuntimeError):
        with fewer_gc_passes():
            assert gc.get_threshold()[0] == CAPTURE_GC_THRESHOLD0
            raise RuntimeError("capture failed")
    assert gc.get_threshold() == (700, 10, 10)


def test_user_settings_left_alone(default_gc):
    gc.set_threshold(500_000, 10, 10)
    with fewer_gc_passes():
        assert gc.get_threshold() == (500_000, 10, 10)
    gc.set_threshold(700, 10, 10)
    gc.disable()
    with fewer_gc_passes():
        assert gc.get_threshold() == (700, 10, 10) and not gc.isenabled()
