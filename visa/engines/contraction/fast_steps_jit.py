"""The loop of ``contraction.float-steps`` compiled by numba: the fast path ``contraction.float-steps-jit``
(optional; the ``fast`` extra installs numba, and without it :func:`visa.engines.contraction.fast_steps.tree_block`,
numpy's loop, computes the same bits).

``out[b, m, n] = Σ_s tree_j(a[b, s, m, j] · w[b, s, n, j])`` in the Reducer's order (docs/manual-notes.md, "Issue 23
(i23d)"; L4386–4388, L4408, L4415–4431): for each batch position and step, the step's ``n × j`` weights are
transposed into a ``j × n`` block (in the first-level cache), each row ``m`` of the activation multiplies it; the
tree adds the products of adjacent pairs ``2i``, ``2i + 1`` depth by depth, a row of ``n`` outputs at a time
(independent sums side by side, which the compiler puts in vector lanes: no sum is reordered), and the accumulator
stores the first step's tree output and adds each later one.  Every
operation is an IEEE f32 multiplication or addition: numba compiles it with ``fastmath`` off (no reassociation,
no fused multiply-add, no flush of subnormals), so the bits are numpy's and the reference's.

numba is imported on the first float contraction only (no kernel of integers or reduce-max pays for it), and the
compiled loop is cached on disk (``cache=True``) so that a second process loads it instead of compiling.  Why a
compiler: the numpy loop writes every product to memory and reads it back once per depth of the tree (a kernel's
2^28 products are gigabytes of traffic), where the compiled loop keeps a step's products in registers and the
first-level cache; a BLAS product cannot keep the tree's order.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths

__all__ = ["JIT", "kernel", "available", "compile_loop", "halve", "row_steps", "row_steps_bf16"]

Array = npt.NDArray[Any]
Kernel = Callable[[Array, Array, Array, Array, Array], None]

JIT = fastpaths.register("contraction.float-steps-jit", "contraction.float-steps' loop compiled by numba (the "
                         "optional `fast` extra), fastmath off: the same f32 operations in the same order")


def halve(buf: Array, width: int) -> None:  # pragma: no cover - compiled by numba (inside the loops)
    """The tree's later depths over the ``width`` partial sums (a power of two) in the rows of ``buf``, each
    column a sum of its own: the pairs ``2i``, ``2i + 1`` added into ``i``, depth by depth, until row 0 holds the
    tree's output (L4386–4388).  Called by the compiled loops, which :func:`compile_loop` compiles it into."""
    while width > 1:
        width //= 2
        for i in range(width):
            for n in range(buf.shape[1]):
                buf[i, n] = buf[2 * i, n] + buf[2 * i + 1, n]


def _tree_steps(a: Array, ai: Array, w: Array, wi: Array,
                out: Array) -> None:  # pragma: no cover - compiled by numba
    """The loop numba compiles (module docstring): ``a`` (·, s, m, j), ``w`` (·, s, n, j), ``out`` (b, m, n), f32;
    batch position ``b`` multiplies the activation block ``a[ai[b]]`` by the weight block ``w[wi[b]]`` (positions
    holding the same activations or weights share one block, :mod:`~visa.engines.contraction.fast_classes`,
    :mod:`~visa.engines.contraction.fast_weight_period`).
    With four products or more, the tree's first two depths are computed in registers, ``(p0 + p1) + (p2 + p3)``,
    for two rows ``m`` at once (each weight read once for both); the later depths in the buffers."""
    nb, ns, nm, nj = out.shape[0], a.shape[1], a.shape[2], a.shape[3]
    nn = w.shape[2]
    quarter = max(nj // 4, 1)
    buf = np.empty((quarter, nn), dtype=np.float32)
    buf2 = np.empty((quarter, nn), dtype=np.float32)
    wt = np.empty((nj, nn), dtype=np.float32)
    for b in range(nb):
        ab, wb = ai[b], wi[b]
        for s in range(ns):
            for n in range(nn):
                for j in range(nj):
                    wt[j, n] = w[wb, s, n, j]
            for m0 in range(0, nm, 2):
                rows = min(2, nm - m0)
                for r in range(rows):
                    dst = buf if r == 0 else buf2
                    m = m0 + r
                    if nj == 1:
                        x = a[ab, s, m, 0]
                        for n in range(nn):
                            dst[0, n] = x * wt[0, n]
                    elif nj == 2:
                        x0 = a[ab, s, m, 0]
                        x1 = a[ab, s, m, 1]
                        for n in range(nn):
                            dst[0, n] = x0 * wt[0, n] + x1 * wt[1, n]
                if nj >= 4:
                    if rows == 2:
                        for i in range(quarter):
                            k = 4 * i
                            x0, x1 = a[ab, s, m0, k], a[ab, s, m0, k + 1]
                            x2, x3 = a[ab, s, m0, k + 2], a[ab, s, m0, k + 3]
                            y0, y1 = a[ab, s, m0 + 1, k], a[ab, s, m0 + 1, k + 1]
                            y2, y3 = a[ab, s, m0 + 1, k + 2], a[ab, s, m0 + 1, k + 3]
                            for n in range(nn):
                                w0, w1, w2, w3 = wt[k, n], wt[k + 1, n], wt[k + 2, n], wt[k + 3, n]
                                buf[i, n] = (x0 * w0 + x1 * w1) + (x2 * w2 + x3 * w3)
                                buf2[i, n] = (y0 * w0 + y1 * w1) + (y2 * w2 + y3 * w3)
                    else:
                        for i in range(quarter):
                            k = 4 * i
                            x0, x1 = a[ab, s, m0, k], a[ab, s, m0, k + 1]
                            x2, x3 = a[ab, s, m0, k + 2], a[ab, s, m0, k + 3]
                            for n in range(nn):
                                buf[i, n] = (x0 * wt[k, n] + x1 * wt[k + 1, n]) + (x2 * wt[k + 2, n]
                                                                                  + x3 * wt[k + 3, n])
                    halve(buf, quarter)
                    halve(buf2, quarter)
                for r in range(rows):
                    src = buf if r == 0 else buf2
                    m = m0 + r
                    if s == 0:
                        for n in range(nn):
                            out[b, m, n] = src[0, n]
                    else:
                        for n in range(nn):
                            out[b, m, n] += src[0, n]


def row_steps(a: Array, ai: Array, w: Array, wi: Array,
              out: Array) -> None:  # pragma: no cover - compiled by numba
    """The one-row loop of ``contraction.float-row-jit`` (:mod:`~visa.engines.contraction.fast_row_jit`, whose
    docstring says what it computes), kept in this file beside :func:`halve`, which it calls: numba's disk cache
    knows a loop is stale only from its own file's date, so a loop and the helpers compiled into it share a file.
    ``a`` (·, s, 1, j), ``ai`` (b), ``w`` (·, s, n, j), ``wi`` (b),
    ``out`` (b, 1, n) (as :func:`compile_loop` says)."""
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


def row_steps_bf16(a: Array, ai: Array, w: Array, wi: Array,
                   out: Array) -> None:  # pragma: no cover - compiled by numba
    """:func:`row_steps` on bf16 weights given as their bits (``contraction.float-row-bf16``,
    :mod:`~visa.engines.contraction.fast_row_bf16`, whose docstring says what it computes): ``w`` (·, s, n, j)
    uint16 with any strides (a view of the TRF window, not laid out), each step's ``n × j`` block widened to f32
    in a small buffer (a bf16 is the f32 of its bits shifted left by 16: exact), then the same operations in the
    same order as :func:`row_steps`.  ``a`` (·, s, 1, j) f32, ``ai`` (b), ``wi`` (b), ``out`` (b, 1, n)."""
    nb, ns, nj = out.shape[0], a.shape[1], a.shape[3]
    nn = w.shape[2]
    quarter = max(nj // 4, 1)
    buf = np.empty((quarter, nn), dtype=np.float32)
    bits = np.empty((nj, nn), dtype=np.uint32)  # (the step's block as j × n rows: the lanes over n read a row)
    wf = bits.view(np.float32)
    for b in range(nb):
        ab, wb = ai[b], wi[b]
        for s in range(ns):
            for n in range(nn):
                for j in range(nj):
                    bits[j, n] = np.uint32(w[wb, s, n, j]) << np.uint32(16)
            if nj == 1:
                x = a[ab, s, 0, 0]
                for n in range(nn):
                    buf[0, n] = x * wf[0, n]
            elif nj == 2:
                x0, x1 = a[ab, s, 0, 0], a[ab, s, 0, 1]
                for n in range(nn):
                    buf[0, n] = x0 * wf[0, n] + x1 * wf[1, n]
            else:
                for i in range(quarter):
                    k = 4 * i
                    x0, x1, x2, x3 = a[ab, s, 0, k], a[ab, s, 0, k + 1], a[ab, s, 0, k + 2], a[ab, s, 0, k + 3]
                    w0, w1, w2, w3 = wf[k], wf[k + 1], wf[k + 2], wf[k + 3]
                    for n in range(nn):
                        buf[i, n] = (x0 * w0[n] + x1 * w1[n]) + (x2 * w2[n] + x3 * w3[n])
                halve(buf, quarter)
            if s == 0:
                for n in range(nn):
                    out[b, 0, n] = buf[0, n]
            else:
                for n in range(nn):
                    out[b, 0, n] += buf[0, n]


def compile_loop(loop: Callable[..., None], *, bits_weights: bool = False) -> Kernel | None:
    """``loop(a, ai, w, wi, out)`` (f32 C-ordered ``a`` (·, s, m, j), ``ai`` (b) int64 the activation block of each
    batch position, ``w`` (·, s, n, j), ``wi`` (b) int64 its weight block, ``out`` (b, m, n)) compiled by
    numba with fastmath off and cached on disk, or None when numba is not installed (or cannot load with this
    numpy).  Shared by the compiled loops of :mod:`visa.engines.contraction` (this one and
    :mod:`~visa.engines.contraction.fast_row_jit`).  ``bits_weights``: ``w`` is uint16 (bf16 bits) with any
    strides (:func:`row_steps_bf16`)."""
    try:
        numba = importlib.import_module("numba")
    except ImportError:
        return None
    f32 = numba.float32
    w_type = numba.types.Array(numba.uint16, 4, "A", readonly=True) if bits_weights else f32[:, :, :, ::1]
    signature = numba.void(f32[:, :, :, ::1], numba.int64[::1], w_type, numba.int64[::1], f32[:, :, ::1])
    options = {"nogil": True, "fastmath": False, "boundscheck": False}
    # the loop sees the helpers it calls compiled (numba is not imported before this: the names in the loop's
    # module are the plain functions)
    helpers = {"halve": numba.njit(**options)(halve)}
    func = types.FunctionType(loop.__code__, {**loop.__globals__, **helpers}, loop.__name__, loop.__defaults__,
                              loop.__closure__)
    try:
        compiled: Kernel = numba.njit(signature, cache=True, **options)(func)
    except RuntimeError:  # (no writable cache directory, e.g. a read-only install: compiled each process)
        compiled = numba.njit(signature, cache=False, **options)(func)
    return compiled


@cache
def _compiled() -> Kernel | None:
    """The compiled loop, or None when numba is not installed (or cannot load with this numpy)."""
    return compile_loop(_tree_steps)


def available() -> bool:
    """Whether numba is installed and loads (the compiled loop exists)."""
    return _compiled() is not None


def kernel() -> Kernel | None:
    """The compiled loop when this path is on and numba is installed, else None (numpy's loop then)."""
    return _compiled() if JIT.on else None
