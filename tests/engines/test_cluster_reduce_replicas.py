"""The cluster reduce of the reference's ``matmul_16384`` over replicated slices (issue 24): an asymmetric cluster
slice (ParallelCopy, L7603–7606) of slices known to be replicas records its result's replicas
(``parallel_copy.replicas``), and a cluster swap (a DM → DM tensor DMA through the shuffle) carries them to its
destination (``dma.replica-sources``; ``memory.forget-units`` keeps the first cluster's labels when the second
cluster's copy writes the same bytes of other slices).  With any of them off the bytes, the written-mask and the
schedule are the same; only the labels differ.  The suite sets ``VISA_VERIFY_REPLICAS=1``: every recorded class
is checked against the bytes as it is recorded."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest

from tests.fastpath_switch import skip_unless
from visa import RNGD, AxisSet, Context, fastpaths, i8
from visa.testing import place_dm

PATHS = ("parallel_copy.replicas", "dma.replica-sources", "memory.forget-units")
SRC, SLICED, SWAPPED = 0, 1 << 13, 3 << 12  # (8 KiB a slice of source, 4 KiB halves: whole pages of DM)


def _reduce(seed: int) -> tuple[Any, ...]:
    """Slice, swap; the DM bytes and known-mask of both results, the schedule, the labels of both results."""
    ax = AxisSet(U=2, S=256, B=2, C=4096)
    m = ax.m
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, size=(2, 256, 2, 4096), dtype=np.int8)
    x[:, :] = x[:, np.arange(256) % 4]  # every slice a replica of one of four (per cluster)
    ctx = Context(RNGD)
    t = place_dm(ctx, x, i8, m["1"], m["U"], m["S"], m["B, C"], SRC, axes="U S B C")
    dm = ctx.memory.chip(0).dm
    units = np.arange(512, dtype=np.int64)
    dm.record_replicas(units, (units // 256) * 4 + units % 4, SRC, SRC + 8192)  # (what a broadcast DMA records)
    sliced = t.asymmetric_cluster_slice(m["B"], ctx.sub, [0, 1], SLICED)
    sliced.view().cluster_swap().to_dm(m["U"], m["S"], m["C"], ctx.tdma, SWAPPED)
    data = dm.read_data()[..., SLICED: SWAPPED + 4096].copy()
    known = dm.known_bytes(SLICED, SWAPPED + 4096)
    schedule = [(op.track, op.name, op.start, op.end, op.cycles) for op in ctx.schedule.ops]
    labels = [dm.replica_labels(units, lo, lo + 4096) for lo in (SLICED, SWAPPED)]
    return data, known, schedule, labels


@skip_unless("memory.replicas", *PATHS)
@pytest.mark.parametrize("off", [(), *[(p,) for p in PATHS]])
def test_replicas_survive_the_cluster_reduce_and_change_nothing_else(off: tuple[str, ...]) -> None:
    with fastpaths.disabled(*off) if off else contextlib.nullcontext():  # (disabled() with no names: all off)
        data, known, schedule, labels = _reduce(7)
    with fastpaths.disabled(*PATHS):
        ref_data, ref_known, ref_schedule, _ = _reduce(7)
    assert np.array_equal(data, ref_data) and np.array_equal(known, ref_known) and schedule == ref_schedule
    sliced, swapped = labels
    if "parallel_copy.replicas" in off:
        assert sliced is None and swapped is None
        return
    assert sliced is not None and len(np.unique(sliced)) == 8  # four classes a cluster
    if off:  # none carried over, or the first cluster's erased by the second cluster's copy
        assert swapped is None or not bool((swapped >= 0).all())
    else:
        assert swapped is not None and len(np.unique(swapped)) == 8
        # cluster 0 now holds cluster 1's halves: its slices are replicas as cluster 1's were
        assert np.array_equal(swapped[:256] == swapped[0], sliced[256:] == sliced[256])
