"""The whole tree of 32 products in registers: the fast path ``contraction.float-tree32`` beside the compiled loop
of ``contraction.float-steps-jit`` (:mod:`visa.engines.contraction.fast_steps_jit`), whose bits it computes.

A bf16 contraction's tree adds 32 products (one 64-byte packet, L4386–4388).  The general compiled loop computes
the tree's first two depths in registers and writes each group of four to a buffer, then adds the buffer's
entries depth by depth, reading and writing it three more times; for 32 products this loop writes the whole tree
out, ``((g₀ + g₁) + (g₂ + g₃)) + ((g₄ + g₅) + (g₆ + g₇))`` with ``gᵢ = (x₄ᵢ·w₄ᵢ + x₄ᵢ₊₁·w₄ᵢ₊₁) + (x₄ᵢ₊₂·w₄ᵢ₊₂ +
x₄ᵢ₊₃·w₄ᵢ₊₃)`` — the same adjacent pairs depth by depth — for a row of ``n`` outputs side by side (the compiler
puts them in vector lanes; no sum is reordered, fastmath off), and adds it to the accumulator in ascending step
order (L4408, L4415–4431): the same f32 operations in the same order, so the same bits, with no buffer traffic.
Measured on the tiled GEMM's shape (32 × 32 steps × 32 × 32 × 32, one thread, CPU time): 0.116 → 0.042 ns a
product.  The layout gives this loop each step's weights as ``j × n`` rows (the transpose done in the f32
conversion's one pass, once per distinct block with ``contraction.float-weight-period``), where the general loop
transposes its ``n × j`` block at every batch position and step (the GEMM example's shape, one thread, CPU time:
13.1 → 9.4 ms for its 2^28 products, numpy's f32 product of the same operands 5.6 ms).
"""

from __future__ import annotations

from functools import cache

from visa import fastpaths
from visa.engines.contraction.fast_steps_jit import Array, Kernel, compile_loop

__all__ = ["TREE32", "kernel"]

TREE32 = fastpaths.register("contraction.float-tree32", "a tree of 32 products computed whole in registers by the "
                            "compiled loop (the same pairs and order), not through a buffer depth by depth")


def _tree32_steps(a: Array, ai: Array, w: Array, wi: Array,
                  out: Array) -> None:  # pragma: no cover - compiled by numba
    """The loop numba compiles (module docstring): ``a`` (·, s, m, 32), ``ai`` (b), ``w`` (·, s, 32, n) — each
    step's weights laid out as ``j × n`` rows (:func:`~visa.engines.contraction.fast_steps.contract`) —, ``wi``
    (b), ``out`` (b, m, n) (as :func:`~visa.engines.contraction.fast_steps_jit.compile_loop` says, but for the
    axes of ``w``)."""
    nb, ns, nm = out.shape[0], a.shape[1], a.shape[2]
    nn = w.shape[3]
    for b in range(nb):
        ab, wb = ai[b], wi[b]
        for s in range(ns):
            wt = w[wb, s]
            for m in range(nm):
                x = a[ab, s, m]
                o = out[b, m]
                for n in range(nn):
                    g0 = (x[0] * wt[0, n] + x[1] * wt[1, n]) + (x[2] * wt[2, n] + x[3] * wt[3, n])
                    g1 = (x[4] * wt[4, n] + x[5] * wt[5, n]) + (x[6] * wt[6, n] + x[7] * wt[7, n])
                    g2 = (x[8] * wt[8, n] + x[9] * wt[9, n]) + (x[10] * wt[10, n] + x[11] * wt[11, n])
                    g3 = (x[12] * wt[12, n] + x[13] * wt[13, n]) + (x[14] * wt[14, n] + x[15] * wt[15, n])
                    g4 = (x[16] * wt[16, n] + x[17] * wt[17, n]) + (x[18] * wt[18, n] + x[19] * wt[19, n])
                    g5 = (x[20] * wt[20, n] + x[21] * wt[21, n]) + (x[22] * wt[22, n] + x[23] * wt[23, n])
                    g6 = (x[24] * wt[24, n] + x[25] * wt[25, n]) + (x[26] * wt[26, n] + x[27] * wt[27, n])
                    g7 = (x[28] * wt[28, n] + x[29] * wt[29, n]) + (x[30] * wt[30, n] + x[31] * wt[31, n])
                    t = ((g0 + g1) + (g2 + g3)) + ((g4 + g5) + (g6 + g7))
                    if s == 0:
                        o[n] = t  # (the first flit a slot receives is stored, L4431)
                    else:
                        o[n] += t


@cache
def _compiled() -> Kernel | None:
    return compile_loop(_tree32_steps)


def kernel(nj: int) -> Kernel | None:
    """The compiled 32-product loop when this path is on, the tree has 32 products and numba is installed, else
    None."""
    return _compiled() if TREE32.on and nj == 32 else None
