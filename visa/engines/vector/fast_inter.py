"""Fast path of the Inter-Slice Block (issue 24), beside :mod:`visa.engines.vector.inter`, whose reference
``execute_inter_reduce`` it stands for; ``tests/engines/vector/test_fast_inter.py`` checks it against the
reference with the path switched off.

``vector.inter-strided``: the reference gathers each group's members through the configuration's index array
(``members``, groups × ring), folds them in ring order, and gathers each output position's group
(``out_group``).  In the layouts kernels use, both arrays are affine in a mixed radix (the ring is a digit of the
slices, the groups the other digits; the output repeats each group over its broadcast digits and leaves the
dummy slices of ``1 # n`` empty), so the members are a strided view of the stream and the results are written
through a strided view of the output (:mod:`visa.engines.affine`, derived once per configuration).  The fold is
the reference's own (:func:`visa.engines.vector.arith.sequential_reduce`, in the same ring order); wrapping i32
``Add`` sums in int32 directly (the same bits modulo 2^32 as its int64 sum wrapped).  A configuration whose
arrays are not affine, or whose groups have different sizes, takes the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines import affine
from visa.engines.cache import per_object
from visa.engines.common import StreamData
from visa.engines.vector import arith
from visa.memory.known import is_everywhere

if TYPE_CHECKING:
    from visa.engines.vector.fast_inter_plan import Groups
    from visa.engines.vector.inter import InterReduceConfig

__all__ = ["KNOWN_ROWS", "STRIDED", "execute", "members_known"]

STRIDED = fastpaths.register("vector.inter-strided", "inter-slice reduce through strided views of the stream and "
                                                     "the output instead of index gathers (affine ring groups)")

KNOWN_ROWS = fastpaths.register("vector.inter-known-rows", "whether each group's members are all known read off one "
                                "flag per stream row when the known-mask is a broadcast along its rows (a fetch's "
                                "per-slice mask), not from a flat copy of the whole mask")


@dataclass(frozen=True)
class _Views:
    """A configuration as strided views of flat arrays (strides in elements):

    - the members: group digits (in the order of the input's memory, outermost first) then the ring digits,
      ``in_sizes`` / ``in_strides`` from ``in_base``; ``rank_order`` puts the group digits back in the order of
      the groups' ranks (the reference's ``red`` order);
    - the valid outputs: ``out_sizes`` / ``out_strides`` from ``out_base``, each reading the group rank
      ``group_base + Σ p_d · group_strides_d`` (stride 0 where the result is broadcast)."""

    in_sizes: tuple[int, ...]
    in_strides: tuple[int, ...]
    in_base: int
    ring_axes: int
    rank_order: tuple[int, ...]
    out_sizes: tuple[int, ...]
    out_strides: tuple[int, ...]
    out_base: int
    group_strides: tuple[int, ...]
    group_base: int
    all_valid: bool
    #: ``out_group >= 0`` in some shape, or the groups that make it (:meth:`~.fast_inter_plan.Groups.out_valid`):
    #: an array or an object field (not a closure or a bound method holding one), so that the plan budget's walk
    #: weighs it and what it holds (:func:`~visa.engines.cache.plan_nbytes`; a review found a bound method's
    #: groups and their row labels unweighed)
    valid_src: npt.NDArray[np.bool_] | Groups = field(repr=False, compare=False)
    valid_shape: tuple[int, ...] = field(repr=False, compare=False, default=())

    @cached_property
    def valid(self) -> npt.NDArray[np.bool_]:
        """Read-only: ``out_group >= 0``, the known-mask when nothing is poison (made when first asked: the
        shared rows' path, ``vector.inter-shared``, never asks)."""
        src = self.valid_src
        mask = (src if isinstance(src, np.ndarray) else src.out_valid()).reshape(self.valid_shape)
        mask.flags.writeable = False
        return mask


@per_object(256)
def _views(cfg: InterReduceConfig) -> _Views | None:
    """The strided form of ``cfg`` (cached per configuration, under the plan budget:
    :func:`~visa.engines.cache.per_object`), or None."""
    return _derive(cfg)


def _derive(cfg: InterReduceConfig) -> _Views | None:
    groups, ring = cfg.members_shape
    if not cfg.full or groups * ring == 0:
        return None
    given = cfg.factors  # (read off the digits by the plan: vector.inter-factors-digits)
    f = given[0] if given is not None else affine.factor(cfg.members.reshape(1, -1))
    split = None if f is None else affine.split_inner(f, ring)
    if split is None:
        return None
    (sizes, strides, bases), ring_axes = split
    n_group = len(sizes) - ring_axes
    # the group digits in memory order (largest stride first), so that the fold reads the stream in order
    order = sorted(range(n_group), key=lambda d: -abs(strides[0][d]))
    in_sizes = tuple(sizes[d] for d in order) + sizes[n_group:]
    in_strides = tuple(strides[0][d] for d in order) + strides[0][n_group:]
    rank_order = tuple(order.index(d) for d in range(n_group))
    if given is not None:  # (the valid positions from the digits: neither the group array nor the mask made)
        every, some = cfg.out_valid_box()
        if not some:
            return None
        g = given[1]
        shape = cfg.out_shape
        # (the groups, not the configuration: the cached views must not hold their key alive)
        made: npt.NDArray[np.bool_] | Groups = (
            cfg.lazy if cfg.lazy is not None and cfg.given_out_group is None else cfg.out_valid())
    else:
        og = cfg.out_group.reshape(-1)
        valid = og >= 0
        positions = np.flatnonzero(valid)
        if positions.size == 0:
            return None
        g = affine.factor(np.stack([positions, og[positions]]))
        every = bool(valid.all())
        made, shape = valid, cfg.out_shape
    if g is None:
        return None
    out_sizes, (out_strides, group_strides), (out_base, group_base) = g
    return _Views(in_sizes, in_strides, bases[0], ring_axes, rank_order, out_sizes, out_strides, out_base,
                  group_strides, group_base, every, made, tuple(shape))


def _members(flat: npt.NDArray[Any], v: _Views) -> npt.NDArray[Any]:
    """The members of every group, ``(group digits…, ring)``, a view of ``flat`` (a copy if the ring spans
    digits that do not merge)."""
    x = affine.view(flat, v.in_sizes, v.in_strides, v.in_base)
    return x if v.ring_axes == 1 else x.reshape(*v.in_sizes[: len(v.in_sizes) - v.ring_axes], -1)


def members_known(known: npt.NDArray[np.bool_], v: _Views) -> npt.NDArray[np.bool_]:
    """Whether every member of each group is known: ``_members(known, v).all(axis=-1)`` over the flat mask, a
    contiguous array of the group digits' shape.  With ``vector.inter-known-rows`` a mask that is a broadcast along
    its trailing axes (one flag per row: a fetch's known-mask of the slices holding data) is read row by row when
    every member digit either steps whole rows or stays within a row (:func:`_known_by_row`): no flat copy of the
    mask (a ring sum's 4 MiB, fresh pages)."""
    got = _known_by_row(known, v) if KNOWN_ROWS.on else None
    if got is not None:
        return got
    return np.ascontiguousarray(_members(np.ascontiguousarray(known).reshape(-1), v).all(axis=-1))


def _known_by_row(known: npt.NDArray[np.bool_], v: _Views) -> npt.NDArray[np.bool_] | None:
    """:func:`members_known` from one flag per row of ``known``, or None.  A row is the block of trailing axes
    whose stride is 0 (``L`` positions of the flat mask, all equal).  A member at flat position ``p = base +
    Σ d_k · s_k`` is in row ``p // L``; when every digit's stride is a multiple of ``L`` (it steps ``s_k / L`` rows)
    or the digits that are not keep ``base % L`` plus their offsets within ``[0, L)`` (they stay in the row), that
    row is ``base // L + Σ_rows d_k · s_k / L`` exactly: the members' flags are a strided view of the rows' flags
    (stride 0 along the digits within a row).  The ring digits along which the view is constant are dropped from
    the reduction (``all`` of equal values is the value; no digit is empty), the group digits along which it is
    constant broadcast back."""
    trailing = 0
    while trailing < known.ndim and known.strides[known.ndim - 1 - trailing] == 0:
        trailing += 1
    if trailing == 0 or known.size == 0:
        return None
    row = int(np.prod(known.shape[known.ndim - trailing:], dtype=np.int64))
    first: tuple[Any, ...] = (Ellipsis, *([0] * trailing))  # (each row's first position)
    flags = np.ascontiguousarray(known[first]).reshape(-1)
    b_row, b_in = divmod(v.in_base, row)
    lo = hi = b_in
    strides = []
    for n, s in zip(v.in_sizes, v.in_strides, strict=True):
        if s % row == 0:
            strides.append(s // row)
        else:
            strides.append(0)
            lo, hi = lo + min(0, (n - 1) * s), hi + max(0, (n - 1) * s)
    if lo < 0 or hi >= row or any(n == 0 for n in v.in_sizes):
        return None
    n_group = len(v.in_sizes) - v.ring_axes
    # the digits along which the flags change; the others taken once
    sizes = tuple(n if st else 1 for n, st in zip(v.in_sizes, strides, strict=True))
    x = affine.view(flags, sizes, tuple(strides), b_row)
    small = x.all(axis=tuple(range(n_group, len(sizes)))) if v.ring_axes else x
    out: npt.NDArray[np.bool_] = np.ascontiguousarray(np.broadcast_to(small, tuple(v.in_sizes[:n_group])))
    return out


def _fold(op: str, dtype: str, x: npt.NDArray[Any], bound: int) -> npt.NDArray[Any]:
    """``arith.sequential_reduce(op, dtype, x)`` over the last axis (the ring, in order), computed ring step by
    ring step over every group at once (the stream is read in memory order); ``bound`` is a bound of the
    magnitude of every member (for ``AddSat``: no partial sum of ``ring · bound`` can saturate)."""
    ring = x.shape[-1]
    if dtype == "i32":
        if op == "Add" or (op == "AddSat" and ring * bound <= arith.I32_MAX):
            return np.asarray(np.add.reduce(x, axis=-1, dtype=np.int32))  # (wraps as int64 does modulo 2^32)
        if op == "Max":
            return np.asarray(np.max(x, axis=-1))
        if op == "Min":
            return np.asarray(np.min(x, axis=-1))
        if op == "AddSat":  # saturating at every step, in ring order
            acc = x[..., 0].astype(np.int64)
            for k in range(1, ring):
                acc += x[..., k]
                np.clip(acc, arith.I32_MIN, arith.I32_MAX, out=acc)
            return acc.astype(np.int32)
    elif op in ("Add", "Mul"):  # f32: rounded at every step, in ring order (numpy's accumulate, as the reference)
        ufunc = np.add if op == "Add" else np.multiply
        with np.errstate(all="ignore"):
            acc = x[..., 0].astype(np.float32)
            for k in range(1, ring):
                ufunc(acc, x[..., k], out=acc)
            return acc + np.float32(0.0) if op == "Add" else acc
    return arith.sequential_reduce(op, dtype, x, axis=-1)


def execute(cfg: InterReduceConfig, data: StreamData) -> StreamData | None:
    """The reference's result through strided views, or None (the caller runs the reference)."""
    v = _views(cfg)
    if v is None:
        return None
    vals = data.values.reshape(-1)
    bound = 0
    if cfg.op == "AddSat" and vals.size:
        bound = max(abs(int(vals.min())), abs(int(vals.max())))
    red = _fold(cfg.op, cfg.dtype, _members(vals, v), bound)
    ranked = np.ascontiguousarray(red.transpose(v.rank_order), dtype=vals.dtype).reshape(-1)
    shape = cfg.out_shape
    out = np.empty(shape, dtype=vals.dtype) if v.all_valid else np.zeros(shape, dtype=vals.dtype)
    _scatter(out, ranked, v)
    if is_everywhere(data.known):
        return StreamData(out, v.valid)
    whole = members_known(data.known, v)
    kept = np.ascontiguousarray(whole.transpose(v.rank_order)).reshape(-1)  # a poisoned member: the group poison
    known: npt.NDArray[np.bool_] = np.zeros(shape, dtype=bool)
    _scatter(known, kept, v)
    return StreamData(out, known)


def _scatter(out: npt.NDArray[Any], ranked: npt.NDArray[Any], v: _Views) -> None:
    """Write each valid output position's group result (``ranked``: by group rank) into ``out``: the results
    gathered once in the output's order (small), then written broadcast over the digits that repeat them."""
    kept = tuple(d for d, s in enumerate(v.group_strides) if s != 0)
    small = np.ascontiguousarray(affine.view(ranked, tuple(v.out_sizes[d] for d in kept),
                                             tuple(v.group_strides[d] for d in kept), v.group_base))
    shape = tuple(n if s != 0 else 1 for n, s in zip(v.out_sizes, v.group_strides, strict=True))
    dst = affine.view(out.reshape(-1), v.out_sizes, v.out_strides, v.out_base)
    dst[...] = small.reshape(shape)
