"""Faster reads of the TRF window (:func:`visa.engines.contraction.window.read_window`), registered in
:mod:`visa.fastpaths`:

- ``contraction.window-nest`` — the window is read as one strided copy of each row (``load_nest``; elements of
  whole little-endian bytes as one slice of each row's bytes), instead of one address per element;
- ``contraction.window-in-place`` — one chip, every slice of a range of clusters, a window inside the element: the
  rows' bytes are read in place, the known-mask is a broadcast when every byte was written, and slices given the
  same weights keep one period (known from the replica ids, :mod:`visa.memory.replicas`, or found in the bytes;
  :class:`~visa.engines.contraction.compute.TrfWindow` ``period``);
- ``contraction.window-fold`` — in that case, when the replica ids show the slices' weights repeating with a
  period within each block of slices only (a *fold*: the reference's ``matmul_16384`` gives slice ``(cluster,
  row group, s)`` the weights of ``(cluster, s)``), the first period of each block is read (``TrfWindow`` ``period``
  and ``span``), not every slice;
- ``contraction.window-owed`` — in that case, when no period is known from the writes, every slice's rows are
  read through the pending copies a register load left (:func:`visa.memory.owed.read_units`, one gather), not by
  making those copies and then copying the window (issue 24);
- ``contraction.window-run`` — one chip, a run of consecutive slices that is not whole clusters (a decode step's
  GEMV loads the TRF of as many slices as its weights fill, issue 25), a window inside the element, every byte
  written: the rows' bytes in one gather through the pending copies and a broadcast known-mask, not a loop-nest
  read of the values and of a per-element known-mask.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.engines.cache import cached
from visa.engines.contraction.compute import TrfWindow
from visa.engines.contraction.fast_compute import has_period, weight_period
from visa.mapping import Mapping
from visa.memory import owed
from visa.memory.images import DenseImage, load_nest
from visa.memory.known import known_everywhere
from visa.memory.replicas import Labels, combine, fold_of, period_of, verifying
from visa.memory.units import UnitSelection

__all__ = ["NEST", "IN_PLACE", "OWED", "FOLD", "RUN", "read_window"]

NEST = fastpaths.register("contraction.window-nest", "the TRF window is one strided copy of each row's bytes "
                          "instead of one address per element")
OWED = fastpaths.register("contraction.window-owed", "a TRF window of every slice of a range of clusters with no "
                          "period known from the writes read through the pending copies (one gather), not by "
                          "making the copies and copying the window")
FOLD = fastpaths.register("contraction.window-fold", "a TRF window whose slices' weights repeat with a period "
                          "within blocks of slices (known from the writes) read one period of each block, not "
                          "every slice")
RUN = fastpaths.register("contraction.window-run", "a TRF window of a run of consecutive slices of one chip, every "
                         "byte written, read in one gather through the pending copies with a broadcast known-mask, "
                         "not a loop-nest read of values and per-element known-mask")
IN_PLACE = fastpaths.register("contraction.window-in-place", "the TRF window over a range of clusters is read in "
                              "place: a broadcast known-mask, and one period of slices sharing weights")


def read_window(dtype: type[dt.Scalar], rows: int, element: Mapping, bit_offset: int, images: Sequence[DenseImage],
                valid: npt.NDArray[np.bool_], lo: int, hi: int) -> TrfWindow | None:
    """:func:`visa.engines.contraction.window.read_window` by the fast paths (module docstring); None when they
    are off or the window is not one they read."""
    if not NEST.on:
        return None
    if dtype.image_bits % 8 == 0 and bit_offset % 8 == 0:
        return _byte_window(dtype, rows, element, bit_offset, images, valid, lo, hi)
    idx = np.arange(lo, hi, dtype=np.int64)
    if lo < 0 or hi > element.size:
        return None
    chips, ks, ss = np.nonzero(valid)
    values = np.zeros((len(chips), rows, idx.size), dtype=dtype.storage)
    known = np.zeros((len(chips), rows, idx.size), dtype=bool)
    for c in np.unique(chips).tolist():
        sel = np.flatnonzero(chips == c)
        on = np.zeros(images[c].lead_shape, dtype=bool)  # every Row of the valid slices, (cluster, slice, row) order
        on[ks[sel], ss[sel], :rows] = True
        got = load_nest(dtype, UnitSelection(images[c], on), bit_offset + lo * dtype.image_bits, ((hi - lo, 1),))
        if got is None:  # (a nest that cannot run on the image's bytes: the reference)
            return None
        values[sel] = got[0].reshape(len(sel), rows, idx.size)
        known[sel] = got[1].reshape(len(sel), rows, idx.size)  # (padding: what the load wrote, L3771)
    return TrfWindow(values, known, lo)


def _byte_window(dtype: type[dt.Scalar], rows: int, element: Mapping, bit_offset: int,
                 images: Sequence[DenseImage], valid: npt.NDArray[np.bool_], lo: int, hi: int) -> TrfWindow:
    """:func:`read_window` for element types whose images are whole little-endian bytes: one slice of the image."""
    nb = dtype.image_bits // 8
    c_lo, c_hi = max(lo, 0), min(hi, element.size)
    chips, ks, ss = np.nonzero(valid)
    if c_hi <= c_lo:  # the window lies outside the element: poison
        return TrfWindow(np.zeros((len(chips), rows, hi - lo), dtype=dtype.storage),
                                np.zeros((len(chips), rows, hi - lo), dtype=bool), lo)
    held = _all_held(element, c_lo, c_hi)
    b0 = bit_offset // 8 + c_lo * nb
    b1 = b0 + (c_hi - c_lo) * nb
    clusters = _cluster_range(valid) if IN_PLACE.on else None
    if clusters is not None and held and (c_lo, c_hi) == (lo, hi):
        # one chip, every slice of a range of clusters, a window inside the element: the rows' bytes, in place
        image = images[0]
        n, box = len(chips), (clusters, slice(None), slice(0, rows))
        word = next(w for w in (8, 4, 2, 1) if (b1 - b0) % w == 0)
        written = image.all_written(b0, b1, box)  # (no mask read) every element known: no per-element mask
        # slices given the same weights repeat with a period: copy one period (a snapshot, so a later to_trf
        # cannot change what this pass reads; L4063-4070).  Known from the writes (the replica ids), then only
        # the first period's rows are read (through pending copies: visa.memory.owed.read_units); or found in the bytes
        labels = _window_labels(image, clusters, rows, b0, b1) if written else None
        period, span = period_of(labels), 0
        if not period and FOLD.on:  # (or with a period within blocks of slices only: one period of each block)
            period, span = fold_of(labels)
        if period:
            bank = image.lead_shape[-1]
            if span:
                ids = (np.arange(n // span, dtype=np.int64)[:, None] * span + np.arange(period)).reshape(-1)
            else:
                ids = np.arange(period, dtype=np.int64)
            first = clusters.start * image.lead_shape[1] + ids
            units = (first[:, None] * bank + np.arange(rows, dtype=np.int64)).reshape(-1)
            values = owed.read_units(image, units, b0, b1).view(dtype.storage).reshape(ids.size, rows, hi - lo)
            window = TrfWindow(values, known_everywhere(values.shape), lo, period, span)
            if verifying():
                whole = image.read_data()[clusters, :, :rows, b0:b1].reshape(n, rows, b1 - b0)
                assert span or has_period(whole.view(np.dtype(f"u{word}")), period), \
                    "TRF replica ids claim a period the bytes do not have"
                assert np.array_equal(whole.view(dtype.storage).reshape(n, rows, hi - lo),
                                      values[window.entries(np.arange(n, dtype=np.int64))]), \
                    "TRF replica ids claim a period the bytes do not have"
            return window
        if written and OWED.on:
            # every slice's rows through pending copies (one gather, a snapshot): the copies a register load
            # left are not made (a later load over these rows drops them, memory.overwritten-copies)
            bank = image.lead_shape[-1]
            every = clusters.start * image.lead_shape[1] + np.arange(n, dtype=np.int64)
            units = (every[:, None] * bank + np.arange(rows, dtype=np.int64)).reshape(-1)
            snap = owed.read_units(image, units, b0, b1).reshape(n, rows, b1 - b0)
            period = weight_period(snap.view(np.dtype(f"u{word}")))  # found in the bytes
            values = snap[:period or n].view(dtype.storage).reshape(period or n, rows, hi - lo)
            return TrfWindow(values, known_everywhere(values.shape), lo, period)
        view = image.read_data()[clusters, :, :rows, b0:b1].reshape(n, rows, b1 - b0)
        if written:
            words = view.view(np.dtype(f"u{word}"))
            period = weight_period(words)  # found in the bytes
            count = period or n
            values = view[:count].copy().view(dtype.storage).reshape(count, rows, hi - lo)  # (a snapshot, as above)
            return TrfWindow(values, known_everywhere(values.shape), lo, period)
        wr = image.known_bytes(b0, b1, box).reshape(n, rows, hi - lo, nb)
        every = wr[..., 0].copy()
        for k in range(1, nb):  # (an element is known when all its bytes are)
            every &= wr[..., k]
        return TrfWindow(view.copy().view(dtype.storage).reshape(n, rows, hi - lo), every, lo)
    run = _slice_run(valid) if RUN.on and held and (c_lo, c_hi) == (lo, hi) else None
    if run is not None:  # (one chip, consecutive slices, every byte written: one gather, a broadcast known-mask)
        image = images[0]
        n_sl, bank = image.lead_shape[1], image.lead_shape[2]
        flat = np.arange(run.start, run.stop, dtype=np.int64)
        if image.all_written(b0, b1, (flat // n_sl, flat % n_sl, slice(0, rows))):
            units = (flat[:, None] * bank + np.arange(rows, dtype=np.int64)).reshape(-1)
            values = owed.read_units(image, units, b0, b1).view(dtype.storage).reshape(flat.size, rows, hi - lo)
            return TrfWindow(values, known_everywhere(values.shape), lo)
    values = np.zeros((len(chips), rows, hi - lo), dtype=dtype.storage)
    known = np.zeros((len(chips), rows, hi - lo), dtype=bool)
    for c in np.unique(chips).tolist():
        sel = np.flatnonzero(chips == c)
        image = images[c]
        # the window of every Row of the valid slices: one strided copy through element words
        on = np.zeros(image.lead_shape, dtype=bool)
        on[ks[sel], ss[sel], :rows] = True
        got = load_nest(dtype, UnitSelection(image, on), 8 * b0, ((c_hi - c_lo, 1),))
        if got is not None:
            values[sel, :, c_lo - lo: c_hi - lo] = got[0].reshape(len(sel), rows, c_hi - c_lo)
            known[sel, :, c_lo - lo: c_hi - lo] = got[1].reshape(len(sel), rows, c_hi - c_lo)
            continue
        raw = np.ascontiguousarray(image.read_data()[ks[sel], ss[sel], :rows, b0:b1])
        wr = image.known_bytes(b0, b1, (ks[sel], ss[sel], slice(0, rows))).reshape(len(sel), rows, c_hi - c_lo, nb)
        values[sel, :, c_lo - lo: c_hi - lo] = raw.view(dtype.storage.newbyteorder("<"))
        every = wr[..., 0].copy()  # (padding holds what the load wrote: zero dummies are known, L3771)
        for k in range(1, nb):  # (not .all(axis=-1): a reduction over a tiny last axis is slow)
            every &= wr[..., k]
        known[sel, :, c_lo - lo: c_hi - lo] = every
    return TrfWindow(values, known, lo)


@cached(256)
def _all_held(element: Mapping, lo: int, hi: int) -> bool:
    """Whether every element position ``lo .. hi - 1`` of ``element`` is held (no padding, L1017–1028): a pure
    function of the mapping (a decode step's GEMMs ask it of the same TRF element at every call, issue 25)."""
    return bool(np.asarray(element.evaluate(np.arange(lo, hi, dtype=np.int64)).valid).all())


def _window_labels(image: DenseImage, clusters: slice, rows: int, b0: int, b1: int) -> Labels | None:
    """Labels of the slices of ``clusters`` (every slice of each, in order) whose TRF rows ``0 .. rows - 1`` are
    known to hold the same bytes ``[b0, b1)``, row by row (:mod:`visa.memory.replicas`)."""
    n_cl, n_sl, bank = image.lead_shape
    slices = np.arange(clusters.start * n_sl, clusters.stop * n_sl, dtype=np.int64)
    units = (slices[:, None] * bank + np.arange(rows, dtype=np.int64)).reshape(-1)
    labels = image.replica_labels(units, b0, b1)
    if labels is None:
        return None
    per_row = labels.reshape(slices.size, rows)
    return combine(*(per_row[:, r] for r in range(rows)))


def _cluster_range(valid: npt.NDArray[np.bool_]) -> slice | None:
    """The valid ``(Chip, Cluster, Slice)`` positions as a range of clusters of chip 0 (every slice of each), if
    they are that (a cluster level ``1 # 2`` leaves the second cluster out); else None."""
    if valid.shape[0] != 1:
        return None
    on = np.flatnonzero(valid[0].any(axis=1))
    if not on.size or int(on[-1]) - int(on[0]) + 1 != on.size or not bool(valid[0, on].all()):
        return None
    return slice(int(on[0]), int(on[-1]) + 1)




def _slice_run(valid: npt.NDArray[np.bool_]) -> slice | None:
    """The valid ``(Chip, Cluster, Slice)`` positions as a run of consecutive (flat) slices of chip 0, if they are
    that; else None."""
    if valid.shape[0] != 1:
        return None
    on = np.flatnonzero(valid[0].reshape(-1))
    if not on.size or int(on[-1]) - int(on[0]) + 1 != on.size:
        return None
    return slice(int(on[0]), int(on[-1]) + 1)
