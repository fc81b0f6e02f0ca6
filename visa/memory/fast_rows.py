"""Fast path ``dma.gather-rows`` (issue 24), beside :mod:`visa.memory.transfer`: the rows of an IndirectLoop
(a gather's, manual L1684–1688) that read known HBM bytes and each write whole units of DM move as one batch —
one check of the source, one cover and one mark per run of adjacent destination units, the bytes row after row
from one view of each image — instead of one :func:`~visa.memory.transfer.copy` per row.

The reference (:func:`visa.engines.dma.indirect.execute`) runs the row's byte sequencer once per index, at the
row's own bases: every row resolves both sides, asks whether its source bytes are known, covers and marks its
destination units, takes its views and copies (~65 µs a row; the paged-KV gather of
``benchmarks/bench_heldout4.py`` moves 32 rows, 2.1 ms of a 3.5 ms launch).  The rows differ only by their bases,
so one resolution shifted by each row's offset is each row's resolution; the path is taken only when

* the source is HBM and the destination DM (two images: no row reads what another wrote), no loop steps from chip
  to chip and no loop reads one source twice (no replicas to record: :mod:`visa.memory.fast_replica_sources`,
  the pending copies of a broadcast);
* every row's source lies, with all the others', inside one HBM region and one range asked of it (so no row's
  view creates, merges or asks anything) and all those bytes were written (a row of poison: the reference, which
  copies the written-state byte by byte);
* every row writes bytes ``[unit_lo, unit_hi)`` of every unit it spans, each once, at the same offsets in each
  unit, the units of different rows distinct and inside the DM.

Then the destination's state after the rows is the reference's: the zeros owed and the copies pending inside the
rows' units are not made (:meth:`~visa.memory.images.DenseImage._cover`, ``dma.overwritten-copies``) — the
reference makes those of later rows' units when an earlier row takes its view, and overwrites them — every
byte there is written with the source's, and the pages are marked written over the same units and bytes
(:meth:`~visa.memory.pages.PageMask.mark` of adjacent ranges is the mark of their union).  Anything else — a
poisoned row, a refused write, an index outside the table (refused before, by
:func:`~visa.engines.dma.indirect.check_indices`) — takes the reference, row by row
(``tests/memory/test_fast_rows.py``).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.memory import fast_overwritten
from visa.memory.transfer import ByteLoop, _coalesce, _covers, _prefault, _resolve

__all__ = ["ROWS", "copy_rows"]

ROWS = fastpaths.register("dma.gather-rows", "a gather's rows of known HBM bytes into whole DM units move as one "
                                             "batch: one source check, one cover and mark per run of units")

IntArray = npt.NDArray[np.int64]


def copy_rows(loops: Sequence[ByteLoop], sbases: IntArray, dbases: IntArray, src: Any, dst: Any) -> bool:
    """Run the byte sequencer ``loops`` once from each pair of bases ``(sbases[k], dbases[k])`` (the rows of an
    IndirectLoop, in any order: they write distinct units) as the reference's copies would; False (nothing
    changed) when the rows are not such a batch (module docstring)."""
    if not ROWS.on or sbases.size < 2 or src.space.medium != "hbm" or dst.space.medium != "dm":
        return False
    if getattr(src, "_image", None) is None or getattr(dst, "cover", None) is None:
        return False
    sspace, dspace = src.space, dst.space
    if any((s != 0 and s % sspace.chip_bytes == 0) or (d != 0 and d % dspace.chip_bytes == 0) for _, s, d in loops):
        return False
    loops = _coalesce(loops)
    shape = tuple(n for n, _, _ in loops)
    if not loops or math.prod(shape) == 0 or any(s == 0 for _, s, _ in loops):
        return False
    sb0, db0 = int(sbases[0]), int(dbases[0])
    r = _resolve(sspace, sb0, [(n, s) for n, s, _ in loops])
    w = _resolve(dspace, db0, [(n, d) for n, _, d in loops])
    if not (r.in_units and w.in_units and _covers(w, dspace, shape)):
        return False
    # the source (HBM: one unit a chip): every row on the same chip, shifted by its offset
    s_shift = sbases - sb0
    if bool(((sbases // sspace.chip_bytes) != r.chip).any()):
        return False
    s_lo, s_hi = r.lo + int(s_shift.min()), r.hi + int(s_shift.max())
    if s_lo < 0 or s_hi > sspace.backed_bytes or not _one_region(src._image(r.chip), s_lo, s_hi):
        return False
    # the destination (DM): every row at the same offset in its units, whole units apart, on the same chip
    d_shift = dbases - db0
    if bool((d_shift % dspace.unit_bytes).any()) or bool(((dbases // dspace.chip_bytes) != w.chip).any()):
        return False
    b = dspace.backed_bytes
    d_real = (d_shift // dspace.unit_bytes) * b
    first = (w.lo + d_real) // b
    last = (w.hi - 1 + d_real) // b
    order = np.argsort(first, kind="stable")
    first, last = first[order], last[order]
    if bool((first[1:] <= last[:-1]).any()) or int(first[0]) < 0:
        return False  # (two rows in one unit)
    if not dst.holds(w.chip, int(first[0]) * b, (int(last[-1]) + 1) * b):
        return False  # (the reference refuses, row by row)
    if src.known(r.chip, s_lo, s_hi, s_lo, s_hi) is not None:
        return False  # (a row of poison, or bytes between rows never written: row by row)
    got_src = src.contiguous(r.chip, s_lo, s_hi, write=False)
    if got_src is None:
        return False
    s_data, s_at = got_src
    # runs of adjacent units: one cover (and one drop of the copies inside) each, before any byte is taken
    breaks = np.flatnonzero(first[1:] != last[:-1] + 1) + 1
    runs = [(int(first[i]) * b + w.unit_lo, int(last[j - 1]) * b + w.unit_hi)
            for i, j in zip([0, *breaks.tolist()], [*breaks.tolist(), first.size], strict=True)]
    for lo, hi in runs:
        dst.cover(w.chip, lo, hi, w.unit_lo, w.unit_hi)
        if fast_overwritten.OVERWRITTEN.on:
            fast_overwritten.drop(dst, w.chip, lo, hi, w.unit_lo, w.unit_hi)
    d_lo = w.lo + int(d_real.min())
    got = dst.contiguous(w.chip, d_lo, w.hi + int(d_real.max()), span=(w.unit_lo, w.unit_hi))
    assert got is not None  # (holds said the bytes exist)
    d_data, d_at = got  # (d_at: the index of byte d_lo)
    for lo, hi in runs:
        _prefault(d_data, d_at - d_lo + lo, replace(w, lo=lo, hi=hi), dspace)
    _move(d_data, d_at - d_lo + w.base + d_real, w.strides, s_data, s_at - s_lo + r.base + s_shift, r.strides,
          shape)
    for lo, hi in runs:
        dst.mark_written(w.chip, lo, hi, w.unit_lo, w.unit_hi)
    return True


def _one_region(image: Any, lo: int, hi: int) -> bool:
    """Whether bytes ``[lo, hi)`` of a :class:`~visa.memory.images.PagedImage` lie inside one region and one range
    asked of it (a view of them then creates, merges and asks nothing); nothing changes."""
    k = bisect.bisect_right(image._starts, lo) - 1
    if k < 0 or image._starts[k] + image._data[k].size < hi:
        return False
    asked = image._asked
    j = bisect.bisect_right([a for a, _ in asked], lo) - 1
    return j >= 0 and asked[j][0] <= lo and hi <= asked[j][1]


def _move(dst: npt.NDArray[Any], d_offs: IntArray, d_strides: tuple[int, ...], src: npt.NDArray[Any],
          s_offs: IntArray, s_strides: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """``view(dst at d_offs[k]) = view(src at s_offs[k])`` for every row k, over byte views of ``shape`` (flat
    arrays of one-byte items): a run of contiguous bytes on both sides is one raw element (``V<run>``)."""
    if shape[-1] > 1 and d_strides[-1] == 1 and s_strides[-1] == 1:
        item: np.dtype[Any] = np.dtype((np.void, shape[-1]))
        shape, d_strides, s_strides = shape[:-1], d_strides[:-1], s_strides[:-1]
    else:
        item = np.dtype(np.uint8)
    for d, s in zip(d_offs.tolist(), s_offs.tolist(), strict=True):
        out: npt.NDArray[Any] = np.ndarray(shape, dtype=item, buffer=dst, offset=d, strides=d_strides)
        out[...] = np.ndarray(shape, dtype=item, buffer=src, offset=s, strides=s_strides)
