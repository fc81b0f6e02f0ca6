"""``dma.visited-known`` (visa/memory/transfer.py, ``_source_known``) against the reference (issue 24): a DMA whose
DM source visits some of the slices between its first and last (a tensor in every second or fourth slice) is
asked whether the bytes it reads were written of those slices alone.  Whatever the slices it skips hold (never
written, written, poisoned in part) and whatever it reads (all written, poisoned in part), the move leaves the same
HBM bytes and written-state, the same DM bytes and written-state and the same schedule with the path alone on as
with every path but it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.fastpath_switch import alone_and_without
from visa import AxisSet, Context, HostTensor, i8, i32

ROWS, COLS = 16, 64
AX = AxisSet(R=ROWS, C=COLS)
M = AX.m
OUT = 1 << 28

#: the DM slice mappings of the rows: every second slice, every fourth, every sixteenth of both clusters
SLICES = ("[R, 1 # 2] # 256", "[R, 1 # 4] # 256", "R % 8, 1 # 32")
CLUSTERS = ("1 # 2", "1 # 2", "R / 8")

#: what the slices the move skips, or reads, hold before it
CASES = ("fresh", "others written", "others poisoned", "read poisoned", "read partly written")


def _run(layout: int, case: str, wide: bool) -> tuple[Any, ...]:
    ctx = Context.acquire()
    dtype = i32 if wide else i8
    nb = 4 if wide else 1
    rng = np.random.default_rng(layout * 10 + len(case))
    x = rng.integers(-100, 100, size=(ROWS, COLS)).astype(np.int32 if wide else np.int8)
    dmi = ctx.memory.chip(0).dm
    row = COLS * nb
    if case in ("others written", "others poisoned"):  # every slice of both clusters written first
        full = AxisSet(S=512, C=COLS)
        y = rng.integers(-100, 100, size=(512, COLS)).astype(x.dtype)
        h = HostTensor.from_numpy(y, dtype, full.m["S, C"]).to_hbm(full.m["1"], full.m["S, C"], ctx.pdma, 1 << 20)
        h.to_dm(full.m["S / 256"], full.m["S % 256"], full.m["C"], ctx.tdma, 0)
        if case == "others poisoned":
            dmi.poison(row // 4, row // 2, np.array([1, 3, 5, 258], dtype=np.int64))
    hbm = HostTensor.from_numpy(x, dtype, M["R, C"]).to_hbm(M["1"], M["R, C"], ctx.pdma, 0)
    dm = hbm.to_dm(M[CLUSTERS[layout]], M[SLICES[layout]], M["C"], ctx.tdma, 0)
    if case == "read poisoned":  # a few bytes of the first slice the move reads
        dmi.poison(3, 3 + nb, np.array([0], dtype=np.int64))
    if case == "read partly written":  # the second half of a read slice poisoned
        dmi.poison(row // 2, row, np.array([0], dtype=np.int64))
    out = dm.to_hbm(M["R, C"], ctx.tdma, OUT)
    img = ctx.memory.chip(0).hbm
    h_vals, h_known = img.gather(np.arange(OUT, OUT + ROWS * row, dtype=np.int64))
    data, written = dmi.read_data()[..., :row], dmi.known_bytes(0, row)
    ops = [(o.track, o.name, o.start, o.cycles) for o in ctx.schedule.ops]
    got = out.to_host(M["R, C"], ctx.pdma)
    return (np.array(h_vals), np.array(h_known), np.array(data), np.array(written), ops,
            np.array(got.numpy()) if case not in ("read poisoned", "read partly written") else None)


@pytest.mark.parametrize("layout", range(len(SLICES)))
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("wide", [True, False])
def test_visited_known_moves_as_the_reference(layout: int, case: str, wide: bool) -> None:
    fast, ref = alone_and_without("dma.visited-known", lambda: _run(layout, case, wide))
    for a, b in zip(fast, ref, strict=True):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)
        else:
            assert a == b


def test_the_rows_arrive_whole() -> None:
    """A move of rows held in every fourth slice writes them, known, into HBM (checked against numpy)."""
    h_vals, h_known, *_, got = _run(1, "fresh", True)
    assert bool(h_known.all())
    x = np.random.default_rng(10 + len("fresh")).integers(-100, 100, size=(ROWS, COLS)).astype(np.int32)
    assert np.array_equal(got, x)
