"""``examples/double_buffer.py`` run again and again (a review reported its TRF image differing on a third run).

A device keeps its memories between launches (a launch occupies the device, L57–58; nothing clears the TRF), so
on one device a single-buffered launch after a double-buffered one finds the second TRF half still holding the
earlier launch's tiles: its TRF image is the first launch's where it writes and the earlier launch's elsewhere,
which it never reads.  The results, each launch's cycles and, on fresh devices, the whole TRF image are the same
on every run (nothing leaks between devices through the plan caches or the fast paths).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.example_loader import load_example
from visa import Context

db = load_example("double_buffer")


def _trf(ctx: Context) -> tuple[Any, Any]:
    data, written = ctx.memory.chip(0).trf.read_view()
    return data.copy(), written.copy()


def test_three_runs_on_fresh_devices_are_one() -> None:
    for double in (False, True):
        runs = []
        for _ in range(3):
            ctx = Context.acquire()
            got, cycles = db.run(double, ctx)
            runs.append((got, cycles, *_trf(ctx)))
        for got, cycles, data, written in runs[1:]:
            assert np.array_equal(got, runs[0][0]) and cycles == runs[0][1]
            assert np.array_equal(written, runs[0][3]) and np.array_equal(data, runs[0][2])


def test_one_device_keeps_what_an_earlier_launch_wrote_to_the_trf() -> None:
    """single, double, single on one device: the same results and per-launch cycles as on fresh devices; the
    third launch's TRF is the first's where the first wrote, the second launch's tiles in the other half."""
    fresh = {double: db.run(double, Context.acquire()) for double in (False, True)}
    ctx = Context.acquire()
    images = []
    for double in (False, True, False):
        got, cycles = db.run(double, ctx)
        assert np.array_equal(got, fresh[double][0]) and cycles == fresh[double][1]
        images.append(_trf(ctx))
    (d1, w1), (d2, w2), (d3, w3) = images
    assert w2.sum() == 2 * w1.sum() and np.array_equal(w3, w2)  # the second half stays written
    assert np.array_equal(d3[w1], d1[w1])  # where the single-buffered launch loads: its own tiles
    assert np.array_equal(d3[w2 & ~w1], d2[w2 & ~w1])  # the other half: the double-buffered launch's
    assert not np.array_equal(d3, d1)  # hence the third image differs from the first, as reported
