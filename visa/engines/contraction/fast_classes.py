"""Batch positions holding the same activations laid out once: the fast path ``contraction.float-act-classes``
beside the f32 layout of ``contraction.float-steps`` (:func:`visa.engines.contraction.fast_steps.contract`), whose
bits it computes.

A tiled GEMM broadcasts each row block of A to every slice computing with it (the tiled bf16 GEMM 1024³: 512
slices, 32 distinct activation blocks, each in 16 slices' DM), and the layout copied and converted each slice's
block.  The stream says which slices read the same bytes (replica labels, :mod:`visa.memory.replicas`: equal
non-negative labels ⇒ equal bytes; ``fetch.replica-labels``): one block per class is laid out, and the compiled
loop (:mod:`~visa.engines.contraction.fast_steps_jit`, :mod:`~visa.engines.contraction.fast_row_jit`) multiplies
each position's weights by its class's block — the same operands, so the same products and sums in the same order
(L4386–4388, L4408, L4415–4431).  With ``VISA_VERIFY_REPLICAS=1`` (the test suite) the claim is checked against
the bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.memory.replicas import Labels, verifying

__all__ = ["CLASSES", "classes"]

Array = npt.NDArray[Any]

CLASSES = fastpaths.register("contraction.float-act-classes", "batch positions whose activations are replicas "
                             "(the stream's labels) share one laid-out block in the compiled float loop")


def classes(labels: Labels | None, values: Array, axis: int) -> tuple[Array, Array] | None:
    """``(first, inverse)``: the positions along ``axis`` of ``values`` (one per label, ``labels`` over that axis)
    that represent each class of equal activations, and each position's class; None when this path is off, there
    are no labels or every position is its own class."""
    if not CLASSES.on or labels is None or labels.size != values.shape[axis]:
        return None
    keys = np.where(labels >= 0, labels, -1 - np.arange(labels.size, dtype=np.int64))  # (negative: unique)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    if len(first) == labels.size:
        return None
    if verifying():
        at = (slice(None),) * axis
        reps = values[at + (first,)][at + (inverse.reshape(-1),)]
        bits = np.dtype(f"u{values.dtype.itemsize}")
        assert np.array_equal(np.ascontiguousarray(reps).view(bits), np.ascontiguousarray(values).view(bits)), (
            "replica labels claim activations the bytes do not repeat")
    return first.astype(np.int64), inverse.reshape(-1).astype(np.int64)
