"""Float reduce-add over strided views of the operands, one block of reduced Time steps at a time: the fast path
``contraction.float-steps`` beside :func:`visa.engines.contraction.reference.run`, whose bits it computes.

A float sum rounds at every addition, so the Reducer's order is part of the result (docs/manual-notes.md,
"Issue 23 (i23d)"): the tree adds adjacent pairs of the ``2^n`` products depth by depth (L4386–4388) and the
accumulator adds the tree's f32 outputs to its slots in the order they arrive, ascending Time (L4408,
L4415–4431).  The reference materialises every step's operands (a gather of the TRF window per step, the
activation repeated over the tiling steps); this path takes the operands as :func:`visa.engines.contraction.
compute._run` lays them out — the activation over its own Time digits, the weights as a strided view of the
window over theirs, broadcasts never materialised — and multiplies them block by block of the reduced digits,
in ascending order.  Every product is exact in f32 (bf16 and fp8 significands), every partial sum is the one
the reference adds in the same order: the same bits (``tests/engines/test_fast_compute.py`` compares them on
random configurations, and the differential fuzzer whole kernels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.contraction.reference import tree

__all__ = ["STEPS", "contract"]

Array = npt.NDArray[Any]

STEPS = fastpaths.register("contraction.float-steps", "float reduce-add over strided views of the operands, a block "
                           "of reduced Time steps at a time, instead of the reference's gathered steps")

#: Products computed at once (a block of reduced steps; bounds the working memory).
_BLOCK_ELEMENTS = 1 << 22


def _aligned(x: Array, labels: Sequence[str], order: Sequence[str]) -> Array:
    """``x`` (axes ``labels``) as a view over ``order``: its axes moved there, size-1 axes for labels it lacks."""
    own = [lab for lab in order if lab in labels]
    view = x.transpose([labels.index(lab) for lab in own])
    return view.reshape([x.shape[labels.index(lab)] if lab in labels else 1 for lab in order])


class _Buffers:
    """Work arrays reused from block to block (fresh ones would cost the operating system's page faults each
    time): the products, then each depth of the tree."""

    def __init__(self) -> None:
        self.arrays: dict[tuple[int, tuple[int, ...]], Array] = {}

    def _take(self, level: int, shape: tuple[int, ...]) -> Array:
        key = (level, shape)
        if key not in self.arrays:
            self.arrays[key] = np.empty(shape, dtype=np.float32)
        return self.arrays[key]

    def tree(self, a: Array, w: Array) -> Array:
        """:func:`~visa.engines.contraction.reference.tree` of the products ``a · w`` (broadcast; f32): the same
        adjacent pairs depth by depth, computed into the work arrays."""
        shape = np.broadcast_shapes(a.shape, w.shape)
        x = np.multiply(a, w, out=self._take(0, shape))
        level = 1
        while x.shape[-1] > 1:
            pairs = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
            x = np.add(pairs[..., 0], pairs[..., 1], out=self._take(level, pairs.shape[:-1]))
            level += 1
        return x[..., 0]


def contract(a: Array, la: Sequence[str], w: Array, lw: Sequence[str], lo: Sequence[str], sizes: dict[str, int],
             reduced: Sequence[str]) -> Array:
    """``Σ a · w`` over ``reduced`` in the Reducer's order, as f32 over the labels ``lo``: ``j`` (the tree's
    ``2^n`` products) by :func:`~visa.engines.contraction.reference.tree`, then the other reduced labels (Time
    digits, outermost first: ascending Time) by :func:`~visa.engines.contraction.reference.in_order`.  ``a``
    and ``w`` are the operands over ``la`` / ``lw`` (any float type whose values f32 holds; a label an operand
    lacks is a broadcast of it)."""
    steps = [lab for lab in reduced if lab != "j"]
    order = [*steps, *lo, "j"]
    av = _aligned(np.asarray(a, dtype=np.float32), list(la), order)
    wv = _aligned(np.asarray(w, dtype=np.float32), list(lw), order)
    out_shape = [sizes[lab] for lab in lo]
    if not steps:
        res = tree(av * wv)
        return np.broadcast_to(res, out_shape)
    outer = [sizes[lab] for lab in steps[:-1]]
    last = sizes[steps[-1]]
    lead = [max(p, q) for p, q in zip(av.shape[len(steps):], wv.shape[len(steps):], strict=True)]
    block = max(1, min(last, _BLOCK_ELEMENTS // max(1, math.prod(lead))))
    work = _Buffers()
    acc: Array | None = None
    for index in np.ndindex(*outer):
        pick_a = tuple(i if av.shape[k] > 1 else 0 for k, i in enumerate(index))
        pick_w = tuple(i if wv.shape[k] > 1 else 0 for k, i in enumerate(index))
        a1, w1 = av[pick_a], wv[pick_w]  # (last step digit, *lo, j)
        for k0 in range(0, last, block):
            k1 = min(last, k0 + block)
            sa = a1[k0:k1] if a1.shape[0] > 1 else a1
            sw = w1[k0:k1] if w1.shape[0] > 1 else w1
            c = work.tree(sa, sw)  # (block or 1, *lo): the tree's f32 outputs of these steps
            if acc is None:
                acc = c[0].copy()  # (the first flit a slot receives is stored, L4431)
                first = 1
            else:
                first = 0
            for k in range(first, k1 - k0):  # (the accumulator: each step added in arrival order)
                acc += c[k if c.shape[0] > 1 else 0]
    assert acc is not None
    return np.broadcast_to(acc, out_shape)
