"""Regression tests of the performance paths of issue 15 (no timing here: benchmarks/ measures speed).

Each fast path must give exactly what the general path gives:

- integer contractions in float32 split where a float32 sum would round (``fast_compute.exact_f32_terms``, the
  fast path ``contraction.exact-f32``): sums beyond 2^24 stay exact;
- the Stream Adapter's time broadcast (tiling, L3934–3945) is not materialised for the products, and the aligned
  data still reads as the repeated activation;
- an activation repeated along a weight digit that only the data shows (a materialised broadcast) is multiplied
  once (``fast_compute.drop_repeats``, ``contraction.repeats``), and one that differs along it is not (the
  fetch's own broadcast, the GEMM example's ``J / 8 % 4``, is structure: tests/engines/test_broadcast_streams.py);
- each contraction fast path switched off (``contraction.exact-f32``, ``contraction.repeats``,
  ``contraction.weight-period``, ``contraction.float-steps``) gives the same integers and the same floats, bit for
  bit (float sums in the Reducer's order: tests/engines/test_float_order.py);
- batched products on worker threads equal numpy's;
- plain host layouts (strided copies) equal the evaluated gather, do not alias the caller's array, and round-trip
  through HBM;
- whole-word byte conversions equal their definitions.
"""

from __future__ import annotations

import contextlib
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import two_slice_gemm
from visa import AccumulationKind, AxisSet, Context, HostTensor, TrfAddress, bf16, fastpaths, i8, i32
from visa import dtypes as dt
from visa.engines.contraction import blas
from visa.engines.contraction import compute as C
from visa.engines.contraction import fast_compute as F
from visa.mapping.evaluate import plain_dims

RNG = np.random.default_rng(15)


def _gemm(ax: AxisSet, x: np.ndarray, y: np.ndarray, dtype: Any, tiled: bool) -> tuple[Context, Any]:
    """A 64-row GEMM (J / 8 groups of 8 columns) on 2 slices: ``tiled`` puts ``J / 8`` in the aligner's OutTime
    (the Stream Adapter's broadcast), else in the fetch's Time (the stream carries the repeats, as examples/gemm.py)."""
    m = ax.m
    ctx = Context.acquire()
    a_dm, trf, n, flit = two_slice_gemm.operands(ctx, ax, x, y, dtype)
    if tiled:
        s = (ctx.main.begin(a_dm.view()).fetch(dtype, m["I % 32"], m["K"])
             .collect(m[f"I % 32, K / {flit}"], m[f"K % {flit}"])
             .align(m[f"I % 32, K / {n}, J / 8"], m[f"K % {n}"], trf))
    else:
        s = (ctx.main.begin(a_dm.view()).fetch(dtype, m["I % 32, J / 8"], m["K"])
             .collect(m[f"I % 32, J / 8, K / {flit}"], m[f"K % {flit}"])
             .align(m[f"I % 32, J / 8, K / {n}"], m[f"K % {n}"], trf))
    return ctx, s


def _result(s: Any, ax: AxisSet) -> np.ndarray:
    m = ax.m
    out = (s.contract(m["1"]).accumulate(m["I % 32, J / 8"], m["J % 8"], AccumulationKind.Interleaved)
           .commit(m["I % 32, J"], 1 << 18))
    return np.asarray(out.logical(axes="I J"))


@pytest.mark.parametrize("tiled", [True, False])
def test_i8_sums_beyond_2_24_are_exact(tiled: bool) -> None:
    # every product is positive and odd-ish, so the sums (≈ 2^26) are not multiples of the float32 spacing there
    ax = AxisSet(I=64, J=16, K=4096)  # the TRF row holds J / 8 × K = 8 KiB
    x = RNG.integers(100, 128, size=(64, 4096)).astype(np.int8)
    y = RNG.integers(100, 128, size=(4096, 16)).astype(np.int8)
    _, s = _gemm(ax, x, y, i8, tiled)
    got = _result(s, ax)
    want = x.astype(np.int64) @ y.astype(np.int64)
    assert int(want.max()) > 1 << 24
    assert np.array_equal(got, want)


def test_exact_terms_bound() -> None:
    i8a = np.zeros(1, np.int8)
    assert F.exact_f32_terms(i8a, i8a) == 1024  # 1024 · 2^14 = 2^24
    assert F.exact_f32_terms(np.zeros(1, np.int16), np.zeros(1, np.int16)) == 0  # float64 instead
    assert F.exact_f32_terms(np.zeros(1, np.float32), i8a) == 0


def test_exact_split_matmul_equals_int64() -> None:
    a = np.full((3, 5, 3000), 127, np.int8)
    w = np.full((3, 3000, 4), 127, np.int8)
    a[..., ::7] = -128
    got = C._matmul(a.astype(np.float32), w.astype(np.float32), 1024, np.float64, np.matmul)
    assert np.array_equal(got.astype(np.int64), a.astype(np.int64) @ w.astype(np.int64))


def test_tiled_align_data_reads_as_the_repeated_activation() -> None:
    ax = AxisSet(I=64, J=32, K=128)
    x = dt.random_values(bf16, (64, 128), RNG)
    y = dt.random_values(bf16, (128, 32), RNG)
    _, s = _gemm(ax, x, y, bf16, True)
    act, digits = s.carried.contraction.act, s.carried.contraction.digits
    assert digits == ((act.shape[3], False),)  # nothing repeated by the fetch here
    assert np.array_equal(np.asarray(s.data.values).view(np.uint16),
                          np.repeat(act, s.carried.contraction.align.tiles, axis=3).view(np.uint16))


@pytest.mark.parametrize("tiled", [True, False])
def test_bf16_gemm_paths_agree(tiled: bool) -> None:
    ax = AxisSet(I=64, J=32, K=128)
    x = dt.random_values(bf16, (64, 128), np.random.default_rng(3))
    y = dt.random_values(bf16, (128, 32), np.random.default_rng(4))
    _, s = _gemm(ax, x, y, bf16, tiled)
    got = _result(s, ax).astype(np.float64)
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    want = xf @ yf
    assert np.all(np.abs(got - want) <= 128 * 2.0**-23 * (np.abs(xf) @ np.abs(yf)))


def test_drop_repeats_only_drops_real_repeats() -> None:
    a = np.broadcast_to(RNG.integers(-5, 5, size=(2, 1, 3, 4)), (2, 4, 3, 4)).copy()
    known = np.ones(a.shape, bool)
    la, lw, lo = ["b", "d0", "q", "j"], ["b", "r", "d0", "q", "j"], ["b", "d0", "r"]
    a2, k2, la2 = F.drop_repeats(a, known, la, lw, lo)
    assert la2 == ["b", "q", "j"] and np.array_equal(a2, a[:, 0])
    a[1, 2, 0, 0] += 1  # no longer repeated
    a3, _, la3 = F.drop_repeats(a, known, la, lw, lo)
    assert la3 == la and a3 is a
    k = known.copy()
    k[0, 3, 1, 1] = False  # the values repeat, their poison does not
    assert F.drop_repeats(np.broadcast_to(a[:, :1], a.shape), k, la, lw, lo)[2] == la


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.integers(0, 3), st.integers(0, 3),
       st.sampled_from(["int8", "bf16", "float32", "bool", "int64"]), st.booleans(), st.integers(0, 10**6))
def test_repeats_is_the_bitwise_comparison(shape: list[int], axis: int, variant: int, kind: str,
                                           transposed: bool, seed: int) -> None:
    """``fast_compute._repeats`` (word-wise on C-ordered arrays) equals comparing every position with the first."""
    axis %= len(shape)
    rng = np.random.default_rng(seed)
    storage: Any = ml_dtypes.bfloat16 if kind == "bf16" else np.dtype(kind)
    x = rng.integers(0, 2, size=shape).astype(storage)
    if variant:  # repeated along the axis (variant 1), then maybe one bit changed (variant 2), or -0.0 (3)
        x = np.repeat(np.take(x, [0], axis=axis), shape[axis], axis=axis)
        if variant == 2 and x.size:
            flat = x.reshape(-1)
            at = int(rng.integers(x.size))
            flat[at] = not flat[at] if kind == "bool" else flat[at] + 1
        if variant == 3 and kind in ("bf16", "float32") and x.shape[axis] > 1:
            np.moveaxis(x, axis, 0)[-1] = 0.0
            np.moveaxis(x, axis, 0)[0] = -0.0
    if transposed and x.ndim > 1:
        x = x.transpose()
        axis = x.ndim - 1 - axis
    bits = x.view(np.dtype(f"u{x.itemsize}"))
    want = all(np.array_equal(np.take(bits, [k], axis=axis), np.take(bits, [0], axis=axis))
               for k in range(x.shape[axis]))
    assert F._repeats(x, axis) == want


def test_bf16_widening_is_the_cast() -> None:
    x = np.array([1.5, -0.0, np.inf, -3.25e38, 1e-40], dtype=ml_dtypes.bfloat16).reshape(1, 5)
    got = C._matrix(x, [0, 1], (1, 5), np.float32)
    assert np.array_equal(got.view(np.uint32), x.astype(np.float32).view(np.uint32))


def test_worker_products_equal_numpy() -> None:
    a = RNG.standard_normal((6, 5, 7)).astype(np.float32)
    w = RNG.standard_normal((6, 7, 3)).astype(np.float32)
    assert np.array_equal(blas.batched_matmul(a, w), np.matmul(a, w))
    assert np.array_equal(blas.batched_matmul(a[:1], w[:1]), np.matmul(a[:1], w[:1]))
    out = np.zeros(10, np.int64)

    def fill(lo: int, hi: int) -> None:
        out[lo:hi] = np.arange(lo, hi)

    blas.parallel_pieces(10, 3, fill)
    assert out.tolist() == list(range(10))


MAPPINGS = ["A, B, C", "C, A, B", "B / 2, A, C, B % 2", "C % 2, B, C / 2, A", "A / 3, B, A % 3, C"]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(MAPPINGS), st.sampled_from(MAPPINGS))
def test_plain_host_layouts_equal_the_gather(src: str, dst: str) -> None:
    ax = AxisSet(A=6, B=4, C=4)
    m = ax.m
    x = RNG.integers(-2**31, 2**31, size=(6, 4, 4), dtype=np.int64).astype(np.int32)
    assert plain_dims(m[src].canon) is not None
    h = HostTensor.from_numpy(x, i32, m[src], axes="A B C")
    ev = m[src].evaluate()
    assert np.array_equal(h.values, x[ev.coord("A"), ev.coord("B"), ev.coord("C")])
    assert np.array_equal(h.numpy(axes="A B C"), x)
    x[0, 0, 0] ^= 1  # the host tensor holds its own copy
    assert h.numpy(axes="A B C")[0, 0, 0] != x[0, 0, 0]
    ctx = Context.acquire()
    back = h.to_hbm(m["1"], m[dst], ctx.pdma, 64).to_host(m[src], ctx.pdma)
    assert np.array_equal(back.numpy(axes="A B C"), h.numpy(axes="A B C"))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(MAPPINGS), st.sampled_from(MAPPINGS))
def test_plain_host_layouts_off_are_the_reference(src: str, dst: str) -> None:
    """With ``host.plain-layout`` off, the host buffer, its logical tensor and its round trip through HBM re-laid
    out (``moves._rearrange``, evaluated at every position) are the fast path's, value and known-mask alike."""
    m = AxisSet(A=6, B=4, C=4).m
    x = RNG.integers(-2**31, 2**31, size=(6, 4, 4), dtype=np.int64).astype(np.int32)
    runs = []
    for off in (False, True):
        with fastpaths.disabled("host.plain-layout") if off else contextlib.nullcontext():
            h = HostTensor.from_numpy(x, i32, m[src], axes="A B C")
            ctx = Context.acquire()
            back = h.to_hbm(m["1"], m[dst], ctx.pdma, 64).to_host(m[src], ctx.pdma)
            runs.append((h.values.copy(), np.asarray(h.known).copy(), h.numpy(axes="A B C"), back.values.copy(),
                         np.asarray(back.known).copy()))
    for fast, ref in zip(*runs, strict=True):
        assert np.array_equal(fast, ref)
    assert np.array_equal(runs[1][2], x)


def test_padded_layout_keeps_the_general_path() -> None:
    ax = AxisSet(A=6, B=4)
    m = ax.m
    assert plain_dims(m["A, B # 8"].canon) is None
    h = HostTensor.from_numpy(np.arange(24).reshape(6, 4), i32, m["A, B # 8"])
    assert h.values.size == 48 and not h.known.all() and np.array_equal(h.numpy(), np.arange(24).reshape(6, 4))


@pytest.mark.parametrize("dtype", [i8, i32, dt.i16] if hasattr(dt, "i16") else [i8, i32])
def test_whole_word_bytes_round_trip(dtype: Any) -> None:
    v = dt.random_values(dtype, (257,), RNG)
    raw = dt.to_bytes(dtype, v)
    assert raw.tolist() == list(np.asarray(v, dtype=np.dtype(dtype.storage).newbyteorder("<")).tobytes())
    back = dt.from_bytes(dtype, raw)
    assert np.array_equal(back, v)
    raw[:] = 0  # the image is a copy: the values are untouched
    assert np.array_equal(dt.from_bytes(dtype, dt.to_bytes(dtype, v)), v)


def _shared_gemm(dtype: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Slice = [I / 32, J / 8]: the slices of one column block share their weights and those of one row block
    their activations (the DMA broadcasts each); ``C = x @ y`` as float64."""
    ax = AxisSet(I=64, J=32, K=256)
    m = ax.m
    ctx = Context.acquire()
    a = HostTensor.from_numpy(x, dtype, m["I, K"]).to_hbm(m["1"], m["I, K"], ctx.pdma, 0)
    b = HostTensor.from_numpy(y, dtype, m["J, K"], axes="K J").to_hbm(m["1"], m["J, K"], ctx.pdma, 1 << 24)
    n = 64 if dtype is i8 else 32
    slice_ = m["I / 32, J / 8 # 128"]
    a_dm = a.to_dm(m["1 # 2"], slice_, m["I % 32, K"], ctx.tdma, 0)
    b_dm = b.to_dm(m["1 # 2"], slice_, m["J % 8, K"], ctx.tdma, 1 << 16)
    trf = (ctx.sub.begin(b_dm.view()).fetch(dtype, m["J % 8"], m["K"])
           .collect(m[f"J % 8, K / {n // 2}"], m[f"K % {n // 2}"]).to_trf(m["J % 8"], m["K"], TrfAddress.Full))
    out = (ctx.main.begin(a_dm.view()).fetch(dtype, m["I % 32"], m["K"])
           .collect(m[f"I % 32, K / {n // 2}"], m[f"K % {n // 2}"])
           .align(m[f"I % 32, K / {n}"], m[f"K % {n}"], trf).contract(m["1"])
           .accumulate(m["I % 32"], m["J % 8"], AccumulationKind.Interleaved)
           .commit(m["I % 32, J % 8"], 1 << 17))
    return np.asarray(out.logical(axes="I J"), dtype=np.float64)


def _check_gemm(dtype: Any, got: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    if dtype is i8:
        assert np.array_equal(got, xf @ yf)
    else:
        assert np.all(np.abs(got - xf @ yf) <= 256 * 2.0**-23 * (np.abs(xf) @ np.abs(yf)))


@pytest.mark.parametrize("dtype", [i8, bf16])
def test_slices_sharing_weights_and_activations(dtype: Any) -> None:
    """The products of slices sharing weights and activations run as one product of the distinct ones
    (``fast_compute.weight_period``, ``fast_compute._same_along``)."""
    rng = np.random.default_rng(7)
    x = dt.random_values(dtype, (64, 256), rng)
    y = dt.random_values(dtype, (256, 32), rng)
    _check_gemm(dtype, _shared_gemm(dtype, x, y), x, y)


@pytest.mark.parametrize("dtype", [i8, bf16])
@pytest.mark.parametrize("path", ["contraction.exact-f32", "contraction.repeats", "contraction.weight-period",
                                  "contraction.float-steps", None])
def test_each_contraction_path_off_is_the_reference(dtype: Any, path: str | None) -> None:
    """With a contraction fast path off (or all of them: ``None``), the GEMM of slices sharing weights gives the
    same integers and the same floats, bit for bit, as with it on; both within float32 rounding of numpy's."""
    rng = np.random.default_rng(11)
    x = dt.random_values(dtype, (64, 256), rng)
    y = dt.random_values(dtype, (256, 32), rng)
    fast = _shared_gemm(dtype, x, y)
    names = (path,) if path else ("contraction.exact-f32", "contraction.repeats", "contraction.weight-period",
                                  "contraction.float-steps")
    with fastpaths.disabled(*names):
        ref = _shared_gemm(dtype, x, y)
    _check_gemm(dtype, ref, x, y)
    assert np.array_equal(fast.view(np.uint64), ref.view(np.uint64))


def test_weight_period_and_block_constant() -> None:
    w = np.tile(RNG.integers(-9, 9, size=(4, 3, 5)), (6, 1, 1))  # w[b] = w[b mod 4]
    assert F.weight_period(w) == 4
    w[23, 2, 4] += 1
    assert F.weight_period(w) == 0
    t = np.repeat(RNG.integers(-9, 9, size=(3, 1, 5)), 4, axis=1)  # constant along the second axis
    assert F._same_along(t)
    t[2, 3, 0] += 1
    assert not F._same_along(t)
    # past the 64-word sample, in a non-contiguous view, and for 2-byte elements (compared as 64-bit words)
    big = np.repeat(RNG.integers(0, 1 << 16, size=(2, 1, 300, 7)).astype(np.uint16), 3, axis=1)
    perm = big.transpose(0, 1, 3, 2)  # one run of memory per position, its axes permuted: compared by words
    assert F._words(perm) is not None and F._words(big[..., ::2]) is None
    assert F._same_along(big) and F._same_along(big[..., ::2]) and F._same_along(perm)
    big[1, 2, 299, 6] ^= 1
    assert not F._same_along(big) and not F._same_along(big[..., ::2]) and not F._same_along(perm)
    assert F._same_along(big[..., :6])
