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

``vector.inter-row-labels``: the same digits give the output rows' classes of equal groups (a label per row,
:func:`_row_labels`), which :mod:`visa.engines.vector.fast_inter_shared` needs: without them it finds the equal
rows by hashing and comparing every row of the 16 MiB group array (the first-launch ring sum: 512 rows of 4,096, 65
classes); with them it reads one row per class, sorts those as ``np.unique`` does and ranks every row by its
label (:func:`visa.engines.vector.fast_row_classes.from_labels`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.affine import Factors
from visa.engines.vector.fast_inter_factors import FACTORS, coarsest
from visa.mapping import Mapping, pair_of
from visa.mapping.canon import Dim, Sym
from visa.mapping.evaluate import IntArray, digit_weights

__all__ = ["DIGITS", "LABELS", "Groups", "groups"]

DIGITS = fastpaths.register("vector.inter-plan-digits", "the inter-slice reduce's ring groups from the mappings' "
                                                        "digits (broadcast) instead of sorting every position")

LABELS = fastpaths.register("vector.inter-row-labels", "with vector.inter-plan-digits, the output rows' classes of "
                                                       "equal groups labelled from the digits, not found by hashing "
                                                       "and comparing every row of the group array")


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
    #: a label per output row (``vector.inter-row-labels``, else None): :func:`_row_labels`
    labels: IntArray | None = field(default=None, compare=False, repr=False)

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

    def out_valid_box(self) -> tuple[bool, bool]:
        """``(every, some)``: whether every output position holds a group, and whether one does — what
        :meth:`out_valid` says with ``all()`` and ``any()``, read off the digits' valid ranges (no array)."""
        every = all(offset == 0 and count == size for size, count, offset, _ in self.out_digits)
        some = all(count > 0 for _, count, _, _ in self.out_digits) and math.prod(self.out_shape) > 0
        return every and some, some

    def out_valid(self) -> npt.NDArray[np.bool_]:
        """``out_group() >= 0`` (where an output position holds a group), without making the group array: the
        box of every digit's valid range."""
        shape = tuple(size for size, _, _, _ in self.out_digits)
        if all(offset == 0 and count == size for size, count, offset, _ in self.out_digits):
            return np.ones(self.out_shape, dtype=bool)
        out = np.zeros(shape, dtype=bool)
        out[tuple(slice(offset, offset + count) for _, count, offset, _ in self.out_digits)] = True
        return out.reshape(self.out_shape)

    def out_rows(self, rows: IntArray) -> IntArray:
        """``out_group().reshape(n, -1)[rows]`` (rows of the first three levels, Chip × Cluster × Slice), without
        making the group array: each position's digits decoded from its flat index, its group the sum of
        ``(digit - offset) · step`` where every digit lies in its valid range, else -1 (as :meth:`out_group`)."""
        cols = math.prod(self.out_shape[3:])
        parts = self.out_row_parts(rows)
        if parts is not None:  # the rows fall on whole digits: a row's part plus a column's part, broadcast
            r_group, r_ok, c_group, c_ok = parts
            out: IntArray = r_group[:, None] + c_group[None, :]
            if not (r_ok.all() and c_ok.all()):
                np.copyto(out, -1, where=~(r_ok[:, None] & c_ok[None, :]))
            return out
        at = np.asarray(rows, dtype=np.int64).reshape(-1, 1) * cols + np.arange(cols, dtype=np.int64)
        group, ok = self._decode(at, self.out_digits)
        out = np.where(ok, group, -1)
        return out

    def out_row_parts(self, rows: IntArray
                      ) -> tuple[IntArray, npt.NDArray[np.bool_], IntArray, npt.NDArray[np.bool_]] | None:
        """When the rows of the first three levels fall on whole output digits: :meth:`out_rows` as a row part and
        a column part (``out_rows(rows)[i, j]`` is ``row[i] + col[j]`` where ``row_ok[i] and col_ok[j]``, else -1):
        ``(row, row_ok, col, col_ok)``; else None."""
        cols = math.prod(self.out_shape[3:])
        k, inner = len(self.out_digits), 1
        while k > 0 and inner < cols:
            k -= 1
            inner *= self.out_digits[k][0]
        if inner != cols:
            return None
        r_group, r_ok = self._decode(np.asarray(rows, dtype=np.int64), self.out_digits[:k])
        c_group, c_ok = self._decode(np.arange(cols, dtype=np.int64), self.out_digits[k:])
        return r_group, r_ok, c_group, c_ok

    @staticmethod
    def _decode(at: IntArray, digits: tuple[tuple[int, int, int, int], ...]) -> tuple[IntArray, npt.NDArray[np.bool_]]:
        """For flat indices ``at`` over ``digits`` (``(size, count, offset, step)``, outermost first): the sum of
        ``(digit - offset) · step`` and whether every digit lies in its valid range."""
        rest = at
        group = np.zeros(at.shape, dtype=np.int64)
        ok = np.ones(at.shape, dtype=bool)
        for size, count, offset, step in reversed(digits):
            rest, digit = np.divmod(rest, size)
            if offset != 0 or count != size:
                ok &= (digit >= offset) & (digit < offset + count)
            if step:
                group += (digit - offset) * step
        return group, ok


def groups(src: tuple[Mapping, ...], dst: tuple[Mapping, ...], kept: list[str]) -> Groups | None:
    """The reference plan's groups (every group full) as :class:`Groups`, or None (take the reference).  Its
    ``factors`` (with ``vector.inter-factors-digits`` on, else None) are :func:`visa.engines.affine.factor` of the
    members (one row) and of the valid output positions with their groups (two rows), read off the digits
    (:mod:`visa.engines.vector.fast_inter_factors`); its ``labels`` (with ``vector.inter-row-labels`` on, else None)
    the output rows' classes (:func:`_row_labels`)."""
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
    labels = _row_labels(so, ranks, tuple(m.size for m in dst)) if LABELS.on else None
    factors = None
    if FACTORS.on:  # the members' digits; the valid outputs' box of digits, each with its group rank's step
        factors = (coarsest([(si[j].count, (si[j].weight,)) for j in (*keep, *ring)], (base,)),
                   coarsest([(d.count, (d.weight, r)) for d, r in zip(so, ranks, strict=True)],
                            (sum(d.offset * d.weight for d in so), 0)))
    return Groups(members_shape, tuple(m.size for m in dst), factors, base,
                  tuple((si[j].count, si[j].weight) for j in (*keep, *ring)), len(ring),
                  tuple((d.size, d.count, d.offset, r) for d, r in zip(so, ranks, strict=True)), labels)


def _row_labels(so: list[_Digit], ranks: list[int], sizes: tuple[int, ...]) -> IntArray | None:
    """A label for each output row (the positions of the first three levels, Chip × Cluster × Slice, in order;
    ``vector.inter-row-labels``): rows of one label hold the same groups, rows of two labels differ; None when
    the rows do not fall on whole digits.

    A position's group is ``Σ (p_j - offset_j) · rank_j`` over the digits when every digit is inside its valid
    range, else -1 (:func:`groups`).  When the row length is the product of the innermost digits' sizes, a row
    is its row digits' constant plus the same column pattern (every row alike): a row outside its digits' ranges
    is all -1; the others are the pattern (some column is valid: every count is at least 1) shifted by their
    constant, which is at least 0, so equal constants give equal rows and different ones differ at every valid
    column.  The label: -1 for a row of no valid position, else its constant."""
    cols = math.prod(sizes[3:])
    k, inner = len(so), 1
    while k > 0 and inner < cols:
        k -= 1
        inner *= so[k].size
    if inner != cols or any(d.count < 1 for d in so):
        return None
    lab: IntArray = np.zeros((), dtype=np.int64)
    ok: npt.NDArray[np.bool_] = np.ones((), dtype=bool)
    for d, r in zip(so[:k], ranks[:k], strict=True):
        idx = np.arange(d.size, dtype=np.int64)
        lab = lab[..., None] + (idx - d.offset) * r
        ok = ok[..., None] & (idx >= d.offset) & (idx < d.offset + d.count)
    out: IntArray = np.where(ok, lab, -1).reshape(-1)
    return out
