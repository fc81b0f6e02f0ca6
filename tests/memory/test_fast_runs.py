"""``dma.disjoint-runs`` (visa/memory/fast_runs.py) against numpy's own assignment (issue 24): DM → DM moves
and cluster swaps within one DM image — source and destination rows apart or next to each other, some of the
source never written — leave the same DM bytes and written-state and the
same schedule with the path on as off."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import alone_and_without
from visa import AxisSet, Context, i8, i32
from visa.memory.fast_runs import runs
from visa.testing import place_dm

AX = AxisSet(C=2, S=256, E=64)
M = AX.m


def _run(dst: int, src: int, wide: bool, swap: bool, poison: bool) -> tuple[Any, ...]:
    """Place an [C, S, E] tensor at ``src`` (of every slice's DM; part of it never written if ``poison``), move it
    to ``dst`` (a cluster swap if ``swap``), and return what can be observed."""
    ctx = Context.acquire()
    dtype, nb = (i32, 4) if wide else (i8, 1)
    x = np.random.default_rng(dst + 3 * src).integers(-100, 100, size=(2, 256, 64))
    x = x.astype(np.int32 if wide else np.int8)
    t = place_dm(ctx, x, dtype, M["1"], M["C"], M["S"], M["E"], src, axes="C S E")
    if poison:
        ctx.memory.chip(0).dm.poison(src + 8 * nb, src + 24 * nb)
    view = t.view().cluster_swap() if swap else t.view()
    view.to_dm(M["C"], M["S"], M["E"], ctx.tdma, dst)
    dmi = ctx.memory.chip(0).dm
    n = 4096
    data, written = dmi.read_data()[..., :n], dmi.known_bytes(0, n)
    ops = [(o.track, o.name, o.start, o.cycles) for o in ctx.schedule.ops]
    return np.array(data), np.array(written), ops


@settings(max_examples=30, deadline=None)
@given(dst=st.integers(0, 96).map(lambda v: 32 * v), src=st.integers(0, 96).map(lambda v: 32 * v),
       wide=st.booleans(), swap=st.booleans(), poison=st.booleans())
def test_moves_within_one_image_observe_what_numpy_assignment_does(dst: int, src: int, wide: bool, swap: bool,
                                                                  poison: bool) -> None:
    assume(abs(dst - src) >= (256 if wide else 64))  # (a result over its own input is refused before any DMA)
    (data, written, ops), (ref_data, ref_written, ref_ops) = alone_and_without(
        "dma.disjoint-runs", lambda: _run(dst, src, wide, swap, poison))
    assert np.array_equal(data, ref_data) and np.array_equal(written, ref_written) and ops == ref_ops


def test_runs_merge_loops_in_destination_order() -> None:
    # the DM → DM move of the engines benchmark: 512 slices of 32 KiB, the slice loop split over three loops
    assert runs((8, 32, 8, 2, 4096), (1 << 25, 1 << 19, 4096, 1 << 24, 1),
                (1 << 25, 1 << 19, 4096, 1 << 24, 1)) == (512, 1 << 19, 1 << 19, 32768)
    assert runs((16,), (1,), (1,)) == (1, 16, 16, 16)  # one run
    assert runs((4, 3), (1, 4), (3, 1)) is None  # a transpose of bytes: no contiguous run
    assert runs((2, 4, 8), (64, 16, 1), (64, 8, 1)) is None  # the middle loop steps over a gap on one side only
    assert runs((4, 8), (-8, 1), (8, 1)) is None  # a negative stride
