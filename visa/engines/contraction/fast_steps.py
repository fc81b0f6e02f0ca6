"""Float reduce-add in the Reducer's order over the operands laid out as matrices, one block of batch positions at
a time: the fast path ``contraction.float-steps`` beside :func:`visa.engines.contraction.reference.run`, whose bits
it computes.

A float sum rounds at every addition, so the Reducer's order is part of the result (docs/manual-notes.md,
"Issue 23 (i23d)"): the tree adds adjacent pairs of the ``2^n`` products depth by depth (L4386–4388) and the
accumulator adds the tree's f32 outputs to its slots in the order they arrive, ascending Time (L4408,
L4415–4431).  The reference materialises every step's operands (a gather of the TRF window per step, the
activation repeated over the tiling steps); this path takes the operands as :func:`visa.engines.contraction.
compute._run` lays them out and writes them, a block of batch positions at a time, as ``A[b, s, m, j]`` and
``W[b, s, n, j]`` (``b`` the labels both operands have, ``s`` the reduced Time steps in ascending order, ``m`` and
``n`` the output labels of one operand only, ``j`` the tree's products; a label an operand lacks is a broadcast of
it, an output label neither has is broadcast at the end; ``m`` and ``n`` in their operand's memory order, so that
the copy reads runs of ``j``).  Then for each step ``s`` the products ``A[b, s, m, j] · W[b, s, n, j]``, the tree
over ``j`` (pairs ``2i``, ``2i + 1``, rows of ``n`` at a time) and the accumulator's addition follow the
reference's order exactly: by numpy on cache-sized blocks here, or by the compiled loop of
``contraction.float-steps-jit`` (:mod:`visa.engines.contraction.fast_steps_jit`) when numba is installed.  Every
product and every sum is the same f32 operation as the reference's: the same bits (every NaN the one quiet NaN,
:func:`~visa.engines.contraction.reference.one_nan`) (``tests/engines/
test_fast_steps.py`` compares both loops with the order written out by brute force on random configurations and
poisoned values, ``tests/engines/test_fast_compute.py`` the engine with the reference, and the differential
fuzzer whole kernels).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.contraction import (
    fast_classes,
    fast_row_bf16,
    fast_row_jit,
    fast_steps_jit,
    fast_tree32,
    fast_tree32_dp,
    fast_tree32_wide,
    fast_weight_period,
)
from visa.engines.contraction.blas import parallel_pieces
from visa.engines.contraction.reference import one_nan
from visa.memory.replicas import Labels

__all__ = ["STEPS", "contract", "tree_block"]

Array = npt.NDArray[Any]

_BF16 = np.dtype(ml_dtypes.bfloat16)

STEPS = fastpaths.register("contraction.float-steps", "float reduce-add over the operands laid out as matrices, a "
                           "block of batch positions at a time, instead of the reference's gathered steps")

#: Elements of the matrix operands laid out at once (one block of batch positions; bounds the working memory).
_LAYOUT_ELEMENTS = 1 << 21
#: Products computed at once by numpy (one step of a block of batch positions: stays in the second-level cache).
_PRODUCT_ELEMENTS = 1 << 16


def _aligned(x: Array, labels: Sequence[str], order: Sequence[str]) -> Array:
    """``x`` (axes ``labels``) as a view over ``order``: its axes moved there, size-1 axes for labels it lacks."""
    own = [lab for lab in order if lab in labels]
    view = x.transpose([labels.index(lab) for lab in own])
    return view.reshape([x.shape[labels.index(lab)] if lab in labels else 1 for lab in order])


def _laid_out(x: Array, axes: list[int], shape: list[int], full: list[int],
              dtype: type[np.generic] = np.float32) -> Array:
    """The aligned view ``x`` with its axes ``axes`` first-to-last (its other axes have size 1), broadcast to
    ``full`` (their sizes), as a C-ordered array of ``dtype`` (float32, or ``x``'s own type) and of ``shape`` (one
    pass: transpose, broadcast and conversion)."""
    kept = sorted(axes)
    picked = x[tuple(slice(None) if k in axes else 0 for k in range(x.ndim))]
    view = np.broadcast_to(picked.transpose([kept.index(k) for k in axes]), full)
    out = np.ascontiguousarray(view, dtype=dtype).reshape(shape)
    return out if out.flags.writeable else out.copy()  # (an f32 x already laid out stays a read-only view: the
    # compiled loops' signatures take writeable arrays)


def tree_block(a: Array, w: Array, out: Array) -> None:
    """numpy's loop of :func:`contract`: ``out[b, m, n] = Σ_s tree_j(a[b, s, m, j] · w[b, s, n, j])`` (f32 C-ordered
    arrays), the tree's adjacent pairs depth by depth and the steps in ascending order, each addition rounded to
    f32 — the reference's operations in its order, on blocks of batch positions that stay in cache."""
    nb, ns, nm, nj = a.shape
    nn = w.shape[2]
    per_b = max(1, nm * nj * nn)
    block = max(1, min(nb, _PRODUCT_ELEMENTS // per_b))
    for b0 in range(0, nb, block):
        b1 = min(nb, b0 + block)
        prod = np.empty((b1 - b0, nm, nj, nn), dtype=np.float32)
        levels = [prod[:, :, : max(1, nj >> d)] for d in range(1, max(1, nj.bit_length()))]
        acc = out[b0:b1]
        for s in range(ns):
            np.multiply(a[b0:b1, s, :, :, None], w[b0:b1, s, None].transpose(0, 1, 3, 2), out=prod)
            x = prod
            for level in levels:  # (the tree: pairs 2i, 2i + 1 into i, in place, halving the count)
                if x.shape[2] == 1:
                    break
                np.add(x[:, :, 0::2], x[:, :, 1::2], out=level)
                x = level
            if s == 0:
                acc[...] = x[:, :, 0]  # (the first flit a slot receives is stored, L4431)
            else:
                acc += x[:, :, 0]


def contract(a: Array, la: Sequence[str], w: Array, lw: Sequence[str], lo: Sequence[str], sizes: dict[str, int],
             reduced: Sequence[str], a_labels: Labels | None = None, w_period: int = 0) -> Array:
    """``Σ a · w`` over ``reduced`` in the Reducer's order, as f32 over the labels ``lo``: ``j`` (the tree's
    ``2^n`` products) by :func:`~visa.engines.contraction.reference.tree`, then the other reduced labels (Time
    digits, outermost first: ascending Time) by :func:`~visa.engines.contraction.reference.in_order`.  ``a``
    and ``w`` are the operands over ``la`` / ``lw`` (any float type whose values f32 holds; a label an operand
    lacks is a broadcast of it).  ``a_labels``: the replica labels of the activation's positions along ``b``
    (:mod:`~visa.engines.contraction.fast_classes`), when the stream has them.  ``w_period``: ``w``'s axis ``b``
    holds the weights of the first ``w_period`` batch positions only, and position ``b`` reads ``b mod w_period``
    (:class:`~visa.engines.contraction.compute.TrfWindow` ``period``; 0: ``w`` holds every position)."""
    steps = [lab for lab in reduced if lab != "j"]
    order = [*steps, *lo, "j"]
    av = _aligned(np.asarray(a), list(la), order)
    wv = _aligned(np.asarray(w), list(lw), order)
    out_shape = [sizes[lab] for lab in lo]
    pos = {lab: k for k, lab in enumerate(order)}
    jit = fast_steps_jit.kernel()
    if w_period and not (jit is not None and fast_weight_period.PERIOD.on and lo[:1] == ["b"]
                             and av.shape[pos["b"]] > 1 and wv.shape[pos["b"]] == w_period):
        wv, w_period = fast_weight_period.expand(wv, pos["b"], sizes["b"], w_period), 0  # (the repeats copied)
    w_sizes = [sizes["b"] if w_period and k == pos.get("b") else n for k, n in enumerate(wv.shape)]
    bb = [lab for lab in lo if av.shape[pos[lab]] > 1 and w_sizes[pos[lab]] > 1]
    # (each operand's own labels in its memory order, outermost first: its copy reads runs of j)
    mm = sorted((lab for lab in lo if av.shape[pos[lab]] > 1 and w_sizes[pos[lab]] == 1),
                key=lambda lab: -abs(av.strides[pos[lab]]))
    nn = sorted((lab for lab in lo if av.shape[pos[lab]] == 1 and w_sizes[pos[lab]] > 1),
                key=lambda lab: -abs(wv.strides[pos[lab]]))
    nb, ns, nj = (math.prod(sizes[lab] for lab in bb), math.prod(sizes[lab] for lab in steps), sizes["j"])
    nm, n_n = math.prod(sizes[lab] for lab in mm), math.prod(sizes[lab] for lab in nn)
    res = np.empty((nb, nm, n_n), dtype=np.float32)
    if res.size == 0 or math.prod(out_shape) == 0:
        return np.zeros(out_shape, dtype=np.float32)
    assert ns > 0, "a float contraction over no steps"  # (no plan has an empty Time digit)
    bsz = [sizes[lab] for lab in bb]
    ssz = [sizes[lab] for lab in steps]
    a_axes = [pos[lab] for lab in [*bb, *steps, *mm, "j"]]
    tree32 = fast_tree32.kernel(nj) if jit is not None else None
    bits = None  # (one activation row on bf16 weights: the window's bits read in place, fast_row_bf16)
    if jit is not None and nm == 1:  # (one activation row: the weights read in place, not transposed)
        bits = fast_row_bf16.kernel() if fast_row_jit.kernel() is not None and not w_period else None
        jit = fast_row_jit.kernel() or tree32 or jit
    elif jit is not None:  # (a tree of 32 products: whole in registers)
        jit = tree32 or jit
    w_axes = [pos[lab] for lab in [*bb, *steps, *nn, "j"]]
    w_nn = [*(sizes[lab] for lab in nn), nj]

    def weights(view: Array, positions: list[int]) -> Array:
        # the weights' block of each step as (n, j), or as (j, n) rows for the 32-product loop (which reads rows
        # of n): transposed as f32 after the copy (the view's j is its contiguous axis, n's axes are small and far
        # apart: transposing in the copy was 3x slower on the GEMM example's weights)
        laid = _laid_out(view, w_axes, [math.prod(positions), ns, n_n, nj], [*positions, *ssz, *w_nn])
        return np.ascontiguousarray(laid.transpose(0, 1, 3, 2)) if jit is not None and jit is tree32 else laid
    # only the batch's first label is cut in blocks (the layout of a block is then one view of each operand)
    first = bsz[0] if bsz else 1
    rest = nb // first
    per = max(1, rest * ns * nj * (nm + n_n))
    piece = max(1, min(-(-first // 2), _LAYOUT_ELEMENTS // per))
    # (weights repeating every w_period positions: the distinct blocks laid out once, fast_weight_period; with
    # contraction.float-tree32-wide, in groups of blocks side by side for the positions that read them in order)
    # (only where positions can share an activation block: replica labels on the batch's first axis; without
    # them every position reads its own block, no run forms, and the wide layout would be made then narrowed)
    wide = (fast_tree32_wide.kernel() if w_period and jit is not None and jit is tree32 and not bsz[1:]
            and a_labels is not None and bb[:1] == ["b"] else None)
    g = fast_tree32_wide.group(w_period, n_n) if wide is not None else 1
    # (bf16 operands: the tree's first depth by the CPU's pair dot product on their bits, contraction.float-tree32-
    # bf16dp, where the exponents allow it; the f32 layouts then made only for pieces that need them)
    dp = (fast_tree32_dp.kernel() if jit is not None and jit is tree32 and g * n_n % fast_tree32_dp.LANES == 0
          and av.dtype == _BF16 and wv.dtype == _BF16 else None)

    def pairs(view: Array, positions: list[int], group: int) -> tuple[Array, tuple[int, int] | None]:
        # the weights' bf16 bits as the instruction's pairs (groups of `group` blocks side by side) and their
        # exponents
        bits16 = _laid_out(view.view(np.uint16), w_axes, [math.prod(positions), ns, n_n, nj],
                           [*positions, *ssz, *w_nn], np.uint16)
        laid = fast_tree32_dp.layout(bits16, group)
        return laid, fast_tree32_dp.exponent_range(laid.view(np.uint16))

    w_pairs, w_range = pairs(wv, [w_period, *bsz[1:]], g) if dp is not None and w_period else (None, None)
    if w_pairs is not None and w_range is None:
        dp = w_pairs = None
    laid_once: list[Array] = []  # (the f32 weight groups, or blocks, laid out once: made once, when needed)
    lock = threading.RLock()

    def once_f32() -> Array:
        with lock:
            if not laid_once:
                laid_once.append(fast_tree32_wide.layout(
                    _laid_out(wv, w_axes, [w_period, ns, n_n, nj], [w_period, *ssz, *w_nn]), g) if g > 1
                    else weights(wv, [w_period, *bsz[1:]]))
            return laid_once[0]

    if w_period and w_pairs is None:
        once_f32()
    if g > 1:  # (pieces of whole runs; the weights are laid out once, so a piece's own layout is its activations')
        piece = max(1, min(-(-first // 2), _LAYOUT_ELEMENTS // max(1, rest * ns * nj * nm)))
        piece = max(g, piece - piece % g)
    narrowed: list[Array] = []  # (the groups as one block per weight, made once if a piece's positions are not in runs)

    def narrow() -> Array:
        with lock:
            if not narrowed:
                narrowed.append(fast_tree32_wide.narrow(once_f32(), g))
            return narrowed[0]

    def run(lo_: int, hi_: int) -> None:
        sl = (slice(lo_, hi_),) if bsz else ()
        cut = [hi_ - lo_, *bsz[1:]] if bsz else []
        av_ = av[(slice(None),) * pos[bb[0]] + sl] if bsz else av
        wv_ = wv[(slice(None),) * pos[bb[0]] + sl] if bsz else wv
        nb_ = math.prod(cut)
        w16: Array | None = None
        if w_period:  # (the weights laid out once: each entry's block)
            wi = fast_weight_period.index(lo_, hi_, w_period, rest)
        else:
            w16 = (fast_row_bf16.bits_view(wv_, [[pos[lab] for lab in bb], [pos[lab] for lab in steps],
                                                [pos[lab] for lab in nn], [pos["j"]]],
                                           [cut, ssz, w_nn[:-1], [nj]]) if bits is not None else None)
            wi = np.arange(nb_, dtype=np.int64)
        out = res[lo_ * rest: hi_ * rest]
        shared = (fast_classes.classes(a_labels[lo_:hi_], av_, pos["b"])
                  if jit is not None and a_labels is not None and bb[:1] == ["b"] else None)
        if shared is not None:  # (one laid-out block per class of replicated activations)
            first_, inverse = shared
            src = av_[(slice(None),) * pos["b"] + (first_,)]
            a_shape = [len(first_) * rest, ns, nm, nj]
            a_full = [len(first_), *cut[1:], *ssz, *(sizes[lab] for lab in mm), nj]
            ai = (inverse[:, None] * rest + np.arange(rest, dtype=np.int64)).reshape(-1)
        else:
            src, a_shape, a_full = av_, [nb_, ns, nm, nj], [*cut, *ssz, *(sizes[lab] for lab in mm), nj]
            ai = np.arange(nb_, dtype=np.int64)
        runs = g > 1 and fast_tree32_wide.full_runs(ai, wi, g)
        if dp is not None and (runs or g == 1):
            wp, wr = (w_pairs, w_range) if w_pairs is not None else pairs(wv_, cut, 1)
            if wr is not None:
                a16 = _laid_out(src.view(np.uint16), a_axes, a_shape, a_full, np.uint16)
                if fast_tree32_dp.fits(fast_tree32_dp.exponent_range(a16), wr):
                    dp(a16.view(np.uint32), ai, wp, wi, out)
                    return
        a2 = _laid_out(src, a_axes, a_shape, a_full)
        if runs and wide is not None:
            wide(a2, ai, once_f32(), wi, out)
        elif g > 1 and jit is not None:
            jit(a2, ai, narrow(), wi, out)
        elif w16 is not None and bits is not None:
            bits(a2, ai, w16, wi, out)
        else:
            w2 = once_f32() if w_period else w16 if w16 is not None else weights(wv_, cut)
            if jit is not None:
                jit(a2, ai, w2, wi, out)
            else:
                tree_block(a2, w2, out)

    parallel_pieces(first, piece, run, work=nb * ns * nj * nm * n_n)
    cur = [*bb, *mm, *nn]
    full = one_nan(res).reshape([sizes[lab] for lab in cur] or [1])
    missing = [lab for lab in lo if lab not in cur]
    full = full.reshape(full.shape[: len(cur)] + (1,) * len(missing))
    cur += missing
    return np.broadcast_to(full.transpose([cur.index(lab) for lab in lo]), out_shape)
