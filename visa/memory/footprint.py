"""Footprints: the bytes an operation reads or writes, as compact region sets (manual "Scheduling", L7042–7070).

The scheduler finds read-after-write, write-after-read and write-after-write hazards "by analyzing the memory
addresses specified in the program" (L7067–7070).  A :class:`Span` is one region set of one memory: a set of
chips, a set of units within each chip (DM and VRF: ``cluster · slices_per_cluster + slice``; TRF the same,
with a set of rows), and sorted disjoint byte intervals ``[lo, hi)`` within each unit (manual L1085–1093: a
DM, TRF or VRF tensor occupies the same byte range in every slice it is laid out over).  A
:class:`Footprint` is a tuple of spans.  Intersection is interval arithmetic on numpy arrays, never a loop
over bytes.

Sets of chips, units and rows are Python ints used as bitmasks (bit ``i`` set: index ``i`` is in the set).
Plain data: the memory layer holds it so that every layer above (engines' moves, streams, the scheduler) can
build one; :mod:`visa.schedule` turns tensor handles into footprints.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Span", "Footprint", "EMPTY", "MEMORIES", "bitmask", "merge_intervals", "intervals_overlap",
           "valid_positions", "index_mask", "unit_indices", "units_of"]

#: The memories a footprint can name (manual L134–140; SPM where it exists, L2942–2947; the host buffer).
MEMORIES = ("hbm", "dm", "trf", "vrf", "spm", "host")

IntArray = npt.NDArray[np.int64]


def bitmask(indices: Iterable[int]) -> int:
    """The bitmask of a set of indices (bit ``i`` for index ``i``)."""
    out = 0
    for i in indices:
        out |= 1 << int(i)
    return out


def merge_intervals(lo: npt.ArrayLike, hi: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    """Sorted, disjoint, non-adjacent ``[lo, hi)`` intervals covering the given ones (empty ones dropped)."""
    a = np.asarray(lo, dtype=np.int64).reshape(-1)
    b = np.asarray(hi, dtype=np.int64).reshape(-1)
    keep = b > a
    a, b = a[keep], b[keep]
    if a.size <= 1:
        return a, b
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    reach = np.maximum.accumulate(b)
    start = np.ones(a.size, dtype=bool)
    start[1:] = a[1:] > reach[:-1]
    idx = np.flatnonzero(start)
    ends = np.append(idx[1:], a.size) - 1
    return a[idx], reach[ends]


def intervals_overlap(alo: IntArray, ahi: IntArray, blo: IntArray, bhi: IntArray, shift: int = 0) -> bool:
    """Whether two sorted disjoint interval sets share a byte, B's intervals moved by ``shift`` bytes
    (``[blo + shift, bhi + shift)``; vectorised: one ``searchsorted``).  Exact for any integers: the bounds are
    compared as Python ints, and the intervals moved in int64 only where no sum can wrap (else as Python ints)."""
    if alo.size == 0 or blo.size == 0:
        return False
    shift = int(shift)  # (a numpy integer's ``-shift`` or sum could wrap; a Python int cannot)
    a0, a1, b0, b1 = int(alo[0]), int(ahi[-1]), int(blo[0]), int(bhi[-1])
    if a1 <= b0 + shift or b1 + shift <= a0:
        return False
    if alo.size == 1 and blo.size == 1:  # (two single intervals that are not apart share a byte)
        return True
    if alo.size > blo.size:
        alo, ahi, blo, bhi, shift = blo, bhi, alo, ahi, -shift
        a0, a1, b0, b1 = b0, b1, a0, a1
    if not (_I64[0] <= shift <= _I64[1] and _I64[0] <= a0 - shift and a1 - shift <= _I64[1]
            and _I64[0] <= b0 + shift and b1 + shift <= _I64[1]
            and alo.dtype == ahi.dtype == blo.dtype == bhi.dtype == np.int64):
        alo, ahi, blo, bhi = (np.asarray(v).astype(object) for v in (alo, ahi, blo, bhi))  # (Python ints)
    # for each interval of A, the first interval of B that ends after A's start
    k = np.searchsorted(bhi, alo - shift if shift else alo, side="right")
    ok = k < blo.size
    first = blo[np.minimum(k, blo.size - 1)][ok]
    return bool(np.any((first + shift if shift else first) < ahi[ok]))


_I64 = (int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max))


@functools.lru_cache(maxsize=1024)
def _valid_positions(mapping: Any) -> npt.NDArray[np.int64]:
    # for a linear combination (a sliding window read through a relabelled view, L1006–1016): the positions some
    # split of it reaches
    out: npt.NDArray[np.int64] = np.flatnonzero(mapping.cover()).astype(np.int64)
    out.setflags(write=False)
    return out


def valid_positions(mapping: Any) -> npt.NDArray[np.int64]:
    """The positions a mapping holds (cached: a kernel's few mappings are evaluated once); for a linear
    combination, the positions some split of it reaches."""
    try:
        return _valid_positions(mapping)
    except TypeError:  # an unhashable mapping: evaluate it each time
        return np.flatnonzero(mapping.cover()).astype(np.int64)


def index_mask(indices: npt.NDArray[np.int64]) -> int:
    """The bitmask of a set of indices, built from packed bits (no loop over the indices)."""
    if indices.size == 0:
        return 0
    bits = np.zeros(int(indices.max()) + 1, dtype=bool)
    bits[indices] = True
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


def unit_indices(levels: dict[str, Any], slices_per_cluster: int) -> npt.NDArray[np.int64]:
    """The units (``cluster · slices_per_cluster + slice``) a DM, TRF or VRF tensor occupies: the positions its
    Cluster and Slice mappings hold.  Padding positions are left out, as the slice bitmap leaves them (L2314):
    each slice has its own address space (L2874), and a tensor's padding slices are unused space (L150–155)."""
    clusters, slices = valid_positions(levels["Cluster"]), valid_positions(levels["Slice"])
    return (clusters[:, None] * slices_per_cluster + slices[None, :]).reshape(-1)


def units_of(levels: dict[str, Any], slices_per_cluster: int) -> int:
    """:func:`unit_indices` as a bitmask; kept per Cluster and Slice mapping (by their exact keys: a kernel's
    tensors share a few) — a pure function of them."""
    cluster, slice_ = levels["Cluster"], levels["Slice"]
    key = (getattr(cluster, "key", None), getattr(slice_, "key", None), slices_per_cluster)
    got = _UNITS_OF.get(key) if key[0] is not None and key[1] is not None else None
    if got is None:
        got = _units_of(cluster, slice_, slices_per_cluster)
        if key[0] is not None and key[1] is not None:
            if len(_UNITS_OF) >= 4096:
                _UNITS_OF.clear()
            _UNITS_OF[key] = got
    return got


_UNITS_OF: dict[tuple[object, object, int], int] = {}


def _units_of(cluster: Any, slice_: Any, slices_per_cluster: int) -> int:
    clusters, slices = valid_positions(cluster), valid_positions(slice_)
    if clusters.size and slices.size == slices_per_cluster and int(slices[-1]) == slices_per_cluster - 1 \
            and int(clusters[-1]) - int(clusters[0]) + 1 == clusters.size:
        # (every slice of a run of clusters — positions ascend without repeats — is one run of units)
        return ((1 << (clusters.size * slices_per_cluster)) - 1) << (int(clusters[0]) * slices_per_cluster)
    return index_mask((clusters[:, None] * slices_per_cluster + slices[None, :]).reshape(-1))


@dataclass(frozen=True, eq=False)
class Span:
    """One memory's region set: ``chips`` × ``units`` × ``rows`` × byte intervals ``[lo[i], hi[i])``.

    ``units`` is ``-1`` (every unit) for HBM, whose unit is the chip; ``rows`` is ``-1`` (every row) outside
    the TRF.  Byte intervals are relative to the unit (slice, or TRF row, or the chip's HBM).  They are kept as
    ``rel_lo``/``rel_hi`` moved by ``shift`` bytes (``lo = rel_lo + shift``): the views of one Element at
    different offsets share its intervals (:func:`visa.schedule.footprints.span_of`), so that a schedule holding
    many tiles' footprints holds a few bytes a span rather than a copy of the intervals each (issue 24)."""

    memory: str
    chips: int
    units: int
    rows: int
    rel_lo: IntArray
    rel_hi: IntArray
    shift: int = 0

    @property
    def lo(self) -> IntArray:
        """The intervals' starts (``rel_lo + shift``; a new array when the shift is not 0)."""
        return self.rel_lo + self.shift if self.shift else self.rel_lo

    @property
    def hi(self) -> IntArray:
        """The intervals' ends, exclusive (``rel_hi + shift``; a new array when the shift is not 0)."""
        return self.rel_hi + self.shift if self.shift else self.rel_hi

    @property
    def count(self) -> int:
        """How many intervals."""
        return int(self.rel_lo.size)

    def extent(self) -> tuple[int, int]:
        """The first byte covered and one past the last (``(0, 0)`` without intervals), without building
        :attr:`lo` and :attr:`hi`."""
        if not self.rel_lo.size:
            return 0, 0
        return int(self.rel_lo[0]) + self.shift, int(self.rel_hi[-1]) + self.shift

    @classmethod
    def of(cls, memory: str, chips: Iterable[int] | int, lo: npt.ArrayLike, hi: npt.ArrayLike, *,
           units: Iterable[int] | int = -1, rows: Iterable[int] | int = -1) -> Span:
        """A span from index sets (or bitmasks) and intervals (merged)."""
        if memory not in MEMORIES:
            raise ValueError(f"unknown memory {memory!r}; expected one of {MEMORIES}")
        a, b = merge_intervals(lo, hi)
        return cls(memory, chips if isinstance(chips, int) else bitmask(chips),
                   units if isinstance(units, int) else bitmask(units),
                   rows if isinstance(rows, int) else bitmask(rows), a, b)

    @functools.cached_property
    def bytes_per_unit(self) -> int:
        """Bytes the intervals cover in one unit (one row of a TRF unit); found once (a span never changes)."""
        return int((self.rel_hi - self.rel_lo).sum())

    @functools.cached_property
    def nbytes(self) -> int:
        """Bytes covered in all (chips × units × rows × intervals); a unit or row set of -1 counts once.  Found
        once: a span never changes (its intervals are read-only where it is shared, e.g. a tensor's own)."""
        n = self.bytes_per_unit * bin(self.chips).count("1")
        if self.units > 0:
            n *= bin(self.units).count("1")
        if self.rows > 0:
            n *= bin(self.rows).count("1")
        return n

    def chip_list(self) -> list[int]:
        """The chips, ascending."""
        return [i for i in range(self.chips.bit_length()) if self.chips >> i & 1]

    def unit_count(self) -> int:
        """Units per chip the span covers (1 for HBM)."""
        return bin(self.units).count("1") if self.units > 0 else 1

    def overlaps(self, other: Span) -> bool:
        """Same memory, a shared chip, unit and row, and a shared byte (the aliasing rule: same bytes)."""
        if self.memory != other.memory or not (self.chips & other.chips):
            return False
        if not (self.units & other.units) or not (self.rows & other.rows):
            return False
        return intervals_overlap(self.rel_lo, self.rel_hi, other.rel_lo, other.rel_hi, other.shift - self.shift)

    def shares_units(self, other: Span) -> bool:
        """Same memory and a shared chip and unit (bytes may differ): the banks they use may collide."""
        return (self.memory == other.memory and bool(self.chips & other.chips)
                and bool(self.units & other.units))

    def __repr__(self) -> str:
        ranges = ", ".join(f"{int(a) + self.shift}..{int(b) + self.shift}"
                           for a, b in zip(self.rel_lo[:3], self.rel_hi[:3], strict=True))
        more = f", … ({self.rel_lo.size} ranges)" if self.rel_lo.size > 3 else ""
        return (f"Span({self.memory.upper()}, chips {self.chip_list()}, {self.unit_count()} unit(s), "
                f"bytes {ranges}{more})")


@dataclass(frozen=True)
class Footprint:
    """The region sets of one side (reads or writes) of an operation: a span per tensor it touches."""

    spans: tuple[Span, ...] = ()

    @classmethod
    def of(cls, spans: Sequence[Span] | Iterable[Span]) -> Footprint:
        """A footprint from spans."""
        return cls(tuple(spans))

    def __add__(self, other: Footprint) -> Footprint:
        return Footprint(self.spans + other.spans)

    def __bool__(self) -> bool:
        return bool(self.spans)

    def overlaps(self, other: Footprint) -> bool:
        """Whether any span of one shares a byte with any span of the other."""
        return any(a.overlaps(b) for a in self.spans for b in other.spans)

    def chips(self) -> int:
        """The chips touched (bitmask)."""
        out = 0
        for s in self.spans:
            out |= s.chips
        return out

    def chip_indices(self) -> list[int]:
        """The chips touched, ascending (the set bits of :meth:`chips`)."""
        mask = self.chips()
        return [c for c in range(mask.bit_length()) if mask >> c & 1]

    def nbytes(self, memory: str | None = None) -> int:
        """Bytes covered, in one memory or all (overlapping spans count each time)."""
        return sum(s.nbytes for s in self.spans if memory is None or s.memory == memory)


#: The footprint of an operation that touches no device memory.
EMPTY = Footprint()
