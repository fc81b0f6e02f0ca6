"""``host.staged-view`` (visa/tensors/fast_host.py ``staged_values``) against the reference decode of the staged
bytes (issue 24; ``dtypes.from_bytes``, L1071–1093): an HBM → host read gives the same values, known-mask and
cycles with the path on and off — for the DMA's integer types (the path takes i8, i16 and i32; i4 and the floats
stay on the reference), a plain and a permuted host layout, and HBM bytes partly never written."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.fastpath_switch import needs
from visa import AxisSet, Context, HostTensor, fastpaths
from visa import dtypes as dt

AX = AxisSet(A=4, B=64)
M = AX.m
TYPES = [dt.i4, dt.i8, dt.i16, dt.i32, dt.bf16, dt.f32]  # (the DMA's types, L2525)


def _read(dtype: Any, element: str, hole: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The host tensor read back from HBM: its values, known-mask, and the schedule's cycles."""
    ctx = Context()
    x = dt.random_values(dtype, (4, 64), np.random.default_rng(7))
    host = HostTensor.from_numpy(x, dtype, M["A, B"], axes="A B")
    hbm = host.to_hbm(M["1"], M["A, B"], ctx.pdma, 1 << 12)
    if hole:  # a tensor one row longer than what was written: its last row's bytes are poison
        hbm = type(hbm).from_addr(ctx, dtype, M["1"], M["A # 5, B"], 1 << 12)
    values, known = hbm.to_host(M[element], ctx.pdma).buffer()  # (poison included)
    return values.copy(), np.asarray(known).copy(), tuple(op.cycles for op in ctx.schedule.ops)


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("element", ["A, B", "B, A"])
@pytest.mark.parametrize("hole", [False, True])
def test_staged_view_is_the_reference(dtype: Any, element: str, hole: bool) -> None:
    if hole:
        element = element.replace("A", "A # 5")
    fast = _read(dtype, element, hole)
    with fastpaths.disabled("host.staged-view"):
        reference = _read(dtype, element, hole)
    for got, want in zip(fast, reference, strict=True):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8) if got.dtype.kind == "V" else got,
                                                          want.view(np.uint8) if want.dtype.kind == "V" else want,
                                                          equal_nan=got.dtype.kind == "f")


def test_the_values_are_the_staged_bytes() -> None:
    """Its own structure: an i32 read back is a view of the DMA's host buffer (no decoded copy)."""
    needs("host.staged-view")
    ctx = Context()
    x = np.arange(256, dtype=np.int32).reshape(4, 64) - 128
    hbm = HostTensor.from_numpy(x, dt.i32, M["A, B"], axes="A B").to_hbm(M["1"], M["A, B"], ctx.pdma, 0)
    out = hbm.to_host(M["A, B"], ctx.pdma)
    owner = out.buffer()[0]
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    assert owner.dtype == np.uint8  # the staged bytes themselves
    assert np.array_equal(out.numpy(axes="A B"), x)
