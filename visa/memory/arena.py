"""Memory for the byte images: mapped lazily, and reused from one context to the next (issue 15).

A device memory is a large image written sparsely (manual L134–140: a chip's DM is 256 slices × 512 KB), so
images are mapped memory that the system provides page by page on first write (:func:`lazy_zeros`).  That
first write is the expensive part of moving data into a new context: the system clears every page it hands
out and takes a fault for it — measured on the 2-core VM, writing 48 MiB into fresh pages took 35 ms, into
pages already mapped 1.7 ms.  A kernel writer runs kernels one after the other in one process (a test suite, a
sweep of tile sizes, a notebook), each in a new context whose images have the shapes of the last one's.

:class:`Arena` keeps the mapped buffers of images that died and hands them to the next image of the same
shape and type, cleared: only the bytes the dead image may have written (the range its owner reports, the
same in every unit) are set to zero again, so a reused buffer reads exactly as a fresh one.  A buffer is
reused only once nothing refers to it any more: an array the image handed out (a view of its bytes) that is
still alive keeps its buffer out of reuse, so nothing a caller holds ever changes under it.

>>> import numpy as np
>>> arena = Arena(per_shape=2)
>>> a, lease = arena.zeros((4, 1 << 20), np.dtype(np.uint8))
>>> a[:, 8:16] = 7
>>> view = a[0]                               # a view the image handed out, still alive
>>> del a
>>> arena.give(lease, 8, 16)
>>> b, _ = arena.zeros((4, 1 << 20), np.dtype(np.uint8))
>>> np.shares_memory(b, view), int(b.sum())   # the held buffer is not reused: a fresh one
(False, 0)
>>> del view
>>> c, _ = arena.zeros((4, 1 << 20), np.dtype(np.uint8))
>>> int(c.sum()), arena.reused                # the released one is, cleared
(0, 1)
"""

from __future__ import annotations

import ctypes
import mmap
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.memory import fast_prefault

__all__ = ["Arena", "Lease", "Pages", "ARENA", "lazy_zeros", "KEEP_FREED_BYTES", "KEPT_FREED", "SMALL_PAGES_FROM",
           "release_freed"]

#: Images from this size up are mapped (page by page, small pages) rather than allocated by numpy.
SMALL_PAGES_FROM = 1 << 22

#: Freed memory the C allocator keeps for reuse (glibc's ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD``).
KEEP_FREED_BYTES = 1 << 30


REUSE = fastpaths.register("memory.arena", "freed image buffers (and the C allocator's freed blocks) are reused "
                           "instead of mapped and first-touched again")


def _reuse_allowed() -> bool:
    """Whether freed memory is reused (the allocator's and the arena's): the fast path ``memory.arena``
    (``VISA_FASTPATHS=-memory.arena`` turns it off), on an interpreter with reference counts to tell when a buffer
    is free."""
    return REUSE.on and hasattr(sys, "getrefcount")


def _keep_freed_memory() -> bool:
    """Let the C allocator reuse freed blocks instead of returning them to the system.

    Every engine pass allocates its stream arrays (tens to hundreds of MB for a large kernel) and frees them
    when the next pass starts.  glibc serves blocks over 32 MB with a fresh ``mmap`` and gives them back with
    ``munmap``, so every pass pays for the first touch of every page again (the system clears each page it
    hands out: measured here, 256 MB of fresh arrays cost 3× the CPU time of reused ones).  With a higher
    mapping threshold and trim threshold the heap keeps up to :data:`KEEP_FREED_BYTES` of freed memory and
    reuses it.  Peak memory does not grow (the same blocks are reused); memory freed at the end stays with the
    process.  With ``memory.arena`` off (:mod:`visa.fastpaths`) the allocator is left alone, as on systems
    without glibc.
    """
    if not _reuse_allowed() or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        return bool(libc.mallopt(m_mmap_threshold, KEEP_FREED_BYTES)) and bool(
            libc.mallopt(m_trim_threshold, KEEP_FREED_BYTES))
    except (OSError, AttributeError):
        return False


KEPT_FREED = _keep_freed_memory()


def release_freed() -> bool:
    """Give back to the system the freed memory the C allocator keeps (glibc's ``malloc_trim``); True if it did.

    For a program that runs launch after launch and holds more between them than during one (a model serving
    tokens, whose schedule record grows every step): the freed memory kept after a large launch (a prefill's
    stream arrays) would otherwise stay counted in the process's resident set while it grows, so its peak is
    the sum of the two rather than the larger.  Only where :data:`KEPT_FREED` raised the allocator's thresholds
    (elsewhere the allocator trims by itself); the next launch maps and touches what it needs again.
    """
    if not KEPT_FREED:
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def _mapped(nbytes: int, least: int = SMALL_PAGES_FROM) -> mmap.mmap | None:
    """``nbytes`` of anonymous memory in small pages; None below ``least`` bytes (numpy's allocation serves
    those better) or where the system does not allow it.  Private, not shared, memory (issue 24): a page read
    before it is written is the system's zero page, and a first write costs less than into shared memory (16 MiB
    written into fresh pages on the 2-core VM: 9 ms of CPU against 12).  Registered with
    :mod:`visa.memory.fast_prefault`, which asks for the pages a write covers before it."""
    if nbytes < max(least, 1) or not hasattr(mmap, "MADV_NOHUGEPAGE"):
        return None
    try:
        mem = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        mem.madvise(mmap.MADV_NOHUGEPAGE)
    except (OSError, ValueError, AttributeError):
        return None
    fast_prefault.register(mem)
    return mem


def lazy_zeros(shape: tuple[int, ...], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Zeros that take memory only where written, page by page.

    A device memory is large and written sparsely (a tensor takes part of every slice, a few rows of the TRF).
    numpy asks the system for huge pages on large arrays, which would commit (and clear) 2 MB for every few
    rows touched; large images are mapped with small pages instead, where the system allows it.
    """
    mem = _mapped(int(np.prod(shape)) * dtype.itemsize)
    if mem is None:
        return np.zeros(shape, dtype=dtype)
    out: npt.NDArray[Any] = np.frombuffer(mem, dtype=dtype).reshape(shape)
    return out


class Lease:
    """One mapped buffer lent to an image: the mapping and the shape and type it was made for."""

    __slots__ = ("mem", "shape", "dtype")

    def __init__(self, mem: mmap.mmap, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
        self.mem, self.shape, self.dtype = mem, shape, dtype

    def array(self) -> npt.NDArray[Any]:
        """The buffer as an array of its shape and type (a new view)."""
        out: npt.NDArray[Any] = np.frombuffer(self.mem, dtype=self.dtype).reshape(self.shape)
        return out

    def free(self) -> bool:
        """Nothing but this lease refers to the mapping (no array made from it is alive)."""
        # the lease's own reference and getrefcount's argument; every array made from it adds one through its
        # memoryview (CPython)
        return sys.getrefcount(self.mem) <= 2


#: Pages of an image: the (flat) units, the page index in each, and the page's bytes.
Pages = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]


def _clear_pages(out: npt.NDArray[Any], units: npt.NDArray[np.int64], pages: npt.NDArray[np.int64],
                 page: int) -> None:
    """Zero the given pages of ``out``'s units (the last axis is a unit's bytes)."""
    n = out.shape[-1]
    flat = out.reshape(-1, n)
    if n % page == 0:
        flat.reshape(flat.shape[0], n // page, page)[units, pages] = 0
        return
    for u, p in zip(units.tolist(), pages.tolist(), strict=True):
        flat[u, p * page:(p + 1) * page] = 0


class Arena:
    """Mapped buffers of dead images, by shape and type, handed to the next image that asks (module docstring).

    ``per_shape`` bounds the buffers kept for one shape and type (a device of n chips frees n images of each
    kind at once); ``least`` is the smallest buffer mapped (and so kept; tests map small ones); ``reused``
    counts the buffers handed out again.
    """

    __slots__ = ("_kept", "per_shape", "least", "reused", "enabled", "path")

    def __init__(self, per_shape: int = 8, enabled: bool = True, least: int = SMALL_PAGES_FROM,
                 path: fastpaths.FastPath | None = None) -> None:
        self._kept: dict[tuple[tuple[int, ...], str],
                         list[tuple[Lease, int, int, Pages | None, tuple[int, int]]]] = {}
        self.per_shape = per_shape
        self.least = least
        self.reused = 0
        self.enabled = enabled
        self.path = path  # the fast path that switches this arena's reuse (the device images': memory.arena)

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype[Any]) -> tuple[npt.NDArray[Any], Lease | None]:
        """An array of zeros of ``shape`` and ``dtype``: the kept buffer given back last (of those free),
        cleared, or new memory (mapped lazily, :func:`lazy_zeros`); with the lease to :meth:`give` back when its
        image dies (None for memory too small to map, which numpy allocates)."""
        out, lease, stale = self.take(shape, dtype)
        if stale is not None:
            u_lo, u_hi, lo, hi = stale
            out.reshape(-1, out.shape[-1])[u_lo:u_hi, lo:hi] = 0
        return out, lease

    def take(self, shape: tuple[int, ...], dtype: np.dtype[Any]
             ) -> tuple[npt.NDArray[Any], Lease | None, tuple[int, int, int, int] | None]:
        """:meth:`zeros`, leaving the caller to clear a reused buffer: ``(u_lo, u_hi, lo, hi)`` says that bytes
        ``[lo, hi)`` (the last axis) of units ``[u_lo, u_hi)`` (the leading axes flattened) may hold non-zeros
        (None: the array is zeros; a buffer given back by pages is cleared here)."""
        kept = self._kept.get((shape, dtype.str), []) if self._reusing() else []
        for i in range(len(kept) - 1, -1, -1):  # the last given first: its pages are the ones mapped lately
            lease, lo, hi, pages, units = kept[i]
            if lease.free():
                del kept[i]
                out = lease.array()
                self.reused += 1
                if pages is not None:
                    _clear_pages(out, *pages)
                elif hi > lo and units[1] > units[0]:
                    return out, lease, (units[0], units[1], lo, hi)
                return out, lease, None
        mem = _mapped(int(np.prod(shape)) * dtype.itemsize, self.least) if self.enabled else None
        if mem is None:
            return lazy_zeros(shape, dtype), None, None
        lease = Lease(mem, shape, dtype)
        return lease.array(), lease, None

    def give(self, lease: Lease | None, lo: int, hi: int, pages: Pages | None = None,
             units: tuple[int, int] | None = None) -> None:
        """Take back a buffer whose image died: only bytes ``[lo, hi)`` (along the last axis) of the units
        ``[units[0], units[1])`` (the leading axes flattened; all by default) may hold non-zeros — or, given
        ``pages`` (units, page indices, page bytes), only those pages of those units.  With ``per_shape``
        buffers of its shape kept already, one is let go first: one something still holds (an array made from
        it), else the oldest."""
        if lease is None or not self.enabled or not self._reusing():
            return
        kept = self._kept.setdefault((lease.shape, lease.dtype.str), [])
        if len(kept) >= self.per_shape:  # full: let go of one still in use elsewhere, else the oldest
            held = [i for i, entry in enumerate(kept) if not entry[0].free()]
            del kept[held[0] if held else 0]
        span = (0, int(np.prod(lease.shape[:-1], dtype=np.int64))) if units is None else units
        kept.append((lease, lo, hi, pages, span))

    def _reusing(self) -> bool:
        return self.path is None or self.path.on

    def clear(self) -> None:
        """Let every kept buffer go (their memory returns to the system once nothing refers to it)."""
        self._kept.clear()


#: The arena of the device images (:class:`~visa.memory.images.DenseImage`); off with the fast path ``memory.arena``.
ARENA = Arena(enabled=hasattr(sys, "getrefcount"), path=REUSE)
