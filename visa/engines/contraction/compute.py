"""Running the Contraction Engine's configuration over the data: the Reducer's arithmetic, vectorised.

The Reducer computes, for every slice, Row ``r``, computation step ``t`` and output column ``q``::

    C[r, t, q] = Σ_{j < 2^n} A[t, q·2^n + j] · W[r, t, q·2^n + j]             (tree, L4384–4392)
    out[t'', q, r] = Σ_{reduced t} C[r, t, q]                                  (accumulator, L4406–4548)

where ``A`` is the Stream Adapter's packet (repeated over the tiling steps) and ``W`` the TRF Sequencer's read:
``W[r, t, p] = TRF_r[base + Σ_k digit_k(t) · stride_k + p mod reg_read]`` — the configuration the Aligner
derived, executed as such.  Time is split into *digits*: the common refinement of the sequencer entries,
the tiling split, the activation's own repeating digits (a fetch that read the stream once per weight column,
:class:`~visa.engines.broadcast.BroadcastData`) and the accumulator's kept/reduced segments.  A digit with stride
0 is a weight broadcast, and a tiling or repeating digit an activation broadcast; none is materialised.  The
sum over a reduced digit and the tree's ``j`` then is one batched matrix product (BLAS) in float64 for integer
operands (exact below 2^53, then wrapped to i32: the same integers in any order).  Float operands are not
summed by a matrix product: their f32 sums round at every addition, so the order is part of the result, and
the Reducer's order (the tree's adjacent pairs, then the accumulator in Time order) is computed over the same
operand views by :func:`visa.engines.contraction.fast_steps.contract`, or step by step by
:func:`visa.engines.contraction.reference.run` — the same bits whichever fast path is on.

Poison: an output is unknown when a product it sums is, and a product is unknown when one factor is unknown
and the other is not a known zero — zero padding times a dummy is zero (``1+1#`` contracted with ``1+1z``
yields ``1``, L3771–3774).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.broadcast import TimeDigits, expand, place_values
from visa.engines.common import StreamData
from visa.engines.contraction import fast_into, fast_steps, fast_sums, reference
from visa.engines.contraction.aligner import AlignPlan
from visa.engines.contraction.blas import batched_matmul, parallel_pieces
from visa.engines.contraction.reducer import AccumulatePlan, ContractPlan
from visa.memory.known import all_true, is_everywhere, known_everywhere
from visa.memory.replicas import Labels

__all__ = ["TrfWindow", "contract_values", "accumulate", "window_range", "CHUNK_ELEMENTS"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Array = npt.NDArray[Any]

EXACT = fastpaths.register("contraction.exact-f32", "integer operands multiplied in float32 in runs of as many terms "
                           "as stay exact below 2^24, summed in float64 (else one float64 product)")
REPEATS = fastpaths.register("contraction.repeats", "an activation the data shows repeated along a weight digit is "
                             "multiplied once by every weight column (a wider product, not a batch)")
PERIOD = fastpaths.register("contraction.weight-period", "slices whose weights repeat with a period share one product "
                            "per distinct weight matrix (activations stacked), the repeats never copied")
TIME_DIGITS = fastpaths.register("contraction.time-digits", "Time split into the common refinement of its "
                                 "structures: weights as strided views, repeats as broadcasts (else per step)")

#: Elements of the operands converted to the compute type at once (bounds the working memory).
CHUNK_ELEMENTS = 1 << 25


@dataclass(frozen=True)
class TrfWindow:
    """The TRF elements the sequencer can read: ``values``/``known`` of shape ``(B, R, L)`` holding, for the
    ``B`` computed ``(Chip, Cluster, Slice)`` positions (``flatnonzero(valid)``, in order) and each Row, the
    tensor's elements ``lo .. lo + L - 1`` (what the TRF Sequencer may read, L4035–4100).

    With ``period`` > 0 the positions' TRF contents repeat every ``period`` positions (slices given the same
    weights, e.g. one column block of B broadcast to every row block of A): ``values``/``known`` then hold the
    first ``period`` positions only, and position ``b`` reads ``b % period`` (the repeats are never copied).
    With ``span`` > 0 as well, they repeat so within each block of ``span`` positions only (a *fold*: the
    reference's ``matmul_16384`` gives slice ``(cluster, row group, s)`` the weights of ``(cluster, s)``):
    ``values`` hold the first ``period`` positions of every block, and position ``b`` reads
    ``(b // span) · period + b % period`` (:meth:`entries`).
    ``known`` is a stride-0 broadcast of True when every element is known (:mod:`visa.memory.known`)."""

    values: Array
    known: BoolArray
    lo: int
    period: int = 0
    span: int = 0

    def entries(self, ids: IntArray) -> IntArray:
        """The entries of ``values`` the batch positions ``ids`` read."""
        p, s = self.period, self.span
        if not p:
            return ids
        return ids % p if not s else ids // s * p + ids % p

    def positions(self, rows: slice) -> tuple[Array, BoolArray, int, int]:
        """``(values, known, period, span)`` of the batch positions ``rows`` (a slice with a start and a stop):
        with ``period`` > 0 the arrays hold one period (of each block of ``span`` positions, when ``span`` > 0),
        which ``rows`` repeats (it starts and ends on a period — block — boundary), else they hold the positions
        ``rows`` themselves (gathered from the period when ``rows`` does not cover whole periods or blocks)."""
        p, s = self.period, self.span
        if not p:
            return self.values[rows], self.known[rows], 0, 0
        start, stop = int(rows.start), int(rows.stop)
        if not s and start % p == 0 and stop % p == 0 and stop > start:
            return self.values, self.known, p, 0
        if s and start % s == 0 and stop % s == 0 and stop > start:
            sel = slice(start // s * p, stop // s * p)
            return self.values[sel], self.known[sel], p, (0 if stop - start == s else s)
        idx = self.entries(np.arange(start, stop, dtype=np.int64))
        return self.values[idx], self.known[idx], 0, 0


@dataclass(frozen=True)
class _Digit:
    size: int
    in_act: bool
    stride: int  # TRF element stride (0 = weight broadcast)
    kept: bool


def window_range(align: AlignPlan) -> tuple[int, int]:
    """The element range ``[lo, hi)`` of the TRF tensor the sequencer reads (entries plus reg_read, L4085–4100)."""
    lo = hi = align.base
    for e in align.entries:
        span = (e.size - 1) * e.stride
        lo, hi = (lo + span, hi) if span < 0 else (lo, hi + span)
    return lo, hi + align.rr_elements


def _refine(total: int, structures: Sequence[Sequence[int]]) -> list[int] | None:
    """Digit sizes (outermost first) refining every mixed-radix structure of ``total``, or None."""
    places = {1, total}
    for sizes in structures:
        acc = 1
        for s in reversed(sizes):
            acc *= s
            places.add(acc)
    chain = sorted(places)
    if any(b % a for a, b in zip(chain, chain[1:], strict=False)):
        return None
    return [b // a for a, b in zip(chain, chain[1:], strict=False)][::-1]


def _digits(align: AlignPlan, segments: Sequence[tuple[int, bool]], dense: bool = False,
            act_digits: TimeDigits = ()) -> list[_Digit]:
    """The time digits: refinement of the entries, the tiling split, the activation's own repeating digits
    (``act_digits``, a stream the fetch broadcast along Time) and the segments (outermost first).  A digit is in
    the activation (``in_act``) unless it is a tiling digit or inside a repeating activation digit."""
    t = align.out_time
    seg_sizes = [s for s, _ in segments if s > 1]
    entries = [(e.size, e.stride) for e in align.entries if e.size > 1]
    act_digits = act_digits or ((align.act_time, False),)
    act_sizes = [s for s, _ in act_digits]
    structures = [seg_sizes, [*act_sizes, align.tiles], [s for s, _ in entries]]
    a_places = [p * align.tiles for p in place_values(act_sizes)]
    repeating = [(p, p * s) for (s, rep), p in zip(act_digits, a_places, strict=True) if rep]
    sizes = None if dense or not TIME_DIGITS.on else _refine(t, structures)
    if sizes is None:  # no common refinement: one digit per segment, weights gathered per step
        sizes = seg_sizes if seg_sizes else [t]
        dense = True
    places = place_values(sizes)
    e_places = place_values([s for s, _ in entries])
    s_places = place_values(seg_sizes)
    seg_kept = [k for s, k in segments if s > 1]
    out = []
    for size, place in zip(sizes, places, strict=True):
        if size == 1:
            continue
        stride = 0
        if not dense:
            for (esize, estride), ep in zip(entries, e_places, strict=True):
                if ep <= place < ep * esize:
                    stride = estride * (place // ep)
        kept = True
        for ssz, sp, sk in zip(seg_sizes, s_places, seg_kept, strict=True):
            if sp <= place < sp * ssz:
                kept = sk
        in_act = dense or (place >= align.tiles and not any(lo <= place < hi for lo, hi in repeating))
        out.append(_Digit(size, in_act, -1 if dense else stride, kept))
    return out


def _gather_weights(align: AlignPlan, digits: Sequence[_Digit], window: TrfWindow, rows: slice,
                    dense: bool) -> tuple[Array, BoolArray, list[str], int, int]:
    """W over ``(b, r, <weight digits>, packet)`` for the batch positions, gathered from the TRF window, and the
    period and span of its first axis (0: one entry per position; else one period of positions, of each block of
    ``span`` when that is not 0, :class:`TrfWindow`)."""
    wd = [k for k, d in enumerate(digits) if d.stride != 0]
    labels = [f"d{k}" for k in wd]
    vals, known, period, span = window.positions(rows)
    if not dense and align.out_packet <= align.rr_elements:
        # every index is base + Σ digit · stride + p: a strided view of the window, no gather (the indices lie
        # in the window by construction, window_range)
        shape = [digits[k].size for k in wd] + [align.out_packet]
        steps = [digits[k].stride for k in wd] + [1]
        return (_strided(vals, align.base - window.lo, shape, steps),
                _strided(known, align.base - window.lo, shape, steps), labels, period, span)
    idx = np.full((), align.base - window.lo, dtype=np.int64)
    nd = len(wd)
    if dense:
        t = np.arange(align.out_time, dtype=np.int64)
        addr = np.zeros(align.out_time, dtype=np.int64)
        for e, val in zip(align.entries, _entry_digits(align, t), strict=True):
            addr += val * e.stride
        idx = idx + addr.reshape([digits[k].size for k in wd])
    else:
        for pos, k in enumerate(wd):
            shape = [1] * nd
            shape[pos] = digits[k].size
            idx = idx + (np.arange(digits[k].size, dtype=np.int64) * digits[k].stride).reshape(shape)
    p = np.arange(align.out_packet, dtype=np.int64) % align.rr_elements
    idx = np.asarray(idx)[..., None] + p
    if all_true(known):
        wk = known_everywhere((*known.shape[:-1], *idx.shape))
    else:
        wk = np.take(known, idx, axis=-1)
    return np.take(vals, idx, axis=-1), wk, labels, period, span


def _unfold(x: Array, period: int, span: int, n: int) -> Array:
    """``x`` (its first axis one period of each block of ``span`` positions, :class:`TrfWindow`) at each of the
    ``n`` positions: a gather (a broadcast of True stays one)."""
    if is_everywhere(x):
        return known_everywhere((n, *x.shape[1:]))
    ids = np.arange(n, dtype=np.int64)
    out: Array = x[ids // span * period + ids % period]
    return out


def _strided(arr: Array, start: int, shape: Sequence[int], steps: Sequence[int]) -> Array:
    """The view ``arr[..., start + Σ i_k · steps_k]`` over the index grid ``shape`` (the last axis of ``arr``
    addressed with element strides; read-only; a broadcast of True stays one)."""
    if is_everywhere(arr):
        return known_everywhere((*arr.shape[:-1], *shape))
    item = arr.itemsize
    word = np.dtype(f"u{item}") if item in (1, 2, 4, 8) else arr.dtype  # as evaluate.strided_view (ml_dtypes)
    view: Array = np.lib.stride_tricks.as_strided(arr[..., start:].view(word), (*arr.shape[:-1], *shape),
                                                  (*arr.strides[:-1], *(s * arr.strides[-1] for s in steps)),
                                                  writeable=False)
    return view.view(arr.dtype)


def _entry_digits(align: AlignPlan, t: IntArray) -> list[IntArray]:
    out, inner = [], align.out_time
    for e in align.entries:
        inner //= e.size
        out.append((t // inner) % e.size)
    return out


#: Elements of both operands converted at once by one worker (a piece stays in the cache while it is multiplied).
_PIECE_ELEMENTS = 1 << 19

#: Fewest distinct weight matrices for which stacking the activations pays (fewer leave too few pieces for the
#: workers, and one stacked activation takes the memory of all of them at once).
_MIN_PERIOD = 4


def _reshape_view(a: Array, shape: tuple[int, ...]) -> Array:
    """``a`` reshaped to ``shape`` as a view of its memory; ``ValueError`` when that needs a copy (numpy >= 2.1's
    ``copy=False``, the floor)."""
    return np.reshape(a, shape, copy=False)  # type: ignore[call-overload, no-any-return, unused-ignore]


def _matrix(x: Array, order: list[int], shape: tuple[int, ...], mtype: type[np.floating[Any]]) -> Array:
    """``x`` transposed to ``order`` and reshaped to ``shape`` in the compute type: a view when ``x`` already is
    of that type and the reshape needs no copy.  Else ``x`` is converted in its own memory order (a streaming
    pass) and the converted array transposed and reshaped — a view when that order allows it (a matrix whose
    columns are rows in memory is a transposed operand BLAS takes as such), else one more copy."""
    t = x.transpose(order)
    if t.dtype == mtype:
        return t.reshape(shape)
    mem = sorted(range(x.ndim), key=lambda k: -abs(x.strides[k]))  # x's axes, outermost in memory first
    out = np.empty([x.shape[k] for k in mem], dtype=mtype)
    try:  # the converted array in x's memory order, seen in the order asked for: a view?
        view = _reshape_view(out.transpose(np.argsort(mem)).transpose(order), shape)
        src = x.transpose(mem)
    except ValueError:  # no: convert and reorder in one pass
        out, view, src = np.empty(t.shape, dtype=mtype), None, t
    if src.dtype == _BF16 and mtype is np.float32:
        # bfloat16 is the upper half of a binary32: widen the bits (exact, and far faster than the cast)
        np.left_shift(src.view(np.uint16), 16, out=out.view(np.uint32), dtype=np.uint32)
    else:
        np.copyto(out, src, casting="unsafe")
    return out.reshape(shape) if view is None else view


def _matmul(a2: Array, w2: Array, terms: int, ctype: type[np.floating[Any]],
            matmul: Callable[[Array, Array], Array]) -> Array:
    """``a2 @ w2`` (batched) in the compute type.  With ``terms`` (integer operands, float32 copies): the
    contracted dimension is split into runs of at most ``terms`` products, each an exact float32 matrix product
    (see :func:`visa.engines.contraction.fast_compute.exact_f32_terms`), and the runs are summed in float64
    (exact below 2^53) — the same integers as a float64 product, at float32 BLAS speed."""
    if not terms:
        return matmul(a2, w2)
    nk = a2.shape[-1]
    if nk <= terms:
        return matmul(a2, w2).astype(ctype)
    res = np.zeros((*np.broadcast_shapes(a2.shape[:-2], w2.shape[:-2]), a2.shape[-2], w2.shape[-1]), dtype=ctype)
    for k0 in range(0, nk, terms):
        res += matmul(a2[..., k0: k0 + terms], w2[..., k0: k0 + terms, :])
    return res


def _contract(a: Array, la: list[str], w: Array, lw: list[str], lo: list[str], sizes: dict[str, int],
              reduced: Sequence[str], ctype: type[np.floating[Any]], w_period: int = 0,
              a_labels: Labels | None = None, out: Array | None = None, w_span: int = 0) -> Array:
    """``einsum(a, w → lo)`` summing every label not in ``lo``, as one batched matmul (labels not in ``lo`` nor
    in an operand multiply by their size; labels only in ``lo`` broadcast).  With ``w_period`` > 0, ``w``'s
    first axis holds one period of the batch ("b", which ``a`` holds whole): position ``b`` has ``w[b % period]``
    — with ``w_span`` > 0, one period of each block of ``w_span`` positions: ``w[b // span · period + b % period]``
    (:class:`TrfWindow`).  ``out`` (laid out as ``lo``; given for integer sums exact in float32): the product may
    be written there (``contraction.product-into``), and then ``out`` is returned."""
    from visa.engines.contraction import fast_compute

    if w_period and w.shape[0] == sizes["b"]:
        w_period = w_span = 0  # (one period is the whole batch)
    elif w_period and not (PERIOD.on and w.shape[0] >= _MIN_PERIOD and lw[0] == "b" and la[0] == "b"
                           and lo[0] == "b" and all(sizes[x] == 1 for x in lo[1:] if x in la and x in lw)):
        # the period is not used as such below: the positions' weights, repeated (a copy)
        ids = np.arange(sizes["b"], dtype=np.int64)
        w = w[ids // w_span * w_period + ids % w_period if w_span else ids % w_period]
        w_period = w_span = 0
    for side, labels in ((0, la), (1, lw)):
        only = [lab for lab in labels if lab not in lo and lab not in (lw if side == 0 else la)]
        if only:
            axes = tuple(labels.index(lab) for lab in only)
            if side == 0:
                a = a.sum(axis=axes, dtype=ctype)
                la = [lab for lab in la if lab not in only]
            else:
                w = w.sum(axis=axes, dtype=ctype)
                lw = [lab for lab in lw if lab not in only]
    batch = [lab for lab in lo if lab in la and lab in lw]
    mm = [lab for lab in lo if lab in la and lab not in lw]
    # the weights' own labels in their memory order (outermost first): the converted weights are then a view of
    # a matrix BLAS reads as is (the output is reordered to ``lo`` at the end, _finish)
    nn = sorted((lab for lab in lo if lab in lw and lab not in la), key=lambda lab: -abs(w.strides[lw.index(lab)]))
    kk = [lab for lab in la if lab in lw and lab not in lo]
    nm = math.prod(sizes[lab] for lab in mm)
    nn_ = math.prod(sizes[lab] for lab in nn)
    nk = math.prod(sizes[lab] for lab in kk)
    # convert in memory order (a streaming pass), then hand matmul strided views: a transposed operand whose
    # matrix dimensions stay unit-stride needs no copy (BLAS takes the leading dimension)
    bshape = [sizes[lab] for lab in batch]
    terms = fast_compute.exact_f32_terms(a, w) if ctype is np.float64 and EXACT.on else 0
    mtype = np.float32 if terms else ctype
    order_a = [la.index(lab) for lab in batch + mm + kk]
    order_w = [lw.index(lab) for lab in batch + kk + nn]
    if not PERIOD.on:
        period = 0
    elif w_period:  # known from the window (only its first period is in w)
        period = w_period
    else:
        period = fast_compute.weight_period(w) if bshape and bshape[0] > 1 and math.prod(bshape[1:]) == 1 else 0
    if period and (w_span or period >= _MIN_PERIOD):
        from visa.engines.contraction import fast_compute

        if (out is not None and ctype is np.float32 and not terms and fast_into.FOLD.on
                and math.prod(sizes[lab] for lab in reduced if lab not in la and lab not in lw and lab not in lo) == 1
                and fast_into.fold_into(out, a, la, w, lw, lo, sizes, (batch, mm, kk, nn), period, w_span,
                                        _PIECE_ELEMENTS, lambda x, order, shape: _matrix(x, order, shape, np.float32))):
            return out
        res = fast_compute.contract_by_period(a, w, order_a, order_w, bshape, nm, nk, nn_, len(nn), period, terms,
                                              ctype, mtype, a_labels, w_span)
    elif (out is not None and ctype is np.float32 and not terms and fast_into.INTO.on
          and math.prod(sizes[lab] for lab in reduced if lab not in la and lab not in lw and lab not in lo) == 1
          and fast_into.product_into(out, a, la, w, lw, lo, sizes, (batch, mm, kk, nn), _PIECE_ELEMENTS,
                                     lambda x, order, shape: _matrix(x, order, shape, np.float32))):
        return out
    elif bshape and bshape[0] > 1:
        # per piece of the first batch axis, on the worker threads: convert the piece (it stays in cache) and
        # multiply it; each worker's BLAS calls use one thread (blas.py)
        res = np.empty((*bshape, nm, nn_), dtype=ctype if terms else mtype)
        ta, tw = a.transpose(order_a), w.transpose(order_w)
        per = max(1, (nm * nk + nk * nn_) * math.prod(bshape[1:]))
        piece = max(1, min(-(-bshape[0] // 8), _PIECE_ELEMENTS // per))

        def run(lo: int, hi: int) -> None:
            n = hi - lo
            a2 = _matrix(ta[lo:hi], list(range(ta.ndim)), (n, *bshape[1:], nm, nk), mtype)
            w2 = _matrix(tw[lo:hi], list(range(tw.ndim)), (n, *bshape[1:], nk, nn_), mtype)
            res[lo:hi] = _matmul(a2, w2, terms, ctype, np.matmul)

        parallel_pieces(bshape[0], piece, run)
    else:
        a2 = _matrix(a, order_a, (*bshape, nm, nk), mtype)
        w2 = _matrix(w, order_w, (*bshape, nk, nn_), mtype)
        res = _matmul(a2, w2, terms, ctype, batched_matmul)
    return _finish(res, sizes, reduced, la, lw, lo, batch, mm, nn, ctype)


def _finish(res: Array, sizes: dict[str, int], reduced: Sequence[str], la: list[str], lw: list[str], lo: list[str],
            batch: list[str], mm: list[str], nn: list[str], ctype: type[np.floating[Any]]) -> Array:
    """The product ``res`` (batch, m, n) scaled by the labels in neither operand and laid out as ``lo``."""
    scale = math.prod(sizes[lab] for lab in reduced if lab not in la and lab not in lw and lab not in lo)
    if scale != 1:
        res = res * ctype(scale)
    cur = batch + mm + nn
    res = res.reshape([sizes[lab] for lab in cur])
    missing = [lab for lab in lo if lab not in cur]
    if missing:
        res = res.reshape(res.shape + (1,) * len(missing))
        cur = cur + missing
    res = res.transpose([cur.index(lab) for lab in lo])
    return np.broadcast_to(res, [sizes[lab] for lab in lo])


def _run(align: AlignPlan, contract: ContractPlan, segments: Sequence[tuple[int, bool]], act: Array,
         act_known: BoolArray, window: TrfWindow, batch: IntArray, out_tail: list[str],
         keep_all_time: bool, act_digits: TimeDigits = (), act_labels: Labels | None = None
         ) -> tuple[Array, BoolArray]:
    """Values and known-mask over ``(b, <kept digits>, *out_tail)`` for the batch positions ``batch``.

    ``act`` is the activation over its compact time when ``act_digits`` has repeating digits (a stream the
    fetch broadcast along Time): those digits are not in the activation's labels, so the products multiply one
    activation by every weight they pair with (a wider matrix product), the repeats never materialised."""
    digits = _digits(align, segments, act_digits=act_digits)
    dense = any(d.stride == -1 for d in digits)
    if dense:
        digits = [_Digit(d.size, True, -1, d.kept) for d in digits]
        if any(rep for _, rep in act_digits):  # no common refinement: the activation's repeats materialised
            act = _expand_time(act, act_digits, align.act_time)
            act_known = _expand_time(act_known, act_digits, align.act_time)
    n, q_keep = contract.group, contract.kept
    sizes: dict[str, int] = {"b": 0, "r": align.rows, "q": q_keep, "j": n}
    for k, d in enumerate(digits):
        sizes[f"d{k}"] = d.size
    a_digits = [f"d{k}" for k, d in enumerate(digits) if d.in_act]
    kept = [f"d{k}" for k, d in enumerate(digits) if d.kept or keep_all_time]
    reduced = [f"d{k}" for k, d in enumerate(digits) if not (d.kept or keep_all_time)] + ["j"]
    lo = ["b", *kept, *out_tail]
    ctype: type[np.floating[Any]] = np.float64 if contract.out_dtype.kind == "int" else np.float32
    if ctype is np.float64:
        from visa.engines.contraction import fast_compute  # (it imports this module)

        ctype = fast_sums.sum_type(ctype, math.prod(sizes[lab] for lab in reduced),
                                   fast_compute.exact_f32_terms(act, window.values))
    flat = act.reshape(-1, *act.shape[3:])
    flat_known = act_known.reshape(-1, *act_known.shape[3:])
    out_shape = [len(batch)] + [sizes[lab] for lab in lo[1:]]
    # (every batch position is written below, chunk by chunk; with contraction.product-into, integer sums exact
    # in float32 are written as the output's integers)
    into = fast_into.INTO.on and contract.out_dtype.storage.kind == "i" and ctype is np.float32
    values = np.empty(out_shape, dtype=contract.out_dtype.storage if into else ctype)
    poison: BoolArray | None = None  # made when a chunk has poison
    # elements per batch position: the (compact) activation and the weights (a strided view of the window unless
    # dense, then a gather over every step)
    w_steps = align.out_time if dense else math.prod(d.size for d in digits if d.stride != 0)
    per_b = max(1, act.shape[3] * align.out_packet + align.rows * w_steps * align.out_packet)
    step = 1 << max(0, (CHUNK_ELEMENTS // per_b).bit_length() - 1)  # a power of two: chunks keep slice patterns
    for start in range(0, len(batch), step):
        chunk = batch[start: start + step]
        sizes["b"] = len(chunk)
        if int(chunk[-1]) - int(chunk[0]) + 1 == len(chunk):  # consecutive positions: a view, no copy
            a = flat[int(chunk[0]): int(chunk[-1]) + 1]
            ak = flat_known[int(chunk[0]): int(chunk[-1]) + 1]
        else:
            a = flat[chunk]
            ak = flat_known[chunk]
        if dense and align.tiles > 1:
            a = np.repeat(a, align.tiles, axis=1)
            ak = np.repeat(ak, align.tiles, axis=1)
        a_shape = [len(chunk)] + [sizes[lab] for lab in a_digits] + [contract.columns, n]
        a = a.reshape(a_shape)[..., :q_keep, :]
        ak = ak.reshape(a_shape)[..., :q_keep, :]
        sl = slice(start, start + len(chunk))
        w, wk, w_digits, period, span = _gather_weights(align, digits, window, sl, dense)
        if span and contract.out_dtype.kind != "int":  # (the float steps take a period only: the fold unrepeated)
            w, wk = _unfold(w, period, span, len(chunk)), _unfold(wk, period, span, len(chunk))
            period = span = 0
        w_shape = [w.shape[0], align.rows] + [sizes[lab] for lab in w_digits] + [contract.columns, n]
        w = w.reshape(w_shape)[..., :q_keep, :]
        wk = wk.reshape(w_shape)[..., :q_keep, :]
        la = ["b", *a_digits, "q", "j"]
        lw = ["b", "r", *w_digits, "q", "j"]
        if REPEATS.on:
            from visa.engines.contraction import fast_compute

            a, ak, la = fast_compute.drop_repeats(a, ak, la, lw, lo)
        all_known = all_true(ak) and all_true(wk)
        a0 = a if all_known else np.where(ak, a, np.zeros((), dtype=a.dtype))
        w0 = w if all_known else np.where(wk, w, np.zeros((), dtype=w.dtype))
        labels = None if act_labels is None else act_labels[chunk]
        if contract.out_dtype.kind != "int":  # float sums: the Reducer's order (fast_steps)
            values[sl] = fast_steps.contract(a0, la, w0, lw, lo, sizes, reduced, labels, period)
        else:
            target = values[sl]
            res = _contract(a0, la, w0, lw, lo, sizes, reduced, ctype, period, labels, target if into else None,
                            span)
            if res is not target:
                values[sl] = res
        if not all_known:
            za, zw = ak & (a0 == 0), wk & (w0 == 0)
            bad = _contract((~ak).astype(np.float32), la, (~zw).astype(np.float32), lw, lo, sizes, reduced,
                            np.float32, period, w_span=span)
            bad = bad + _contract((~za).astype(np.float32), la, (~wk).astype(np.float32), lw, lo, sizes,
                                  reduced, np.float32, period, w_span=span)
            if poison is None:
                poison = np.zeros(out_shape, dtype=bool)
            poison[sl] = bad > 0
    out = _to_output(values, contract)
    if poison is not None:
        return out, ~poison
    return out, known_everywhere(out.shape) if fast_sums.WHOLE_OUTPUT.on else np.ones(out.shape, dtype=bool)


def _reduce_all(align: AlignPlan, contract: ContractPlan, segments: Sequence[tuple[int, bool]], act: Array,
                act_known: BoolArray, window: TrfWindow, batch: IntArray, out_tail: list[str],
                keep_all_time: bool, act_digits: TimeDigits = (), act_labels: Labels | None = None
                ) -> tuple[Array, BoolArray]:
    """The Reducer's output over ``(b, <kept digits>, *out_tail)``: integer reduce-add as fused matrix products
    (:func:`_run`: exact sums, in any order), reduce-max step by step
    (:func:`visa.engines.contraction.reference.run`: a maximum is no matrix product), float reduce-add in the
    Reducer's order (a float sum rounds at every addition, and no matrix product keeps the tree's order): step
    by step, or with ``contraction.float-steps`` through :func:`_run`'s operand views
    (:func:`visa.engines.contraction.fast_steps.contract`, the same bits)."""
    if contract.reduce_op == "Max" or (contract.out_dtype.kind != "int" and not fast_steps.STEPS.on):
        vals, known = reference.run(align, contract, segments, act, act_known, window, batch, out_tail,
                                    keep_all_time, act_digits)
        return _to_output(vals, contract), known
    return _run(align, contract, segments, act, act_known, window, batch, out_tail, keep_all_time, act_digits,
                act_labels)


_BF16 = np.dtype(ml_dtypes.bfloat16)


def _bits_view(x: Array) -> Array:
    """``x`` as unsigned integers of its width (a view)."""
    return x.view(np.dtype(f"u{x.itemsize}")) if x.itemsize in (1, 2, 4, 8) else x


def _expand_time(x: Array, digits: TimeDigits, steps: int) -> Array:
    """The compact activation ``x`` (its axis 3 the compact time) over all ``steps`` of its time (a copy)."""
    return expand(x, digits).reshape(*x.shape[:3], steps, *x.shape[4:])


def _to_output(values: Array, contract: ContractPlan) -> Array:
    target = contract.out_dtype.storage
    if values.dtype == target:  # (contraction.product-into wrote the output's integers)
        return values
    fast = fast_sums.to_output(values, target)
    if fast is not None:
        return fast
    if contract.out_dtype.kind == "int":
        wide = np.rint(values).astype(np.int64)
        return wide.astype(np.uint64).astype(np.uint32).view(np.int32).astype(target)
    return values.astype(target, copy=False)


def _batch(valid: BoolArray) -> IntArray:
    return np.flatnonzero(valid.reshape(-1)).astype(np.int64)


def accumulate(align: AlignPlan, contract: ContractPlan, acc: AccumulatePlan, act: Array, act_known: BoolArray,
               window: TrfWindow, valid: BoolArray, act_digits: TimeDigits = (),
               act_labels: Labels | None = None) -> StreamData:
    """The AccumulationTensor's data ``(Chip, Cluster, Slice, OutTime, OutPacket)``.

    ``act``/``act_known`` are the Stream Adapter's output before time broadcast (:func:`aligner.adapt`), over
    the compact time of ``act_digits`` when the fetch repeated the stream along Time;
    ``valid`` marks the ``(Chip, Cluster, Slice)`` positions the layout holds data in (others are poison and
    are not computed).  Interleaved: Rows past the TRF's are dummies (poison).  Sequential: the columns
    padding the packet to the 8-wide bus are zeros (L4482–4492).
    """
    lead = act.shape[:3]
    batch = _batch(valid)
    rows = acc.rows
    shape = (*lead, acc.out_time, acc.out_packet)
    if acc.kind == "Interleaved":
        vals, known = _reduce_all(align, contract, acc.segments, act, act_known, window, batch, ["q", "r"], False,
                           act_digits, act_labels)
        body = vals.reshape(len(batch), acc.kept_time * acc.columns, rows)
        kbody = known.reshape(body.shape)
        if (fast_sums.WHOLE_OUTPUT.on and len(batch) == math.prod(lead) and rows == acc.out_packet
                and body.dtype == contract.out_dtype.storage):  # every position, every lane: the product is the stream
            return StreamData(body.reshape(shape), kbody.reshape(shape))
        full = np.zeros(shape, dtype=contract.out_dtype.storage)
        kfull = np.zeros(shape, dtype=bool)
        if len(batch) and int(batch[-1]) - int(batch[0]) + 1 == len(batch):  # consecutive positions: in place
            span = slice(int(batch[0]), int(batch[-1]) + 1)
            full.reshape(-1, acc.out_time, acc.out_packet)[span, :, :rows] = body
            kfull.reshape(-1, acc.out_time, acc.out_packet)[span, :, :rows] = kbody
            return StreamData(full, kfull)
        out = np.zeros((len(batch), acc.out_time, acc.out_packet), dtype=contract.out_dtype.storage)
        kout = np.zeros(out.shape, dtype=bool)
        out[..., :rows] = body
        kout[..., :rows] = kbody
    else:
        vals, known = _reduce_all(align, contract, acc.segments, act, act_known, window, batch, ["r", "q"], False,
                           act_digits, act_labels)
        pad = np.zeros((*vals.shape[:-1], acc.pad_columns), dtype=vals.dtype)
        kpad = np.ones(pad.shape, dtype=bool)
        pad[..., : acc.columns] = vals
        kpad[..., : acc.columns] = known
        out = pad.reshape(len(batch), acc.out_time, acc.out_packet)
        kout = kpad.reshape(out.shape)
        full = np.zeros(shape, dtype=contract.out_dtype.storage)
        kfull = np.zeros(shape, dtype=bool)
    full.reshape(-1, acc.out_time, acc.out_packet)[batch] = out
    kfull.reshape(-1, acc.out_time, acc.out_packet)[batch] = kout
    return StreamData(full, kfull)


def contract_values(align: AlignPlan, contract: ContractPlan, act: Array, act_known: BoolArray, window: TrfWindow,
                    valid: BoolArray, act_digits: TimeDigits = (), act_labels: Labels | None = None
                    ) -> tuple[Array, BoolArray]:
    """The ContractionTensor's data: ``C[chip, cluster, slice, row, time, column]`` of shape
    ``(C, K, S, Row, OutTime, kept columns)`` (the computation mapping with the Row level, L3811–3812)."""
    lead = act.shape[:3]
    batch = _batch(valid)
    segments = ((align.out_time, True),)
    vals, known = _reduce_all(align, contract, segments, act, act_known, window, batch, ["r", "q"], True,
                       act_digits, act_labels)
    vals = vals.reshape(len(batch), align.out_time, align.rows, contract.kept).transpose(0, 2, 1, 3)
    known = known.reshape(vals.shape[0], align.out_time, align.rows, contract.kept).transpose(0, 2, 1, 3)
    full = np.zeros((*lead, align.rows, align.out_time, contract.kept), dtype=contract.out_dtype.storage)
    kfull = np.zeros(full.shape, dtype=bool)
    full.reshape(-1, *full.shape[3:])[batch] = vals
    kfull.reshape(-1, *full.shape[3:])[batch] = known
    return full, kfull
