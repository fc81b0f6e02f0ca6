"""``contraction.f32-sums`` and ``contraction.whole-output`` (visa/engines/contraction/fast_sums.py) against
the Contraction Engine's reference arithmetic and bookkeeping (issue 24): the same accumulated values and
known-mask, the same committed bytes and the same cycles with the paths on and off — i8 products whose sums stay
below 2^24 (summed in float32 then) and reach past it (float64, as the reference), bf16 (``contraction.float-steps``:
the Reducer's order over the operands' views, against the reference's steps, bit for bit),
poisoned activations, two slices computed or every slice of the chip (L4318–4548)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests import two_slice_gemm
from visa import AccumulationKind, AxisSet, Context, TrfAddress, bf16, fastpaths, i8
from visa.engines.contraction import fast_sums
from visa.testing import place_dm, place_trf

PATHS = ("contraction.f32-sums", "contraction.whole-output", "contraction.float-steps", "contraction.product-into")


def _operands(rng: np.random.Generator, dtype: Any, shape_a: tuple[int, ...], shape_w: tuple[int, ...]
              ) -> tuple[np.ndarray, np.ndarray]:
    if dtype is bf16:
        return (rng.standard_normal(shape_a).astype(np.float32), rng.standard_normal(shape_w).astype(np.float32))
    return (rng.integers(-128, 128, size=shape_a).astype(np.int8), rng.integers(-128, 128, size=shape_w)
            .astype(np.int8))


def _two_slices(dtype: Any, k: int, poison: bool, seed: int) -> tuple[list[np.ndarray], list[int]]:
    """A 64 × K · K × 32 GEMM on two slices (tests/two_slice_gemm.py, J / 8 a TRF tiling digit)."""
    ax = AxisSet(I=64, J=32, K=k)
    m = ax.m
    x, y = _operands(np.random.default_rng(seed), dtype, (64, k), (k, 32))
    ctx = Context.acquire()
    a_dm, trf, n, flit = two_slice_gemm.operands(ctx, ax, x, y, dtype)
    if poison:  # two activation bytes never written: their products are poison
        ctx.memory.chip(0).dm.unwrite(np.array([a_dm.address + 3, a_dm.address + 70]), np.ones((2, 256, 2), bool))
    acc = (ctx.main.begin(a_dm.view()).fetch(dtype, m["I % 32"], m["K"])
           .collect(m[f"I % 32, K / {flit}"], m[f"K % {flit}"])
           .align(m[f"I % 32, K / {n}, J / 8"], m[f"K % {n}"], trf).contract(m["1"])
           .accumulate(m["I % 32, J / 8"], m["J % 8"], AccumulationKind.Interleaved))
    return _result(ctx, acc, m["I % 32, J"], 32 * 32 * 4)


def _every_slice(dtype: Any, k: int, poison: bool, seed: int) -> tuple[list[np.ndarray], list[int]]:
    """512 slices, each an (8 × K) · (K × 16) product: every position computed, every lane a Row."""
    ax = AxisSet(C=2, S=256, I=8, K=k, J=16)
    m = ax.m
    a, b = _operands(np.random.default_rng(seed), dtype, (2, 256, 8, k), (2, 256, 16, k))
    ctx = Context.acquire()
    a_dm = place_dm(ctx, a, dtype, m["1"], m["C"], m["S"], m["I, K"], 0, axes="C S I K")
    trf = place_trf(ctx, b, dtype, m["1"], m["C"], m["S"], m["J % 8"], m["J / 8, K"], TrfAddress.Full,
                    axes="C S J K")
    if poison:
        ctx.memory.chip(0).dm.unwrite(np.array([5]), np.ones((2, 256, 1), bool) & (np.arange(256) % 7 == 0)[:, None])
    flit = 32 if dtype is i8 else 16
    n = 2 * flit
    acc = (ctx.main.begin(a_dm.view()).fetch(dtype, m["I"], m["K"]).collect(m[f"I, K / {flit}"], m[f"K % {flit}"])
           .align(m[f"I, K / {n}, J / 8"], m[f"K % {n}"], trf).contract(m["1"])
           .accumulate(m["I, J / 8"], m["J % 8"], AccumulationKind.Interleaved))
    return _result(ctx, acc, m["I, J"], 8 * 16 * 4)


def _result(ctx: Context, acc: Any, element: Any, nbytes: int) -> tuple[list[np.ndarray], list[int]]:
    """The accumulated stream (values, known), the committed DM bytes and written-mask, every op's cycles."""
    out = [np.asarray(acc.data.values).copy(), np.asarray(acc.data.known).copy()]
    dm = acc.commit(element, 1 << 18)
    img = ctx.memory.chip(0).dm
    lo, hi = dm.address, dm.address + nbytes  # (read without materialising the image's mask)
    out += [img.read_data()[..., lo:hi].copy(), img.known_bytes(lo, hi)]
    return out, [op.cycles for op in ctx.schedule.ops]


@pytest.mark.parametrize("layout", [_two_slices, _every_slice])
@pytest.mark.parametrize("dtype, k", [(i8, 64), (i8, 2048), (bf16, 64), (bf16, 512)])
@pytest.mark.parametrize("poison", [False, True])
def test_contraction_paths_are_the_reference(layout: Any, dtype: Any, k: int, poison: bool) -> None:
    fast, fast_cycles = layout(dtype, k, poison, k)
    with fastpaths.disabled(*PATHS):
        reference, reference_cycles = layout(dtype, k, poison, k)
    assert fast_cycles == reference_cycles
    for got, want in zip(fast, reference, strict=True):  # (floats bit for bit: -0.0 is not 0.0)
        assert got.dtype == want.dtype
        bits = np.dtype(f"u{got.itemsize}") if got.dtype.kind == "f" else got.dtype
        assert np.array_equal(np.ascontiguousarray(got).view(bits), np.ascontiguousarray(want).view(bits))


def _on(*names: str) -> None:
    """Skip a test of what a path does when the environment switched it off (``VISA_FASTPATHS``)."""
    if not all(fastpaths.get(n).on for n in names):
        pytest.skip("switched off by VISA_FASTPATHS")


def test_the_sum_type_is_float32_only_where_exact() -> None:
    """2^24 / 2^14 = 1024 i8 products stay exact in float32; 1025 do not (L4384–4392: exact i32 sums)."""
    _on("contraction.f32-sums")
    assert fast_sums.sum_type(np.float64, 1024, 1024) is np.float32
    assert fast_sums.sum_type(np.float64, 1025, 1024) is np.float64
    assert fast_sums.sum_type(np.float64, 64, 0) is np.float64  # not integers
    assert fast_sums.sum_type(np.float32, 64, 1024) is np.float32  # floats: the reference's own type
    with fastpaths.disabled("contraction.f32-sums"):
        assert fast_sums.sum_type(np.float64, 64, 1024) is np.float64


def test_the_whole_output_is_handed_on() -> None:
    """Every slice and lane computed, nothing poison: the stream's known-mask is a broadcast (no array of Trues),
    and with the path off it is an array (the reference's)."""
    _on("contraction.whole-output")
    def known_strides() -> tuple[int, ...]:
        ax = AxisSet(C=2, S=256, I=8, K=64, J=8)
        m = ax.m
        a, b = _operands(np.random.default_rng(0), i8, (2, 256, 8, 64), (2, 256, 8, 64))
        ctx = Context.acquire()
        a_dm = place_dm(ctx, a, i8, m["1"], m["C"], m["S"], m["I, K"], 0, axes="C S I K")
        trf = place_trf(ctx, b, i8, m["1"], m["C"], m["S"], m["J"], m["K"], TrfAddress.Full, axes="C S J K")
        acc = (ctx.main.begin(a_dm.view()).fetch(i8, m["I"], m["K"]).collect(m["I, K / 32"], m["K % 32"])
               .align(m["I"], m["K"], trf).contract(m["1"]).accumulate(m["I"], m["J"], AccumulationKind.Interleaved))
        return tuple(acc.data.known.strides)

    assert set(known_strides()) == {0}
    with fastpaths.disabled("contraction.whole-output"):
        assert set(known_strides()) != {0}
