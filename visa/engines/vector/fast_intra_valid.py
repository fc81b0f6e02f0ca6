"""Fast path ``vector.intra-valid-split`` (issue 24): the intra-slice reducer's validity masks as broadcasts over
the slices, where the slices hold every position and share no axis with the stream.

The reducer's plan (:func:`visa.engines.vector.intra.plan_intra_reduce`, manual L5359–5584) evaluates the joint
validity of ``(Chip, Cluster, Slice, Time, Packet)`` for its input (which elements contribute) and its output, and
gathers the output's along the input's time steps (which elements feed a valid output): three arrays of one bool
per stream position (2M for the row max of ``benchmarks/bench_first_launch.py``), and their comparison for
padding the reducer must neutralise.  When the slice levels are all valid and name no axis of Time or Packet,
the joint validity is the slices' (all True) times the stream's: each mask is the ``(Time, Packet)`` one,
broadcast over the slices, and the padding check is asked of it alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.vector.plan import valid_mask
from visa.mapping import Mapping

__all__ = ["SPLIT", "masks"]

SPLIT = fastpaths.register("vector.intra-valid-split", "the intra-slice reducer's validity masks as broadcasts of "
                                                       "the (Time, Packet) masks over slices that are all valid")

BoolArray = npt.NDArray[np.bool_]


def masks(lead: tuple[Mapping, ...], time: Mapping, packet: Mapping, otime: Mapping, opacket: Mapping,
          kept: Sequence[int] | npt.NDArray[np.int64], pmap: npt.NDArray[np.int64]
          ) -> tuple[BoolArray, BoolArray, BoolArray, bool] | None:
    """``(contributes, out_valid, relevant, padded)`` as the reference plan computes them (``padded``: some
    relevant element does not contribute), as read-only broadcasts over the slices; None when the path is off,
    a slice level is not all valid, or the slice levels share an axis with the stream."""
    if not SPLIT.on:
        return None
    stream_axes = frozenset().union(*(m.axes for m in (time, packet, otime, opacket)))
    if any(m.axes & stream_axes for m in lead):
        return None
    lead_valid = valid_mask(lead)
    if not bool(lead_valid.all()):
        return None
    c_tp = valid_mask((time, packet))
    o_tp = valid_mask((otime, opacket))
    r_tp = o_tp[np.asarray(kept)][..., pmap]
    shape = lead_valid.shape
    padded = lead_valid.size > 0 and bool((r_tp & ~c_tp).any())
    return (np.broadcast_to(c_tp, shape + c_tp.shape), np.broadcast_to(o_tp, shape + o_tp.shape),
            np.broadcast_to(r_tp, shape + r_tp.shape), padded)
