"""``memory.prefault`` (visa/memory/fast_prefault.py, issue 24): the pages a write covers are asked of the system
before it, those pages only, and nothing a kernel observes changes: the bytes read zero until written, and a
kernel that moves megabytes into fresh images (HBM → DM, the Vector Engine's commit into DM, DM → HBM) leaves
the same bytes, written-state and schedule with the path alone as with it off."""

from __future__ import annotations

import ctypes
import mmap
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.bench_first_launch import RELU, RELU_N, relu
from tests.fastpath_switch import alone_and_without, needs
from visa import Context, HostTensor, f32, launch
from visa.memory import fast_prefault
from visa.memory.arena import _mapped

PAGE = mmap.PAGESIZE


def _resident(arr: np.ndarray) -> np.ndarray | None:
    """Which pages of ``arr`` (page-aligned, a whole mapping) the system holds now (Linux ``mincore``), or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.mincore
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    vec = np.zeros(-(-arr.size // PAGE), np.uint8)
    if fn(arr.ctypes.data, arr.size, vec.ctypes.data) != 0:
        return None
    return (vec & 1).astype(bool)


def _asked(mem: mmap.mmap) -> np.ndarray:
    m = fast_prefault._MAPS.get(mem)
    assert m is not None
    return m.asked


@settings(max_examples=40, deadline=None)
@given(pages=st.integers(64, 400), count=st.integers(1, 12), length=st.integers(1, 40 * PAGE),
       gap=st.integers(0, 6 * PAGE), at=st.integers(0, 3 * PAGE), shuffle=st.booleans())
def test_only_the_pages_a_write_covers_are_asked(pages: int, count: int, length: int, gap: int, at: int,
                                                shuffle: bool) -> None:
    """Ranges ``[s, s + length)`` at a stride: exactly the pages holding a byte of one of them are asked for (those
    of runs long enough to be worth a call), the bytes stay zero, and a second call over the same ranges asks
    nothing more."""
    needs("memory.prefault")
    mem = _mapped(pages * PAGE, least=1)
    if mem is None or fast_prefault._MADVISE is None:
        pytest.skip("no anonymous mapping or no madvise(MADV_POPULATE_WRITE) here: nothing is asked")
    arr = np.frombuffer(mem, np.uint8)
    starts = at + np.arange(count, dtype=np.int64) * (length + gap)
    keep = starts + length <= arr.size
    starts = starts[keep]
    if not starts.size:
        return
    if shuffle:
        starts = starts[::-1].copy()
    saved, fast_prefault._LEAST = fast_prefault._LEAST, 1
    try:
        fast_prefault.prefault(arr, starts, length)
        covered = np.zeros(pages, bool)
        for s in starts.tolist():
            covered[s // PAGE:(s + length - 1) // PAGE + 1] = True
        # runs of covered pages; the short ones are left to fault in
        edges = np.flatnonzero(np.diff(np.r_[0, covered.astype(np.int8), 0]))
        want = np.zeros(pages, bool)
        for a, b in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
            want[a:b] = b - a >= fast_prefault._LEAST_RUN
        assert np.array_equal(_asked(mem), want)
        if fast_prefault.asks_nothing(starts.size, length + gap, length):  # (its claim: not a page asked)
            assert not want.any()
        resident = _resident(arr)
        if resident is not None:  # the system holds exactly those pages: nothing else was allocated
            assert np.array_equal(resident, want)
        assert not arr.any()
        fast_prefault.prefault(arr[PAGE:], starts[starts >= PAGE] - PAGE, length)  # a view further in: same pages
        assert np.array_equal(_asked(mem), want)
    finally:
        fast_prefault._LEAST = saved


@settings(max_examples=200, deadline=None)
@given(count=st.integers(1, 600), step=st.integers(1, 80 * PAGE), length=st.integers(1, 40 * PAGE),
       at=st.integers(0, 3 * PAGE))
def test_asks_nothing_only_where_every_run_of_pages_is_short(count: int, step: int, length: int, at: int) -> None:
    """:func:`fast_prefault.asks_nothing` (a move's ranges at a stride) holds only where the ranges' pages, cut into
    runs of touching pages as :func:`fast_prefault.prefault` cuts them, make no run of ``_LEAST_RUN`` pages."""
    if not fast_prefault.asks_nothing(count, step, length):
        return
    s = at + np.arange(count, dtype=np.int64) * step
    first, last = s // PAGE, (s + length - 1) // PAGE + 1
    cut = np.flatnonzero(first[1:] > last[:-1]) + 1
    lo, hi = first[np.r_[0, cut]], last[np.r_[cut - 1, last.size - 1]]
    assert (hi - lo < fast_prefault._LEAST_RUN).all()


def test_memory_numpy_allocated_is_left_alone() -> None:
    """An array not on a registered mapping (numpy's own memory) is not advised (nothing to find)."""
    arr = np.zeros(1 << 20, np.uint8)
    fast_prefault.prefault(arr, np.array([0], np.int64), arr.size)
    assert fast_prefault._mapping(arr) is None and not arr.any()


def _relu() -> tuple[Any, ...]:
    """The first-launch benchmark's ReLU over 4M f32 (``benchmarks/bench_first_launch.py``) through fresh DM and
    HBM: HBM → DM, the Vector Engine's commit into DM, DM → HBM, 16 MiB each."""
    m = RELU.m
    ctx = Context.acquire()
    x = np.random.default_rng(5).standard_normal(RELU_N).astype(np.float32)
    x_hbm = HostTensor.from_numpy(x, f32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    y = launch(relu, ctx, x_hbm).to_host(m["A"], ctx.pdma).numpy()
    assert np.array_equal(y, np.maximum(x, np.float32(0)))
    dmi = ctx.memory.chip(0).dm
    hi = (1 << 16) + RELU_N // 512 * 4
    ops = [(o.track, o.name, o.start, o.cycles) for o in ctx.schedule.ops]
    return y, np.array(dmi.read_data()[..., :hi]), np.array(dmi.known_bytes(0, hi)), ops


def test_a_kernel_into_fresh_images_is_the_same_with_pages_asked_first() -> None:
    (y, data, known, ops), (ref_y, ref_data, ref_known, ref_ops) = alone_and_without("memory.prefault", _relu)
    assert np.array_equal(y, ref_y) and np.array_equal(data, ref_data) and np.array_equal(known, ref_known)
    assert ops == ref_ops
