"""The reducers' fast path (:mod:`visa.fastpaths`): ``vector.reduce-shortcuts`` computes exactly what the intra-
and inter-slice reducers' reference folds compute (:mod:`visa.engines.vector.intra`, L5560–5700;
:mod:`visa.engines.vector.inter`, L5701–5800), skipping work whose result is known in advance:

- a configuration whose every position contributes puts no identity in (no masked copy of the stream);
- an all-known stream builds no poison mask;
- time steps folded in order (one output step, or each output step's steps consecutive) are a view of the
  stream, not a gather by index (:func:`by_steps`);
- an inter-slice group table whose every group is full reads the members without the identity padding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["SHORTCUTS", "LANES", "ORDER_FREE", "by_steps", "any_last", "order_free"]

SHORTCUTS = fastpaths.register("vector.reduce-shortcuts", "a reduction skips the identity of a configuration every "
                               "position contributes to, the poison mask of an all-known stream, the gather of time "
                               "steps in order and the padding of full groups")

LANES = fastpaths.register("vector.any-lanes", "a poison mask is reduced over a last axis of 2, 4 or 8 lanes by "
                           "reading each position's lanes as one 2-, 4- or 8-byte word, not by a logical-or "
                           "reduction whose inner loop is the few lanes")


ORDER_FREE = fastpaths.register("vector.intra-order-free", "an i32 Max or Min intra-slice reduce over the Packet's "
                                "lanes and its time steps in numpy reductions over both (an integer maximum or "
                                "minimum is the same in any order: one reduction, or lane by lane over the many "
                                "steps of a strided view), not the lane tree and then the fold in time order")


def order_free(op: str, dtype: str, x: npt.NDArray[Any], perm: npt.NDArray[np.int64],
               steps: Callable[[npt.NDArray[Any], npt.NDArray[np.int64]], npt.NDArray[Any]]
               ) -> npt.NDArray[Any] | None:
    """The intra-slice reducer's lane tree over ``x``'s last axis of 4 lanes (``arith.tree4``) then its fold of the
    time steps ``perm`` (``steps(x, perm)``: ``(C, K, S, T', steps, 4)``) in order (``arith.sequential_reduce``),
    for an i32 ``Max`` or ``Min``, in one reduction over the steps and the lanes at once (or, over many steps of
    lanes that are a strided view, each lane's steps alone and then the four lanes): the greatest (least) of
    some integers is one of them whatever the order they are compared in, so the result is the same integers, and
    no lane-tree temporaries (three arrays of a quarter of the stream) are made.  None for another operator, f32
    (whose ``fmax`` of ±0 and NaNs depends on the order), no steps, or with the path off."""
    if not ORDER_FREE.on or dtype != "i32" or op not in ("Max", "Min") or x.shape[-1] != 4 or x.dtype != np.int32:
        return None
    y = steps(x, perm)
    if y.shape[-2] == 0:
        return None
    fold = np.max if op == "Max" else np.min
    if y.shape[-2] >= _PER_LANE_STEPS and y.strides[-2] != 4 * y.itemsize:
        return _by_lane(fold, np.maximum if op == "Max" else np.minimum, y)
    out: npt.NDArray[Any] = np.asarray(fold(y, axis=(-2, -1)), np.int32)
    return out


#: :func:`order_free` reduces each lane's steps alone from this many steps per output (with the lanes a strided view;
#: measured: from 64 steps per lane faster, below slower than one reduction over both axes).
_PER_LANE_STEPS = 64
#: ... in blocks of outputs whose packets span about this many bytes (the four passes over a block stay in cache).
_BLOCK_BYTES = 1 << 19


def _by_lane(fold: Any, pick: Any, y: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``fold(y, axis=(-2, -1))`` for the lanes a strided view (a padded packet trimmed to Way4): one reduction over
    both axes runs an inner loop of four lanes per step, so each lane's steps are reduced alone (an inner loop over
    the steps) and the four lanes' results then picked (``pick``: ``np.maximum`` or ``np.minimum``), block by block
    of outputs (the same integers: the first-launch row max's 2M elements 1.6 → 1.0 ms cold)."""
    lead = y.shape[:-2]
    rows = y.reshape(-1, *y.shape[-2:])
    out = np.empty(rows.shape[0], dtype=np.int32)
    step = max(1, _BLOCK_BYTES // max(1, rows.shape[1] * abs(rows.strides[1])))
    for lo in range(0, rows.shape[0], step):
        block, o = rows[lo: lo + step], out[lo: lo + step]
        fold(block[..., 0], axis=-1, out=o)
        for k in range(1, 4):
            pick(o, fold(block[..., k], axis=-1), out=o)
    return out.reshape(lead)


def any_last(x: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """``x.any(axis=-1)``: with ``vector.any-lanes`` on, a C-contiguous last axis of 2, 4 or 8 bools is read as
    one unsigned word per position (non-zero when some lane is True; a bool is one byte, 0 or 1), a view of
    ``x``'s bytes (numpy's reduction over a tiny last axis costs a loop per position: 1 ms over a decode step's
    512 slices × 72 steps × 4 lanes, 5 µs so)."""
    n = x.shape[-1] if x.ndim else 0
    if LANES.on and n in (2, 4, 8) and x.dtype == np.bool_ and x.flags.c_contiguous:
        words: npt.NDArray[np.bool_] = x.view(f"u{n}")[..., 0] != 0
        return words
    return np.asarray(x.any(axis=-1))


def by_steps(x: npt.NDArray[Any], perm: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """``x[:, :, :, perm]`` (Time is axis 3): a view when ``perm`` is every time step in order (one output time
    step, or the steps of each output step consecutive), a gather by index otherwise."""
    if perm.size == x.shape[3] and bool((perm.reshape(-1) == np.arange(perm.size)).all()):
        return x.reshape(*x.shape[:3], *perm.shape, *x.shape[4:])
    return x[:, :, :, perm]
