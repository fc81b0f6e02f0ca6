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

from visa import fastpaths
from visa.engines.contraction.fast_steps_jit import Kernel, compile_loop, row_steps

__all__ = ["ROW", "kernel"]

ROW = fastpaths.register("contraction.float-row-jit", "one activation row: the compiled loop reads each step's "
                         "weights in place (lanes over n, strided), not transposed into a block first")


@cache
def _compiled() -> Kernel | None:
    return compile_loop(row_steps)


def kernel() -> Kernel | None:
    """The compiled one-row loop when this path is on and numba is installed, else None."""
    return _compiled() if ROW.on else None
