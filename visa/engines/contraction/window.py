"""The TRF Sequencer's read, as the Aligner snapshots it (manual L4035–4100, L4063–4070).

:func:`read_window` is the reference: the TRF elements ``lo .. hi - 1`` of a tensor, per Row, at every valid
``(Chip, Cluster, Slice)`` position, one element address at a time (outside the tensor's Element the values
are poison; at its padding, what the load wrote there).  The faster reads are registered fast paths
(:mod:`visa.engines.contraction.fast_window`, :mod:`visa.fastpaths`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.contraction.compute import TrfWindow
from visa.mapping import Mapping
from visa.memory.images import DenseImage, load
from visa.memory.units import UnitSelection

__all__ = ["read_window"]


def read_window(dtype: type[dt.Scalar], rows: int, element: Mapping, bit_offset: int, images: Sequence[DenseImage],
                valid: npt.NDArray[np.bool_], lo: int, hi: int) -> TrfWindow:
    """The elements ``lo .. hi - 1`` of a TRF tensor of ``dtype`` (``rows`` Rows, ``element`` its Element, element
    0 at bit ``bit_offset`` of a row) in each chip's TRF image (``images``), at the ``valid`` positions (in
    ``flatnonzero`` order), per Row: :class:`~visa.engines.contraction.compute.TrfWindow`.  Outside the Element the
    values are poison; at its padding, what the load wrote there (the zero dummies ``1z`` of a masked load are
    known zeros, L3771; issue 27 item 2)."""
    from visa.engines.contraction import fast_window  # (the fast paths of this read; it imports this module)

    fast = fast_window.read_window(dtype, rows, element, bit_offset, images, valid, lo, hi)
    if fast is not None:
        return fast
    idx = np.arange(lo, hi, dtype=np.int64)
    inside = (idx >= 0) & (idx < element.size)
    bits = bit_offset + np.where(inside, idx, 0) * dtype.image_bits
    chips, ks, ss = np.nonzero(valid)
    values = np.zeros((len(chips), rows, idx.size), dtype=dtype.storage)
    known = np.zeros((len(chips), rows, idx.size), dtype=bool)
    for c in np.unique(chips).tolist():
        sel = np.flatnonzero(chips == c)
        image = images[c]
        on = np.zeros(image.lead_shape, dtype=bool)  # every Row of the valid slices, in (cluster, slice, row) order
        on[ks[sel], ss[sel], :rows] = True
        v, k = load(dtype, UnitSelection(image, on), bits)
        k = k.reshape(len(sel), rows, idx.size) & inside
        values[sel] = np.where(k, v.reshape(len(sel), rows, idx.size), np.zeros((), dtype=dtype.storage))
        known[sel] = k
    return TrfWindow(values, known, lo)

