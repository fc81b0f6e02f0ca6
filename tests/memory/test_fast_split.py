"""``dma.split-regions`` (visa/memory/fast_split.py) against merging the regions (issue 24): a tensor written to
HBM in pieces (each its own region; some shared with the host buffer, some poisoned in part, some with gaps
between them) and read into DM in various layouts leaves the same DM bytes and written-state, the same HBM
bytes and regions, and the same cycles with the path on as off; and with it on, the pieces stay as they were
(no region is merged, a host buffer stays shared)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from visa import AxisSet, Context, HbmTensor, HostTensor, fastpaths, i8, i32
from visa.memory.fast_split import pieces

ROWS, COLS = 64, 256
AX = AxisSet(R=ROWS, C=COLS)
M = AX.m
BASE = 1 << 20

#: DM layouts of the [R, C] tensor (cluster, slice, element): rows over slices, columns split in two, a
#: transpose of the column halves, a broadcast over the clusters
LAYOUTS = (("1 # 2", "R, 1 # 4", "C"), ("1 # 2", "R % 32, C / 128, 1 # 4", "R / 32, C % 128"),
           ("C / 128", "R, 1 # 4", "C % 128"), ("1 # 2", "C / 64, 1 # 64", "R, C % 64"),
           ("R / 32", "R % 32, 1 # 8", "C"))


def _run(cuts: list[int], gaps: list[int], poison: int | None, layout: int, dtype: Any
         ) -> tuple[Any, ...]:
    """Write rows ``[cuts[k], cuts[k+1])`` as piece k (``gaps[k]`` bytes further on for each piece before it
    that has a gap: the tensor is then read at the first piece's address over the padded element), poison a
    row if asked, read the tensor into DM; return what can be observed."""
    ctx = Context.acquire()
    nb = 1 if dtype is i8 else 4
    x = np.random.default_rng(len(cuts)).integers(-100, 100, size=(ROWS, COLS)).astype(np.int8 if nb == 1 else np.int32)
    bounds = [0, *cuts, ROWS]
    row = COLS * nb
    shift = 0
    for k in range(len(bounds) - 1):
        r0, r1 = bounds[k], bounds[k + 1]
        if r1 == r0:
            continue
        shift += gaps[k] * row if k else 0
        ax = AxisSet(R=r1 - r0, C=COLS)
        host = HostTensor.from_numpy(np.ascontiguousarray(x[r0:r1]), dtype, ax.m["R, C"], axes="R C")
        host.to_hbm(ax.m["1"], ax.m["R, C"], ctx.pdma, BASE + r0 * row + shift)
    if poison is not None:
        ctx.memory.chip(0).hbm.poison(BASE + poison * row, BASE + poison * row + row // 2)
    element = M["R, C"] if shift == 0 else None
    if element is None:  # the gaps: read back only the first piece's rows, contiguous
        first = bounds[1] if bounds[1] else ROWS
        ax = AxisSet(R=first, C=COLS)
        hbm = HbmTensor.from_addr(ctx, dtype, ax.m["1"], ax.m["R, C"], BASE)
        dm = hbm.to_dm(ax.m["1 # 2"], ax.m["R # 256"], ax.m["C"], ctx.tdma, 0)
    else:
        hbm = HbmTensor.from_addr(ctx, dtype, M["1"], element, BASE)
        cl, sl, el = LAYOUTS[layout]
        dm = hbm.to_dm(M[cl], M[sl], M[el], ctx.tdma, 0)
    dmi = ctx.memory.chip(0).dm
    n = ROWS * COLS * nb  # (every layout keeps a slice's bytes below this)
    data, written = dmi.read_data()[..., :n], dmi.known_bytes(0, n)
    img = ctx.memory.chip(0).hbm
    lo, hi = img.regions()[0][0], img.regions()[-1][1]
    h_vals, h_known = img.gather(np.arange(lo, hi, dtype=np.int64))
    ops = [(o.track, o.name, o.start, o.cycles) for o in ctx.schedule.ops]
    return (np.array(data), np.array(written), h_vals, h_known, img.regions(), ops, dm.address)


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(0, ROWS // 2).map(lambda v: 2 * v), min_size=1, max_size=4).map(sorted),
       gaps=st.lists(st.integers(0, 2), min_size=5, max_size=5),
       poison=st.none() | st.integers(0, ROWS - 1), layout=st.integers(0, len(LAYOUTS) - 1),
       wide=st.booleans())
def test_split_reads_observe_what_merged_reads_do(cuts: list[int], gaps: list[int], poison: int | None,
                                                  layout: int, wide: bool) -> None:
    dtype = i32 if wide else i8
    with fastpaths.only("dma.split-regions"):
        fast = _run(cuts, gaps, poison, layout, dtype)
    with fastpaths.disabled("dma.split-regions"):
        ref = _run(cuts, gaps, poison, layout, dtype)
    for a, b in zip(fast, ref, strict=True):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)
        else:
            assert a == b


@skip_unless("dma.split-regions", "dma.adopt")
def test_pieces_stay_shared_with_their_host_buffers() -> None:
    ctx = Context.acquire()
    x = np.arange(ROWS * COLS, dtype=np.int32).reshape(ROWS, COLS) % 1000
    hosts = []
    for r0 in range(0, ROWS, 16):
        ax = AxisSet(R=16, C=COLS)
        hosts.append(HostTensor.from_numpy(np.ascontiguousarray(x[r0:r0 + 16]), i32, ax.m["R, C"]))
        hosts[-1].to_hbm(ax.m["1"], ax.m["R, C"], ctx.pdma, BASE + r0 * COLS * 4)
    img = ctx.memory.chip(0).hbm
    before = list(img._data)  # noqa: SLF001 (the regions, each sharing a host buffer)
    hbm = HbmTensor.from_addr(ctx, i32, M["1"], M["R, C"], BASE)
    dm = hbm.to_dm(M["1 # 2"], M["R % 32, C / 128, 1 # 4"], M["R / 32, C % 128"], ctx.tdma, 0)
    assert len(img._data) == 4 and all(a is b for a, b in zip(img._data, before, strict=True))  # noqa: SLF001
    back = dm.to_hbm(M["R, C"], ctx.tdma, 1 << 28).to_host(M["R, C"], ctx.pdma).numpy()
    assert np.array_equal(back, x)


def test_pieces_group_iterations_by_region() -> None:
    # rows of 10 bytes in regions [0, 30) and [30, 60): iterations 0-2 in the first, 3-5 in the second
    assert pieces(6, 10, (0, 10), [(0, 30), (30, 60)]) == [(0, 3), (3, 6)]
    # a row straddling the boundary is alone (split again along another loop), the others grouped
    assert pieces(6, 10, (0, 10), [(0, 25), (25, 60)]) == [(0, 2), (2, 3), (3, 6)]
    # a row in a gap (no region holds its first byte) is alone too
    assert pieces(3, 10, (0, 10), [(10, 20), (20, 30)]) == [(0, 1), (1, 2), (2, 3)]
    assert pieces(3, 10, (0, 10), [(0, 40)]) is None
