"""The 32-product tree over a group of weight blocks side by side: the fast path ``contraction.float-tree32-wide``
beside the compiled loop of ``contraction.float-tree32`` (:mod:`visa.engines.contraction.fast_tree32`), whose bits it
computes.

The 32-product loop multiplies one activation row by one weight block of ``n`` columns per batch position and step;
with the GEMM example's ``n = 32`` its vectorised column loop runs two iterations per row, after broadcasting the
row's 32 activations, so the set-up is as long as the work.  When the weights repeat with a period (one laid-out
block per distinct weight, ``contraction.float-weight-period``) and ``g`` consecutive batch positions multiply the
same activation block by ``g`` consecutive weight blocks (the GEMM example: the 16 slices of a row block of A, each
with its own column block of B), the ``g`` blocks are laid out side by side as one block of ``g · n`` columns and
the row is multiplied by all of them in one column loop.  Each output is the same tree of the same 32 products,
``((g₀ + g₁) + (g₂ + g₃)) + ((g₄ + g₅) + (g₆ + g₇))`` (L4386–4388), accumulated over the steps in ascending order
(L4408, L4415–4431), in f32 with fastmath off: the same bits; only which outputs share a loop changes.  Measured on
the GEMM example's operands (one thread, CPU time): 7.7 → 6.0 ms for its 2^28 products.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from visa import fastpaths
from visa.engines.contraction.fast_steps_jit import Array, Kernel, compile_loop

__all__ = ["WIDE", "kernel", "group", "layout", "narrow", "full_runs"]

WIDE = fastpaths.register("contraction.float-tree32-wide", "the 32-product loop over g weight blocks side by side "
                          "(consecutive positions, one activation block), one column loop of g·n, not g of n")

#: Widest group of columns (a step's ``32 × g·n`` weights, 32 KiB, stay in the first-level cache).
MAX_COLUMNS = 256


def _wide_steps(a: Array, ai: Array, w: Array, wi: Array, out: Array) -> None:  # pragma: no cover - numba
    """The loop numba compiles: ``a`` (·, s, m, 32), ``ai`` (b), ``w`` (groups, s, 32, g·n) — group ``k`` holds the
    weight blocks ``k·g … k·g + g - 1`` side by side (:func:`layout`) —, ``wi`` (b) each position's weight block,
    ``out`` (b, m, n).  Every aligned run of ``g`` positions has one activation block and the weight blocks of one
    group in order (:func:`full_runs`)."""
    nb, ns, nm, nn = out.shape[0], a.shape[1], a.shape[2], out.shape[2]
    width = w.shape[3]
    g = width // nn
    tmp = np.empty((nm, width), dtype=np.float32)
    for b0 in range(0, nb, g):
        ab, grp = ai[b0], wi[b0] // g
        for s in range(ns):
            wt = w[grp, s]
            for m in range(nm):
                x = a[ab, s, m]
                o = tmp[m]
                for c in range(width):
                    g0 = (x[0] * wt[0, c] + x[1] * wt[1, c]) + (x[2] * wt[2, c] + x[3] * wt[3, c])
                    g1 = (x[4] * wt[4, c] + x[5] * wt[5, c]) + (x[6] * wt[6, c] + x[7] * wt[7, c])
                    g2 = (x[8] * wt[8, c] + x[9] * wt[9, c]) + (x[10] * wt[10, c] + x[11] * wt[11, c])
                    g3 = (x[12] * wt[12, c] + x[13] * wt[13, c]) + (x[14] * wt[14, c] + x[15] * wt[15, c])
                    g4 = (x[16] * wt[16, c] + x[17] * wt[17, c]) + (x[18] * wt[18, c] + x[19] * wt[19, c])
                    g5 = (x[20] * wt[20, c] + x[21] * wt[21, c]) + (x[22] * wt[22, c] + x[23] * wt[23, c])
                    g6 = (x[24] * wt[24, c] + x[25] * wt[25, c]) + (x[26] * wt[26, c] + x[27] * wt[27, c])
                    g7 = (x[28] * wt[28, c] + x[29] * wt[29, c]) + (x[30] * wt[30, c] + x[31] * wt[31, c])
                    t = ((g0 + g1) + (g2 + g3)) + ((g4 + g5) + (g6 + g7))
                    if s == 0:
                        o[c] = t  # (the first flit a slot receives is stored, L4431)
                    else:
                        o[c] += t
        for q in range(g):
            for m in range(nm):
                for n in range(nn):
                    out[b0 + q, m, n] = tmp[m, q * nn + n]


@cache
def _compiled() -> Kernel | None:
    return compile_loop(_wide_steps)


def kernel() -> Kernel | None:
    """The compiled loop when this path is on and numba is installed, else None."""
    return _compiled() if WIDE.on else None


def group(blocks: int, nn: int) -> int:
    """Weight blocks laid side by side: the most (at most 8, at most :data:`MAX_COLUMNS` columns) that divides
    ``blocks``; 1 when no group of two or more does (the path does not apply)."""
    for g in (8, 4, 2):
        if blocks % g == 0 and g * nn <= MAX_COLUMNS:
            return g
    return 1


def layout(laid: Array, g: int) -> Array:
    """The weights ``laid`` (blocks, s, n, j) as ``(blocks / g, s, j, g · n)`` rows (one C-ordered copy): group
    ``k`` holds blocks ``k·g … k·g + g - 1`` side by side, each step's ``j × n`` rows as the 32-product loop reads."""
    nb, ns, nn, nj = laid.shape
    view = laid.reshape(nb // g, g, ns, nn, nj).transpose(0, 2, 4, 1, 3)
    return np.ascontiguousarray(view).reshape(nb // g, ns, nj, g * nn)


def narrow(wide: Array, g: int) -> Array:
    """:func:`layout`'s groups back as one ``(blocks, s, j, n)`` block per weight (a copy), what the 32-product
    loop reads."""
    ng, ns, nj, width = wide.shape
    view = wide.reshape(ng, ns, nj, g, width // g).transpose(0, 3, 1, 2, 4)
    return np.ascontiguousarray(view).reshape(ng * g, ns, nj, width // g)


def full_runs(ai: Array, wi: Array, g: int) -> bool:
    """Is every aligned run of ``g`` batch entries one activation block (``ai``) times the ``g`` weight blocks of
    one group in order (``wi``: ``k·g``, …, ``k·g + g - 1``)?"""
    if g < 2 or ai.size % g:
        return False
    a2, w2 = ai.reshape(-1, g), wi.reshape(-1, g)
    return bool(np.all(a2 == a2[:, :1]) and np.all(w2[:, 0] % g == 0)
                and np.all(w2 == w2[:, :1] + np.arange(g, dtype=w2.dtype)))
