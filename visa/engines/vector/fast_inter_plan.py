"""Fast path ``vector.inter-plan-digits`` (issue 24): the Inter-Slice Block's ring groups derived from the
mappings' digits instead of from every stream position.

The reference plan (:func:`visa.engines.vector.inter.plan_inter_reduce`) evaluates the input and the output at
every position (a coordinate array per axis), numbers each position's group by its kept coordinates, sorts the
positions by group and ranks the output's groups: several full-size arrays, a sort and a hash-free unique over
millions of positions on a first launch (a ring sum of 4 × 262,144 i32 planned for 0.4 s).

When both layouts are plain digits (each digit of the joint mapping a stride of one axis, or a dummy ``1 # n``),
every index inside each digit's range is held, and the kept digits number the groups as a mixed radix (each
digit's weight in the group number larger than everything the digits below it can add), the same plan is a
broadcast: the groups in order are the kept digits, largest weight first; a group's members in ring order are the
reduced digits in position order (the reference sorts stably by group, then by position); each output position's
group rank is the sum of its kept digits' ranks, each output digit standing for the input digit of equal weight
and range.  Anything else (windows, skews, an output digit with no input digit of its weight: a layout the
reference refuses or groups unevenly) takes the reference.  ``tests/engines/vector/test_fast_inter_plan.py``
checks the plans equal, field by field, with the path off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from visa import fastpaths
from visa.engines.affine import Factors
from visa.engines.vector.fast_inter_factors import FACTORS, coarsest
from visa.mapping import Mapping, pair_of
from visa.mapping.canon import Dim, Sym
from visa.mapping.evaluate import IntArray, digit_weights

__all__ = ["DIGITS", "Groups", "groups"]

DIGITS = fastpaths.register("vector.inter-plan-digits", "the inter-slice reduce's ring groups from the mappings' "
                                                        "digits (broadcast) instead of sorting every position")


@dataclass(frozen=True)
class _Digit:
    axis: str | None  # None: a dummy or a digit of one value (it adds nothing)
    stride: int  # step of the axis's coordinate per digit value
    size: int
    count: int
    offset: int
    weight: int  # step of the buffer position per digit value


def _digits(levels: tuple[Mapping, ...]) -> list[_Digit] | None:
    """The joint mapping's digits, or None when one is not a plain digit of a symbol (or the coordinates it adds
    up to can leave an axis)."""
    canon = pair_of(*levels).canon
    out: list[_Digit] = []
    reach: dict[str, int] = {}
    limit: dict[str, int] = {}
    for d, w in zip(canon, digit_weights(canon), strict=True):
        if not isinstance(d, Dim) or d.count < 1:
            return None
        if d.atom is None or d.count == 1:
            if d.atom is not None and not isinstance(d.atom, Sym):
                return None
            out.append(_Digit(None, 0, d.size, d.count, d.offset, w))
            continue
        if not isinstance(d.atom, Sym):
            return None
        name = d.atom.name
        reach[name] = reach.get(name, 0) + (d.count - 1) * d.stride
        limit[name] = d.atom.size
        out.append(_Digit(name, d.stride, d.size, d.count, d.offset, w))
    if any(reach[a] >= limit[a] for a in reach):  # (the reference masks those positions: not plain)
        return None
    return out


def _reach(digits: list[_Digit], axis: str) -> int:
    """The largest coordinate of ``axis`` the digits reach (0 when they do not name it)."""
    return sum((d.count - 1) * d.stride for d in digits if d.axis == axis)


@dataclass(frozen=True)
class Groups:
    """The reference plan's ring groups, read off the digits (:func:`groups`): the shapes and factors at once, the
    index arrays made when asked (:meth:`members`, :meth:`out_group`) and not kept — a plan over every position
    of a large stream held them whole (the peer matmul's inter-slice reduce: 64 MB of int64 over 4 Mi positions,
    more than the plan caches' whole budget, while its fast paths read the factors only)."""

    members_shape: tuple[int, int]
    out_shape: tuple[int, ...]
    factors: tuple[Factors | None, Factors | None] | None
    base: int
    grid: tuple[tuple[int, int], ...]  # (count, weight) of the kept digits, then of the ring's
    ring_digits: int  # how many of ``grid`` are the ring's (last)
    out_digits: tuple[tuple[int, int, int, int], ...]  # per output digit: (size, count, offset, group rank step)

    def _grid(self, digits: tuple[tuple[int, int], ...]) -> IntArray:
        grid: IntArray = np.full((), self.base, dtype=np.int64)
        for count, weight in digits:
            grid = grid[..., None] + np.arange(count, dtype=np.int64) * weight
        return grid

    def members(self) -> IntArray:
        """``(groups, ring)``: each group's flat input positions in ring order (the reference's ``members``)."""
        return self._grid(self.grid).reshape(self.members_shape)

    def first(self) -> IntArray:
        """The first group's members (``members()[0]``)."""
        return self._grid(self.grid[len(self.grid) - self.ring_digits:]).reshape(-1)

    def out_group(self) -> IntArray:
        """The group rank of every output position, -1 where invalid (the reference's ``out_group``)."""
        n = len(self.out_digits)
        part = np.zeros((1,) * n, dtype=np.int64)
        for j, (_, count, _, step) in enumerate(self.out_digits):
            if step:
                view = [1] * n
                view[j] = count
                part = part + (np.arange(count, dtype=np.int64) * step).reshape(view)
        shape = tuple(size for size, _, _, _ in self.out_digits)
        if all(offset == 0 and count == size for size, count, offset, _ in self.out_digits):
            out = np.empty(shape, dtype=np.int64)  # every output position valid: one pass, no -1 fill
            out[...] = part
        else:
            out = np.full(shape, -1, dtype=np.int64)
            out[tuple(slice(offset, offset + count) for _, count, offset, _ in self.out_digits)] = part
        return out.reshape(self.out_shape)


def groups(src: tuple[Mapping, ...], dst: tuple[Mapping, ...], kept: list[str]) -> Groups | None:
    """The reference plan's groups (every group full) as :class:`Groups`, or None (take the reference).  Its
    ``factors`` (with ``vector.inter-factors-digits`` on, else None) are :func:`visa.engines.affine.factor` of the
    members (one row) and of the valid output positions with their groups (two rows), read off the digits
    (:mod:`visa.engines.vector.fast_inter_factors`)."""
    si, so = _digits(src), _digits(dst)
    if si is None or so is None:
        return None
    sizes = {a: max(_reach(si, a), _reach(so, a)) + 1 for a in kept}
    scale = {a: math.prod(sizes[b] for b in kept[k + 1:]) for k, a in enumerate(kept)}

    def g(d: _Digit) -> int:
        return d.stride * scale[d.axis] if d.axis is not None else 0

    keep = sorted((j for j, d in enumerate(si) if d.axis in scale), key=lambda j: -g(si[j]))
    for k, j in enumerate(keep):  # a mixed radix: each weight above all the digits below can add
        if g(si[j]) <= sum((si[i].count - 1) * g(si[i]) for i in keep[k + 1:]):
            return None
    ring = [j for j, d in enumerate(si) if d.count > 1 and d.axis not in scale]  # (a dummy of several: replicas)
    base = sum(d.offset * d.weight for d in si)
    n_groups = math.prod(si[j].count for j in keep)
    members_shape = (n_groups, math.prod(si[j].count for j in ring))
    # the output: each kept digit is an input kept digit of the same weight and range, each input one once
    rank = {g(si[j]): (math.prod(si[i].count for i in keep[k + 1:]), si[j].count) for k, j in enumerate(keep)}
    used: set[int] = set()
    ranks = [0] * len(so)  # each output digit's step of the group rank (0: the group repeats over it)
    for j, d in enumerate(so):
        if d.axis not in scale:  # a broadcast axis, a dummy: the group repeats over it
            continue
        got = rank.get(g(d))
        if got is None or got[1] != d.count or g(d) in used:
            return None
        used.add(g(d))
        ranks[j] = got[0]
    if len(used) != len(keep):
        return None
    factors = None
    if FACTORS.on:  # the members' digits; the valid outputs' box of digits, each with its group rank's step
        factors = (coarsest([(si[j].count, (si[j].weight,)) for j in (*keep, *ring)], (base,)),
                   coarsest([(d.count, (d.weight, r)) for d, r in zip(so, ranks, strict=True)],
                            (sum(d.offset * d.weight for d in so), 0)))
    return Groups(members_shape, tuple(m.size for m in dst), factors, base,
                  tuple((si[j].count, si[j].weight) for j in (*keep, *ring)), len(ring),
                  tuple((d.size, d.count, d.offset, r) for d, r in zip(so, ranks, strict=True)))
