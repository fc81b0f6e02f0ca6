"""One activation row without the transpose: the fast path ``contraction.float-row-jit`` beside the compiled loop
of ``contraction.float-steps-jit`` (:mod:`visa.engines.contraction.fast_steps_jit`), whose bits it computes.

A GEMV (one row ``m`` of activations, e.g. a decode step's projection) gives that loop one row to multiply each
step's weights by, so its transpose of the step's ``n × j`` weights into a ``j × n`` block (a scalar copy as long
as the products) costs as much as the products themselves.  This loop reads the weights where they are,
``w[b, s, n, j]``: for each group of four products ``4i … 4i + 3`` it computes the tree's first two depths,
``(x₀·w₀ + x₁·w₁) + (x₂·w₂ + x₃·w₃)``, for every ``n`` side by side (the compiler loads the weights of the lanes
with a stride), then the later depths pairwise (``2i``, ``2i + 1``) and the accumulator's addition in ascending
step order — the same f32 operations in the same order as the Reducer (L4386–4388, L4408, L4415–4431;
docs/manual-notes.md "Issue 23 (i23d)"), so the same bits, compiled with fastmath off.  Measured on the streamed
GEMV's shape (124 × 16 steps × 32 × 32, one thread): 0.48 → 0.23 ns a product.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from visa import fastpaths
from visa.engines.contraction.fast_steps_jit import Array, Kernel, compile_loop, halve

__all__ = ["ROW", "kernel"]

ROW = fastpaths.register("contraction.float-row-jit", "one activation row: the compiled loop reads each step's "
                         "weights in place (lanes over n, strided), not transposed into a block first")


def _row_steps(a: Array, ai: Array, w: Array, wi: Array,
               out: Array) -> None:  # pragma: no cover - compiled by numba
    """The loop numba compiles (module docstring): ``a`` (·, s, 1, j), ``ai`` (b), ``w`` (·, s, n, j), ``wi`` (b),
    ``out`` (b, 1, n) (as :func:`~visa.engines.contraction.fast_steps_jit.compile_loop` says)."""
    nb, ns, nj = out.shape[0], a.shape[1], a.shape[3]
    nn = w.shape[2]
    quarter = max(nj // 4, 1)
    buf = np.empty((quarter, nn), dtype=np.float32)
    for b in range(nb):
        ab, wb = ai[b], wi[b]
        for s in range(ns):
            if nj == 1:
                x = a[ab, s, 0, 0]
                for n in range(nn):
                    buf[0, n] = x * w[wb, s, n, 0]
            elif nj == 2:
                x0, x1 = a[ab, s, 0, 0], a[ab, s, 0, 1]
                for n in range(nn):
                    buf[0, n] = x0 * w[wb, s, n, 0] + x1 * w[wb, s, n, 1]
            else:
                for i in range(quarter):
                    k = 4 * i
                    x0, x1, x2, x3 = a[ab, s, 0, k], a[ab, s, 0, k + 1], a[ab, s, 0, k + 2], a[ab, s, 0, k + 3]
                    for n in range(nn):
                        buf[i, n] = (x0 * w[wb, s, n, k] + x1 * w[wb, s, n, k + 1]) + (x2 * w[wb, s, n, k + 2]
                                                                                    + x3 * w[wb, s, n, k + 3])
                halve(buf, quarter)
            if s == 0:
                for n in range(nn):
                    out[b, 0, n] = buf[0, n]
            else:
                for n in range(nn):
                    out[b, 0, n] += buf[0, n]


@cache
def _compiled() -> Kernel | None:
    return compile_loop(_row_steps)


def kernel() -> Kernel | None:
    """The compiled one-row loop when this path is on and numba is installed, else None."""
    return _compiled() if ROW.on else None
