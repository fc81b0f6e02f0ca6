"""All-known streams (issue 15): where every byte a fetch or the TRF Sequencer reads was written, the stream's or
the window's ``known`` is a read-only stride-0 broadcast of True (:mod:`visa.memory.known`), and slices given
the same weights keep one period of the TRF window (:class:`visa.engines.contraction.TrfWindow`).

Each test compares the new path with the materialised one (the all-known checks disabled: every mask read and
stored, every slice's window copied, as before): the same values bit for bit, the same poison, the same cycles;
and a poisoned DM or TRF byte still gives poison exactly where it did (an element is poison when a byte of it
was never written, manual L1071–1093).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.fastpath_switch import needs
from visa import AccumulationKind, AxisSet, Context, HostTensor, TrfAddress, bf16, i8
from visa import dtypes as dt
from visa.memory.known import all_true, is_everywhere, known_everywhere, writable

RNG = np.random.default_rng(1516)
AX = AxisSet(I=32, J=128, K=64)  # 16 row blocks (I / 2) × 16 column blocks (J / 8): 256 slices of one cluster


def _materialised(reference: Callable[..., None]) -> None:
    """The paths before: the fetch reads its mask, the TRF window is copied for every slice with its mask."""
    reference("fetch.all-known", "contraction.window-in-place")


def _gemm(dtype: Any, x: np.ndarray, y: np.ndarray, dm_poison: bool = False, trf_poison: bool = False,
          y2: np.ndarray | None = None, finish: bool = True) -> tuple[Any, Any, Any]:
    """``x @ y`` on 256 slices, each a 2 × 8 output tile (``Slice = I / 2, J / 8``), every column block of B in
    the TRF of the 16 slices of its column (the weights repeat with period 16, as in examples/gemm.py).
    ``dm_poison`` unwrites 2 bytes of A in slice 17 (row I = 2, K = 0), ``trf_poison`` one byte of the TRF of
    slice 5 (Row 3, element K = 1); ``y2`` is loaded into the same TRF half after ``align`` (before ``contract``).
    Returns the fetched stream, the aligned stream and the result (None without ``finish``)."""
    m = AX.m
    ctx = Context.acquire()
    cluster, slice_ = m["1 # 2"], m["I / 2, J / 8"]
    a = HostTensor.from_numpy(x, dtype, m["I, K"]).to_hbm(m["1"], m["I, K"], ctx.pdma, 0)
    a_dm = a.to_dm(cluster, slice_, m["I % 2, K"], ctx.tdma, 0)

    def load_trf(w: np.ndarray, hbm: int) -> Any:
        b = HostTensor.from_numpy(w, dtype, m["J, K"], axes="K J").to_hbm(m["1"], m["J, K"], ctx.pdma, hbm)
        b_dm = b.to_dm(cluster, slice_, m["J % 8, K"], ctx.tdma, 1 << 16)
        flit = 32 // (dtype.image_bits // 8)
        return (ctx.sub.begin(b_dm.view()).fetch(dtype, m["J % 8"], m["K"])
                .collect(m[f"J % 8, K / {flit}"], m[f"K % {flit}"])
                .to_trf(m["J % 8"], m["K"], TrfAddress.Full))

    trf = load_trf(y, 1 << 24)
    if dm_poison:
        image = ctx.memory.chip(0).dm
        where = np.zeros((*image.lead_shape, 2), dtype=bool)
        where[0, 17] = True
        image.unwrite(np.arange(2, dtype=np.int64), where)
    if trf_poison:
        image = trf.image(0)
        where = np.zeros((*image.lead_shape, 1), dtype=bool)
        where[0, 5, 3] = True
        image.unwrite(np.asarray([trf.element_bit_offset() // 8 + dtype.image_bits // 8], dtype=np.int64), where)
    n = 64 // (dtype.image_bits // 8)  # elements of a 64-byte computation packet
    flit = n // 2
    fetched = ctx.main.begin(a_dm.view()).fetch(dtype, m["I % 2"], m["K"])
    aligned = (fetched.collect(m[f"I % 2, K / {flit}"], m[f"K % {flit}"])
               .align(m[f"I % 2, K / {n}"], m[f"K % {n}"], trf))
    if y2 is not None:
        load_trf(y2, 1 << 25)
    if not finish:
        return fetched, aligned, None
    out = aligned.contract(m["1"]).accumulate(m["I % 2"], m["J % 8"], AccumulationKind.Interleaved)
    return fetched, aligned, out


def _logical(out: Any) -> tuple[np.ndarray, np.ndarray]:
    """The result as ``[I, J]`` values and known (slice ``(I / 2) · 16 + J / 8``, time ``I % 2``, packet ``J % 8``)."""
    v = out.data.values[0, 0].reshape(16, 16, 2, -1)[..., :8].transpose(0, 2, 1, 3).reshape(32, 128)
    k = out.data.known[0, 0].reshape(16, 16, 2, -1)[..., :8].transpose(0, 2, 1, 3).reshape(32, 128)
    return v, k


def _inputs(dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    return dt.random_values(dtype, (32, 64), RNG), dt.random_values(dtype, (64, 128), RNG)


def test_known_everywhere_and_all_true() -> None:
    k = known_everywhere((3, 4, 5))
    assert k.strides == (0, 0, 0) and not k.flags.writeable and is_everywhere(k) and all_true(k)
    assert all_true(k[1:, ::2].reshape(-1)) and is_everywhere(k.transpose(2, 0, 1))
    with pytest.raises(ValueError):
        k[0, 0, 0] = False  # read-only: a stage that must write takes writable(known)
    w = writable(k)
    w[0, 0, 0] = False
    assert not all_true(w) and all_true(k) and w.flags.writeable
    part = np.broadcast_to(np.array([True, False])[:, None], (2, 6))  # a broadcast, not of True: still read
    assert not all_true(part) and all_true(part[:1]) and not is_everywhere(part)
    assert all_true(np.zeros((0, 3), dtype=bool)) and not all_true(np.array([[True], [False]]))


@pytest.mark.parametrize("dm_poison", [False, True])
def test_fetch_of_written_bytes_carries_no_mask(dm_poison: bool, reference: Callable[..., None]) -> None:
    needs("fetch.all-known")
    x, y = _inputs(bf16)
    got, _, _ = _gemm(bf16, x, y, dm_poison=dm_poison)
    # no mask per element: one bool per slice (the second cluster, 1 # 2, holds no data: poison), broadcast
    assert (got.data.known.strides[-2:] == (0, 0)) != dm_poison
    _materialised(reference)
    want, _, _ = _gemm(bf16, x, y, dm_poison=dm_poison)
    assert want.data.known.strides[-1] != 0
    assert np.array_equal(got.data.values.view(np.uint16), want.data.values.view(np.uint16))
    assert np.array_equal(got.data.known, want.data.known)
    assert dm_poison == (not bool(want.data.known[0, 0, 17].all()))
    assert [(r.engine, r.cycles, r.config) for r in got.reports] == [(r.engine, r.cycles, r.config)
                                                                      for r in want.reports]


@pytest.mark.parametrize("dtype", [i8, bf16])
@pytest.mark.parametrize("poison", ["none", "dm", "trf"])
def test_contraction_of_a_periodic_window_equals_the_materialised_one(dtype: Any, poison: str,
                                                                      reference: Callable[..., None]) -> None:
    needs("contraction.window-in-place")
    x, y = _inputs(dtype)
    _, aligned, got = _gemm(dtype, x, y, dm_poison=poison == "dm", trf_poison=poison == "trf")
    window = aligned.carried.contraction.window
    assert window.period == (0 if poison == "trf" else 16)  # a poisoned TRF byte: the window and its mask copied
    assert is_everywhere(window.known) == (poison != "trf")
    _materialised(reference)
    _, aligned2, want = _gemm(dtype, x, y, dm_poison=poison == "dm", trf_poison=poison == "trf")
    assert aligned2.carried.contraction.window.period == 0
    # the same products in the same matrix shapes (the materialised path finds the period in the data): bit for bit
    assert np.array_equal(got.data.values.view(np.uint32), want.data.values.view(np.uint32))
    assert np.array_equal(got.data.known, want.data.known)
    assert [(r.engine, r.cycles) for r in got.reports] == [(r.engine, r.cycles) for r in want.reports]
    v, k = _logical(got)
    bad = np.zeros((32, 128), dtype=bool)
    if poison == "dm":
        bad[2, 8:16] = True  # row I = 2 lives in slice 17 (I / 2 = 1, J / 8 = 1): its K = 0 element is poison
    if poison == "trf":
        bad[0:2, 5 * 8 + 3] = True  # slice 5 (I / 2 = 0, J / 8 = 5), Row 3: column J = 43 of rows 0 and 1
    assert np.array_equal(k, ~bad)
    xs, ys = x.astype(np.float64), y.astype(np.float64)
    want_v = xs @ ys
    if dtype is i8:  # integer path: exact
        assert np.array_equal(v[~bad].astype(np.int64), want_v[~bad].astype(np.int64))
    else:  # f32 sums of exact bf16 products (K = 64 terms): within 64 · 2^-24 · Σ|x·y| of the exact sum
        bound = 64 * 2.0**-24 * (np.abs(xs) @ np.abs(ys)) * (1 + 2.0**-10)
        assert np.all(np.abs(v.astype(np.float64) - want_v)[~bad] <= bound[~bad])


@pytest.mark.parametrize("dtype", [i8, bf16])
def test_a_to_trf_after_align_does_not_change_the_pass(dtype: Any) -> None:
    # align reads the TRF as the sequencer will (a snapshot, L4063–4070): loading other weights into the same
    # half afterwards does not change what the pending contraction multiplies
    needs("contraction.window-in-place")
    x, y = _inputs(dtype)
    y2 = dt.random_values(dtype, (64, 128), RNG)
    _, aligned, got = _gemm(dtype, x, y, y2=y2)
    assert aligned.carried.contraction.window.period == 16
    _, _, want = _gemm(dtype, x, y)
    assert np.array_equal(got.data.values.view(np.uint32), want.data.values.view(np.uint32))
    assert np.array_equal(got.data.known, want.data.known) and _logical(got)[1].all()
    if dtype is i8:  # exact: the old weights' product, not the new ones'
        v = _logical(got)[0].astype(np.int64)
        assert np.array_equal(v, x.astype(np.int64) @ y.astype(np.int64))
        assert not np.array_equal(v, x.astype(np.int64) @ y2.astype(np.int64))


def test_contraction_tensor_data_of_a_periodic_window(reference: Callable[..., None]) -> None:
    # the ContractionTensor's own data (with the Row level, L4310–4317) through the periodic window: the same as
    # the materialised window's
    needs("contraction.window-in-place")
    x, y = _inputs(i8)
    _, aligned, _ = _gemm(i8, x, y, dm_poison=True, finish=False)
    assert aligned.carried.contraction.window.period == 16
    got = aligned.contract(AX.m["1"]).data
    _materialised(reference)
    _, aligned2, _ = _gemm(i8, x, y, dm_poison=True, finish=False)
    want = aligned2.contract(AX.m["1"]).data
    assert np.array_equal(got.values, want.values) and np.array_equal(got.known, want.known)
    assert not bool(want.known.all()) and bool(want.known[0, 0, :16].all())
