"""A tile of a large HBM tensor read back to the host (issue 24: peak memory of ``bench_peer_matmul``).

The PCIe DMA stages the HBM layout as it is: a tile view of an ``n × n`` tensor is laid out with the whole
tensor's padding, of which the DMA writes only the tile's bytes.  ``hbm_to_host`` used to allocate the staging
buffer, its written mask and the known mask for every staged position — three times the whole tensor for each
tile read (768 MiB at n = 16384).  It now stops at the DMA's last byte; the positions past it are unwritten, as
they were.  Values and known-ness are the same; measured with :mod:`tracemalloc` and the mapped pages the
system holds (``mincore``), not a clock.
"""

from __future__ import annotations

import ctypes
import mmap
import sys
import tracemalloc

import numpy as np
import pytest

from visa import AxisSet, Context, HbmTensor, HostTensor, PoisonError, i4, i8, i32
from visa.memory import arena

N, T = 1024, 64  # an N × N tensor, T × T tiles


def _tile(ax: AxisSet, t: HbmTensor, it: int, ct: int) -> object:
    """Tile ``(it, ct)`` of ``t`` (laid out ``A, C``), a view, as the peer matmul's ``tile_of``."""
    m, n = ax.m, ax.size("A")
    return (t.view().tile(m[f"A / {T}"], 1, m[f"1 # {n // T}, A % {T}, C"], it)
            .tile(m[f"C / {T}"], 1, m[f"1 # {n // T}, A % {T}, 1 # {n // T}, C % {T}"], ct))


@pytest.mark.parametrize("dtype", [i8, i32, i4])
def test_a_tile_read_back_holds_its_values(dtype: type) -> None:
    ax = AxisSet(A=N, C=N)
    m = ax.m
    ctx = Context.acquire()
    lo, hi = (-8, 8) if dtype is i4 else (-128, 128)
    x = np.random.default_rng(1).integers(lo, hi, size=(N, N)).astype(np.int8 if dtype is i4 else dtype.storage)
    t = HostTensor.from_numpy(x, dtype, m["A, C"], axes="A C").to_hbm(m["1"], m["A, C"], ctx.pdma, 0)
    for it, ct in ((0, 0), (0, 3), (5, 0), (N // T - 1, N // T - 1)):
        got = _tile(ax, t, it, ct).to_host(m[f"A % {T}, C % {T}"], ctx.pdma)  # type: ignore[attr-defined]
        assert np.array_equal(got.numpy(axes="A C"), x[it * T:(it + 1) * T, ct * T:(ct + 1) * T])
        assert bool(np.all(got.known))


def test_an_unwritten_tile_is_still_poison() -> None:
    ax = AxisSet(A=N, C=N)
    m = ax.m
    ctx = Context.acquire()
    t = HbmTensor.from_addr(ctx, i8, m["1"], m["A, C"], 1 << 24)  # never written
    got = _tile(ax, t, 2, 1).to_host(m[f"A % {T}, C % {T}"], ctx.pdma)  # type: ignore[attr-defined]
    assert not np.any(got.known)
    with pytest.raises(PoisonError):
        got.numpy(axes="A C")


def _resident(mem: mmap.mmap) -> int:
    """Bytes of the mapping's pages the system holds (``mincore``: a page is held once touched, read or written)."""
    page = mmap.PAGESIZE
    vec = (ctypes.c_ubyte * -(-len(mem) // page))()
    address = np.frombuffer(mem, np.uint8).ctypes.data  # (the temporary view is let go at once)
    if ctypes.CDLL(None, use_errno=True).mincore(ctypes.c_void_p(address), ctypes.c_size_t(len(mem)), vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    return sum(v & 1 for v in vec) * page


def test_reading_a_tile_allocates_about_the_tiles_span_not_the_tensor(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 64 × 64 tile of a 4096 × 4096 i8 tensor (16 MiB) spans 63 rows and 64 bytes of it (258 KiB): what the
    read allocates is a few times that, not three times the tensor (48 MiB before).  Counted as the read's heap
    allocations at their peak (:mod:`tracemalloc`) plus every page of the memory it maps (lazily mapped zeros,
    :func:`visa.memory.arena.lazy_zeros`, which tracemalloc does not see) that the system holds after it
    (``mincore``): sizes, not a clock or the process's resident set."""
    if not sys.platform.startswith("linux"):
        pytest.skip("mincore through the C library: Linux")
    probe = mmap.mmap(-1, 16 * mmap.PAGESIZE)
    try:
        if _resident(probe):  # (gVisor's mincore calls every mapped page resident: nothing to count with)
            pytest.skip("mincore reports untouched pages of a fresh mapping as resident")
    finally:
        probe.close()
    n = 4 * N
    ax = AxisSet(A=n, C=n)
    m = ax.m
    ctx = Context.acquire()
    x = np.random.default_rng(2).integers(-128, 128, size=(n, n), dtype=np.int8)
    t = HostTensor.from_numpy(x, i8, m["A, C"], axes="A C").to_hbm(m["1"], m["A, C"], ctx.pdma, 0)
    view = _tile(ax, t, 1, 1)
    view.to_host(m[f"A % {T}, C % {T}"], ctx.pdma)  # type: ignore[attr-defined]  # (plans made once)
    maps: list[mmap.mmap] = []
    mapped = arena._mapped

    def recorded(nbytes: int, least: int = arena.SMALL_PAGES_FROM) -> mmap.mmap | None:
        mem = mapped(nbytes, least)
        if mem is not None:
            maps.append(mem)  # (kept, so that its pages can be counted after the read)
        return mem

    monkeypatch.setattr(arena, "_mapped", recorded)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        got = view.to_host(m[f"A % {T}, C % {T}"], ctx.pdma)  # type: ignore[attr-defined]
        heap = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    held = sum(_resident(mem) for mem in maps)
    assert np.array_equal(got.numpy(axes="A C"), x[T:2 * T, T:2 * T])
    span = (T - 1) * n + T  # bytes from the tile's first to its last
    assert heap + held < 8 * span, (heap, held, [len(mem) for mem in maps])
