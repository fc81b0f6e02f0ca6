"""Fast path ``dma.replica-sources`` (issue 24), beside :mod:`visa.memory.transfer`: a DM → DM copy whose source
slices are known replicas leaves its destination slices known replicas too.

The DMA records replicas where it reads one source for several units (a stride-0 loop, :mod:`visa.memory.replicas`).
A copy of whole units to whole units — every loop that steps from unit to unit on one side does so on the other,
the loops within a unit the same for every unit — gives destination unit ``u`` the bytes of one source unit
``σ(u)``, at the same offsets for every ``u``: two destination units whose sources are replicas over the bytes read
hold the same bytes.  The reference's ``matmul_16384`` moves the cluster-sliced halves across clusters (a cluster
swap); their 32 slices of a group are replicas of one another, and with the labels carried over the add that
follows reads one slice of each class (``fetch.shared-rows``).  Only labels change; the bytes are copied as before.

``memory.forget-units``: the swap is two copies (one per cluster) into the same bytes of different slices; the
reference forgets the replica ids of every unit over a range written (:meth:`visa.memory.replicas.ReplicaIds.forget`),
so the second copy would erase what the first recorded.  With the path, a write forgets the ids of the units it
writes (every write path names them: the same units the image's arena bookkeeping relies on), which is exactly
what changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.memory.replicas import verifying

if TYPE_CHECKING:
    from visa.memory.transfer import ByteLoop, _Resolved

__all__ = ["SOURCES", "FORGET_UNITS", "record", "check_classes"]

SOURCES = fastpaths.register("dma.replica-sources", "a DM → DM copy of whole units from replicated source units "
                                                    "records its destination units as replicas")
FORGET_UNITS = fastpaths.register("memory.forget-units", "a write forgets the replica ids of the units it writes, "
                                                         "not of every unit over its byte range")


def record(loops: Sequence[ByteLoop], r: _Resolved, w: _Resolved, src: Any, dst: Any) -> None:
    """After a copy of known bytes covering ``[w.unit_lo, w.unit_hi)`` of every destination unit, with no loop
    reading one source twice: record the destination's replicas from the source's (module docstring)."""
    labels_of = getattr(src, "replica_labels", None)
    record_to = getattr(dst, "record_replicas", None)
    if labels_of is None or record_to is None:
        return
    sb, db = src.space.backed_bytes, dst.space.backed_bytes
    s_unit = np.full((), r.base // sb, np.int64)
    d_unit = np.full((), w.base // db, np.int64)
    for (n, _, _), rs, ws, r_lvl, w_lvl in zip(loops, r.strides, w.strides, r.unit_level, w.unit_level, strict=True):
        if n == 1:
            continue
        if r_lvl != w_lvl or (r_lvl and (rs % sb or ws % db)):
            return  # (a loop that steps units on one side only: the offsets within a unit differ)
        if r_lvl:
            i = np.arange(n, dtype=np.int64)
            s_unit = s_unit[..., None] + i * (rs // sb)
            d_unit = d_unit[..., None] + i * (ws // db)
    s_flat, d_flat = s_unit.reshape(-1), d_unit.reshape(-1)
    if d_flat.size < 2:
        return
    labels = labels_of(r.chip, s_flat, r.unit_lo, r.unit_hi)
    if labels is None or not bool((labels >= 0).any()):
        return
    keys = np.where(labels >= 0, labels.astype(np.int64), -1 - d_flat)  # (no label: a class alone)
    record_to(w.chip, d_flat, keys, w.unit_lo, w.unit_hi)
    image = getattr(dst, "_image", None)
    if verifying() and image is not None:
        check_classes(image(w.chip), d_flat, keys, w.unit_lo, w.unit_hi)


def check_classes(image: Any, units: npt.NDArray[np.int64], keys: npt.NDArray[np.int64], lo: int, hi: int) -> None:
    """Assert that the (flat) ``units`` of equal ``keys`` hold the same bytes ``[lo, hi)`` of ``image`` (a
    :class:`~visa.memory.images.DenseImage`, read through its pending copies without making them): the test
    suite's check of every replica claim (``VISA_VERIFY_REPLICAS=1``)."""
    rows = image._read_units(units, lo, hi)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    assert np.array_equal(rows, rows[first[inverse.reshape(-1)]]), "recorded replicas whose bytes differ"
