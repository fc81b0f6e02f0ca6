"""The Reducer step by step, as the manual describes it (L4336–4548): the reference for reduce-max and for every
float contraction.

For each computed ``(Chip, Cluster, Slice)`` position, Row ``r`` and computation step ``t``::

    A[t, p]    = the Stream Adapter's packet (the activation's step, repeated over the tiling steps)
    W[r, t, p] = TRF_r[base + Σ_k digit_k(t) · stride_k + p mod reg_read]        (the TRF Sequencer, L4085–4100)
    C[r, t, q] = op_{j < 2^n} A[t, q·2^n + j] · W[r, t, q·2^n + j]               (the tree, L4384–4392)
    out        = op over the reduced Time digits of C                            (the accumulator, L4406–4434)

with ``op`` the configuration's ``reduce_op``: ``+`` (reduce-add) or ``max`` (reduce-max, Row 0 only, L4393–4395,
L4533).  Every operand is materialised: this is the plain reading of the configuration, used for reduce-max
(whose arithmetic is no matrix product), for reduce-add of float operands (whose sums round, so their order is
part of the result), and, in the tests, as the reference the fused products of
:mod:`visa.engines.contraction.compute` are checked against for integer reduce-add.

Products are exact (integers in float64, float types in float32: bf16 and fp8 products fit its significand);
a product is unknown when one factor is unknown and the other is not a known zero (``1+1#`` contracted with
``1+1z`` yields ``1``, L3771–3774), and an output is unknown when an operand of its ``op`` is.

Float sums are f32 and round at every addition, in the one order the manual gives (docs/manual-notes.md,
"Issue 23 (i23d)"): the tree adds adjacent pairs depth by depth, halving the count each time (L4386–4388:
"each subsequent depth sums pairs of partial products, halving the element count"), its f32 output (L4391,
L4397) goes to the accumulator, which stores the first flit of each slot and adds the later ones to it as they
arrive, in Time order (L4408, L4415–4431: "accumulate with flit #k").  Integer sums are exact in any order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa.engines.broadcast import TimeDigits, expand
from visa.memory.known import all_true, known_everywhere

if TYPE_CHECKING:
    from visa.engines.contraction.aligner import AlignPlan
    from visa.engines.contraction.compute import TrfWindow
    from visa.engines.contraction.reducer import ContractPlan

__all__ = ["run", "step_addresses", "tree", "in_order", "one_nan", "max_f32"]

Array = npt.NDArray[Any]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

#: Batch positions computed at once (bounds the materialised operands).
_CHUNK = 1 << 22


def step_addresses(align: AlignPlan) -> IntArray:
    """The TRF element each computation step's read starts at: ``base + Σ_k digit_k(t) · stride_k`` (entries
    outermost first, L4169–4175)."""
    t = np.arange(align.out_time, dtype=np.int64)
    addr = np.full(align.out_time, align.base, dtype=np.int64)
    inner = align.out_time
    for e in align.entries:
        inner //= e.size
        addr += ((t // inner) % e.size) * e.stride
    return addr


def _reduce(x: Array, known: BoolArray | None, axes: tuple[int, ...], op: str) -> tuple[Array, BoolArray | None]:
    """``op`` over ``axes`` (``known`` None: every element known): a maximum, an exact (integer) sum, or the
    accumulator's f32 sum (:func:`in_order`)."""
    if not axes:
        return x, known
    k = None if known is None else np.asarray(known.all(axis=axes))
    if op == "Max":
        return (max_f32(x, axes) if x.dtype == np.float32 else np.asarray(x.max(axis=axes))), k
    if x.dtype == np.float32:
        return in_order(x, axes), k
    return np.asarray(x.sum(axis=axes, dtype=x.dtype)), k


def tree(x: Array) -> Array:
    """The Reducer tree's f32 sum over the last axis (``2^n`` products): depth by depth, each sum of an adjacent pair
    rounded to f32, halving the count (L4386–4388)."""
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
    return x[..., 0]


def in_order(x: Array, axes: tuple[int, ...]) -> Array:
    """The accumulator's f32 sum over the reduced Time ``axes`` (ascending): the first flit a slot receives is
    stored, each later one added to it, in the order they arrive — ascending Time, so the reduced digits outermost
    first (L4408, L4415–4431)."""
    lead = np.moveaxis(x, axes, tuple(range(len(axes))))
    steps = lead.reshape(-1, *lead.shape[len(axes):])
    acc: Array = steps[0].copy()
    for k in range(1, steps.shape[0]):
        acc += steps[k]
    return acc


def max_f32(x: Array, axes: tuple[int, ...]) -> Array:
    """Reduce-max of f32 products over ``axes`` (the tree's pairs, L4393–4395, and the accumulator's flits,
    L4406–4434) with the chip's f32 ``max`` (Rust's ``f32::max``, the one the Vector Engine's Max uses: spec
    digest 3, "f32 min and max"): a number wins over NaN, ``max(+0, −0) = +0`` (``maximumNumber``,
    ``visa.engines.vector.arith.fmax32``).  So the result is the largest number whatever the order (+0 if a
    member is +0 and none is larger), and NaN only where every member is NaN: the Reducer has no identity
    element, its accumulator stores a slot's first flit and takes the maximum with the later ones (L4408,
    L4415–4431), so a group of NaNs has no number to give — the one quiet NaN ``0x7fc00000`` (:func:`one_nan`,
    as reduce-add writes).  docs/manual-notes.md, "h40x"."""
    with np.errstate(invalid="ignore"):
        out = np.asarray(np.fmax.reduce(x, axis=axes), np.float32)
    zero = out == 0
    if zero.any():  # numpy's fmax gives either zero of a pair by its loop's lane order: +0 if any member is +0
        plus = ((x == 0) & ~np.signbit(x)).any(axis=axes)
        out = np.where(zero, np.where(plus, np.float32(0.0), np.float32(-0.0)), out).astype(np.float32)
    return one_nan(out)


def one_nan(x: Array) -> Array:
    """``x`` (a float sum) with every NaN the one quiet NaN ``0x7fc00000``.  The manual gives no NaN's sign or
    payload (the data paths carry f32, L4383); which NaN an IEEE addition of two NaNs returns depends on the order
    of its operands, which compilers and numpy's vector loops are free to swap (docs/manual-notes.md, "Issue 24
    (i24g)"), so every path writes this one and the bits are the same whichever computed them."""
    nan = np.isnan(x)
    if nan.any():
        x = np.where(nan, np.float32(np.nan), x)
    return x


def run(align: AlignPlan, contract: ContractPlan, segments: Sequence[tuple[int, bool]], act: Array,
        act_known: BoolArray, window: TrfWindow, batch: IntArray, out_tail: list[str], keep_all_time: bool,
        act_digits: TimeDigits = ()) -> tuple[Array, BoolArray]:
    """Values (in float64 for integer outputs, float32 for float ones) and known-mask over ``(b, <kept Time
    digits>, *out_tail)`` for the batch positions ``batch`` — the shapes of
    :func:`visa.engines.contraction.compute._run`, whose callers lay them out."""
    ctype: type[np.floating[Any]] = np.float64 if contract.out_dtype.kind == "int" else np.float32
    if any(rep for _, rep in act_digits):
        act = expand(act, act_digits).reshape(*act.shape[:3], align.act_time, *act.shape[4:])
        act_known = expand(act_known, act_digits).reshape(act.shape)
    flat = act.reshape(-1, *act.shape[3:])
    flat_known = act_known.reshape(flat.shape)
    rr = align.rr_elements
    idx = step_addresses(align)[:, None] + np.arange(align.out_packet, dtype=np.int64)[None, :] % rr - window.lo
    sizes = [s for s, _ in segments] or [align.out_time]
    kept = [k or keep_all_time for _, k in segments] or [True]
    reduced = tuple(2 + k for k, flag in enumerate(kept) if not flag)  # (b, r, *sizes, q)
    n, q = contract.group, contract.kept
    per_b = align.rows * align.out_time * align.out_packet
    step = max(1, _CHUNK // max(1, per_b))
    outs: list[Array] = []
    knowns: list[BoolArray | None] = []
    w_all = all_true(window.known)
    for start in range(0, len(batch), step):
        rows = slice(start, min(start + step, len(batch)))
        ids = np.arange(rows.start, rows.stop, dtype=np.int64)
        a = np.repeat(flat[batch[rows]], align.tiles, axis=1).astype(ctype)  # (b, t, p)
        ka = np.repeat(flat_known[batch[rows]], align.tiles, axis=1)
        pos = window.entries(ids)
        w = window.values[pos][:, :, idx].astype(ctype)  # (b, r, t, p)
        known: BoolArray | None = None  # (None: every product known)
        if not (w_all and bool(ka.all())):
            kw = np.broadcast_to(window.known[pos][:, :, idx], w.shape)
            # an unknown factor's value is no number: zeros, so that a known zero times it stays zero
            a, w = np.where(ka, a, 0).astype(ctype), np.where(kw, w, 0).astype(ctype)
            known = (ka[:, None] & kw) | (ka[:, None] & (a[:, None] == 0)) | (kw & (w == 0))
        with np.errstate(invalid="ignore", over="ignore"):  # (0 × ∞ is NaN: a value, no warning)
            prod = a[:, None] * w
        # the tree: groups of 2^n products (L4384–4392), the first `kept` columns carried on (L4440)
        shape: tuple[int, ...] = (len(ids), align.rows, align.out_time, contract.columns, n)
        kc = None if known is None else known.reshape(shape)[..., :q, :].all(axis=4)
        if contract.reduce_op == "Add" and ctype is np.float32:
            c = tree(prod.reshape(shape)[..., :q, :])
        else:
            c = _reduce(prod.reshape(shape), None, (4,), contract.reduce_op)[0][..., :q]
        # the accumulator: the reduced Time digits (L4406–4434)
        acc: tuple[int, ...] = (len(ids), align.rows, *sizes, q)
        c, kc = _reduce(c.reshape(acc), None if kc is None else kc.reshape(acc), reduced, contract.reduce_op)
        if contract.reduce_op == "Add" and ctype is np.float32:
            c = one_nan(c)
        keep = [s for s, f in zip(sizes, kept, strict=True) if f]
        c = c.reshape(len(ids), align.rows, math.prod(keep), q)
        order = [0, 2, *(1 if lab == "r" else 3 for lab in out_tail)]
        outs.append(c.transpose(order))
        knowns.append(None if kc is None else kc.reshape(c.shape).transpose(order))
    if not outs:
        empty = np.zeros((0, 1, *(align.rows if lab == "r" else q for lab in out_tail)), dtype=ctype)
        return empty, np.zeros(empty.shape, dtype=bool)
    values = np.concatenate(outs)
    if all(k is None for k in knowns):
        return values, known_everywhere(values.shape)
    return values, np.concatenate([known_everywhere(v.shape) if k is None else k
                                   for v, k in zip(outs, knowns, strict=True)])
