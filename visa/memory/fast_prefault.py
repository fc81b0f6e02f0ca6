"""Fast path ``memory.prefault`` (issue 24): the pages of an image that a write is about to cover whole are asked
of the system in one call (``madvise(MADV_POPULATE_WRITE)``, Linux 5.14) before the write, instead of one fault
at a time during it.

An image is mapped memory that the system provides page by page on first write (:mod:`visa.memory.arena`): a
first launch writes 8–16 MiB into fresh pages per move, one fault (trap, page allocation, clearing) per 4 KiB
page: 2,048 faults for 8 MiB, a third to a half of a fresh process's first launch.  ``MADV_POPULATE_WRITE``
allocates and clears the same pages as those write faults would, in the kernel, without a trap per page (measured
on the 2-core VM: 16 MiB in 7.5 ms of CPU instead of 9; ``MAP_SHARED`` memory, which the images used before,
took 12), for runs of at least :data:`_LEAST_RUN` pages; the whole huge pages inside a run are asked for as huge
pages (``MADV_HUGEPAGE``: 16 MiB in 2.5 ms).  Only pages a write covers are asked for (the first and last page of
each range hold written bytes too), so memory never written stays unallocated: a sparse image costs what it did.
The pages hold zeros until written, as before: the bytes are the same, only when the system clears them moves.

Each mapping (:func:`register`, by :func:`visa.memory.arena._mapped`) keeps which of its pages were asked for
already, so a write into memory mapped before (a later launch, the arena's reused buffers) asks nothing and
costs an index check.  Where the call does not exist (other systems, older kernels: the first refusal switches
it off) nothing is asked and the write faults its pages in as before.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import sys
import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["PREFAULT", "register", "prefault", "asks_nothing"]

PREFAULT = fastpaths.register("memory.prefault", "the pages of an image a write covers are asked of the system "
                                                 "in one call (MADV_POPULATE_WRITE) before the write")

#: ``MADV_POPULATE_WRITE`` (Linux ``include/uapi/asm-generic/mman-common.h``; Python 3.11's mmap lacks the name).
_POPULATE_WRITE = 23

#: Writes smaller than this (bytes, all ranges together) fault their few pages in as before.
_LEAST = 1 << 18

_PAGE = mmap.PAGESIZE

#: Runs of fewer pages than this fault their pages in as before: one call per run costs about what faulting 8
#: pages does (measured on the 2-core VM, 512 runs: 1 page 2.0 ms asked against 1.2 faulted, 8 pages 8.2 against
#: 8.9, 32 pages 28 against 35).
_LEAST_RUN = 16
# madvise's answers that say the advice is not available here (before Linux 5.14, or not allowed), as opposed
# to ENOMEM / EAGAIN / EINTR, which say only that this request could not be met now
_FOR_GOOD = frozenset({errno.EINVAL, errno.ENOSYS, errno.EPERM})

#: ``MADV_HUGEPAGE``: the system may back the range with huge pages (transparent huge pages).
_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", 14)


def _huge_pages() -> int:
    """Small pages in one transparent huge page (Linux: ``hpage_pmd_size``), or 0 where there are none."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") as f:
            return max(0, int(f.read()) // _PAGE)
    except (OSError, ValueError):
        return 0


def _madvise() -> Any:
    """libc's ``madvise`` (with errno), or None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


_MADVISE = _madvise()

#: Small pages in a huge page (0: none): the whole huge pages a write covers are asked for as huge pages, which
#: the system provides at a fraction of the cost of their small pages (measured on the 2-core VM: 16 MiB in
#: 2.5 ms of CPU against 6.8 with small pages asked at once and 9 faulted in one by one).
_HUGE = _huge_pages() if _MADVISE is not None else 0


class _Mapping:
    """A mapping's address and which of its pages were asked for."""

    __slots__ = ("addr", "asked")

    def __init__(self, addr: int, nbytes: int) -> None:
        self.addr = addr
        self.asked = np.zeros(-(-nbytes // _PAGE), dtype=bool)


_MAPS: weakref.WeakKeyDictionary[mmap.mmap, _Mapping] = weakref.WeakKeyDictionary()


def register(mem: mmap.mmap) -> None:
    """Note a new mapping (untouched: no page asked for yet) whose arrays :func:`prefault` may be given."""
    if _MADVISE is not None and len(mem):
        addr = np.frombuffer(mem, dtype=np.uint8, count=1).ctypes.data
        _MAPS[mem] = _Mapping(addr, len(mem))


def _mapping(arr: npt.NDArray[Any]) -> _Mapping | None:
    base: Any = arr
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # (np.frombuffer's base: a view of the mapping's buffer)
        base = base.obj
    return _MAPS.get(base) if isinstance(base, mmap.mmap) else None


def asked_range(arr: npt.NDArray[Any], starts: npt.NDArray[np.int64], length: int) -> tuple[Any, int, int] | None:
    """``(pages asked for, a, b)``: where :func:`prefault` of the same arguments looks whether every page from the
    first range's to the last's was asked for already (``asked[a:b].all()``: then it asks nothing), for a caller
    that writes the same ranges of the same array again (:mod:`visa.memory.nest_store`) and skips the call when
    they were; None when :func:`prefault` would not look there (it asks nothing for such memory, or the path is
    off: the caller calls it all the same)."""
    if not PREFAULT.on or _MADVISE is None or length <= 0 or starts.size * length < _LEAST:
        return None
    m = _mapping(arr)
    if m is None:
        return None
    off = arr.ctypes.data - m.addr
    a, b = (int(starts.min()) + off) // _PAGE, (int(starts.max()) + off + length - 1) // _PAGE + 1
    return (m.asked, a, b) if 0 <= a and b <= m.asked.size else None


def asks_nothing(count: int, step: int, length: int) -> bool:
    """Would :func:`prefault` of ``count`` ranges of ``length`` bytes, ``step`` bytes apart (``step`` > 0), ask
    for no page whatever the memory?  True when no two of the ranges' pages touch and each range's pages are fewer
    than :data:`_LEAST_RUN` (every run short: faulted in as before) — a DM → DM move of 32 KiB a slice, whose
    check (the ranges sorted, cut into runs) costs ~50 µs at every move and finds nothing to ask.  A range of
    ``length`` bytes lies on at most ``(length − 1) // page + 2`` pages; ranges ``length + 2 · page`` or more apart
    start two pages or more past the page the one before ends on (their pages neither overlap nor touch)."""
    pages = (length - 1) // _PAGE + 2
    return pages < _LEAST_RUN and (count == 1 or step >= length + 2 * _PAGE)


def prefault(arr: npt.NDArray[Any], starts: npt.NDArray[np.int64], length: int) -> None:
    """Bytes ``[s, s + length)`` of ``arr`` (a flat byte array) for every ``s`` in ``starts`` are about to be
    written, every one of them: ask the system for their pages now, those of a registered mapping
    not asked for before.  Nothing happens for other memory, small writes, or with the path off."""
    global _MADVISE
    if not PREFAULT.on or _MADVISE is None or length <= 0 or starts.size * length < _LEAST:
        return
    m = _mapping(arr)
    if m is None:
        return
    off = arr.ctypes.data - m.addr
    a, b = (int(starts.min()) + off) // _PAGE, (int(starts.max()) + off + length - 1) // _PAGE + 1
    if 0 <= a and b <= m.asked.size and bool(m.asked[a:b].all()):
        return  # (every page from the first range's to the last's was asked for: a write into warm memory)
    s = np.sort(np.asarray(starts, dtype=np.int64)) + off
    first, last = s // _PAGE, (s + length - 1) // _PAGE + 1
    if first[0] < 0 or last[-1] > m.asked.size:
        return
    # runs of ranges whose pages touch or overlap, as (first page, last page + 1)
    cut = np.flatnonzero(first[1:] > last[:-1]) + 1
    lo, hi = first[np.r_[0, cut]], last[np.r_[cut - 1, last.size - 1]]
    long = hi - lo >= _LEAST_RUN
    if not long.any():
        return
    lo, hi = lo[long], hi[long]
    n = hi - lo
    at = np.r_[0, np.cumsum(n[:-1])]  # where each run's pages begin in the list of all of them
    pages = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(lo - at, n)
    todo = ~np.logical_and.reduceat(m.asked[pages], at)
    for a, b in zip(lo[todo].tolist(), hi[todo].tolist(), strict=True):
        if _HUGE:  # the whole huge pages inside the run: asked for as such (no byte of them stays unwritten)
            first_page = m.addr // _PAGE
            ha = -(-(first_page + a) // _HUGE) * _HUGE - first_page
            hb = (first_page + b) // _HUGE * _HUGE - first_page
            if hb > ha:
                _MADVISE(m.addr + ha * _PAGE, (hb - ha) * _PAGE, _HUGEPAGE)
        if _MADVISE(m.addr + a * _PAGE, (b - a) * _PAGE, _POPULATE_WRITE) != 0:
            if ctypes.get_errno() in _FOR_GOOD:  # (a kernel without the advice: never asked again)
                _MADVISE = None
            return  # (or no memory to give now: this write faults its pages in; a later one asks again)
        m.asked[a:b] = True
