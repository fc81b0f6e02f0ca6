"""Fast path ``vector.inter-shared`` (issue 24), beside :mod:`visa.engines.vector.inter`, whose reference
``execute_inter_reduce`` it stands for: a result broadcast over slices is computed once per distinct slice.

An inter-slice reduce whose ``Slice2`` holds an axis the input lacks leaves each group's result in every slice
of that axis (L6654–6672): the reference's ``matmul_16384`` reduces 32 slices and broadcasts the sum over the 32.
The output's slices then fall in classes of equal rows: their positions read the same groups (``out_group``
row by row).  The result is a :class:`~visa.engines.shared.SharedRows` holding one row per class — the groups
folded as :mod:`visa.engines.vector.fast_inter` folds them (the reference's ring order), gathered into the class
rows with the reference's zeros and poison where a position is invalid — so that the cast and commit after it
convert and write one slice per class.  A configuration whose output rows are mostly distinct, or that
:mod:`~visa.engines.vector.fast_inter` cannot fold, takes the other paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from visa import fastpaths
from visa.engines.cache import per_object
from visa.engines.common import StreamData
from visa.engines.shared import SharedRows
from visa.engines.vector import fast_inter, fast_row_classes
from visa.memory.known import is_everywhere, known_everywhere

if TYPE_CHECKING:
    from visa.engines.vector.inter import InterReduceConfig

__all__ = ["SHARED", "STRIDED", "execute"]

SHARED = fastpaths.register("vector.inter-shared", "an inter-slice reduce broadcast over slices computes one row per "
                                                   "class of equal slices (SharedRows) instead of every slice")

STRIDED = fastpaths.register("vector.inter-shared-strided", "vector.inter-shared's class rows read as strided rows "
                             "of the folded groups when each is a row part plus one column pattern whose digits never "
                             "carry, not gathered by group through a transposed copy")

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class _Classes:
    """The output's rows in classes: each flat ``(Chip, Cluster, Slice)`` row's class, and per class the group
    each position reads (0 where invalid) and where it is valid (``(classes, Time · Packet)``).  With ``parts``
    (``(row, row_ok, col, col_ok)``: :meth:`~visa.engines.vector.fast_inter_plan.Groups.out_row_parts` of the
    classes' rows) the groups are made when first asked."""

    owner: IntArray
    made: IntArray | None
    valid: BoolArray
    all_valid: bool
    parts: tuple[IntArray, BoolArray, IntArray, BoolArray] | None = None

    @cached_property
    def groups(self) -> IntArray:
        """Per class the group each position reads, 0 where invalid."""
        if self.made is not None:
            return self.made
        assert self.parts is not None
        row, _, col, _ = self.parts
        out: IntArray = row[:, None] + col[None, :]
        np.copyto(out, 0, where=~self.valid)
        out.flags.writeable = False
        return out


def _unique_rows(rows: IntArray, weights: IntArray | None = None) -> tuple[IntArray, IntArray]:
    """``np.unique(rows, axis=0, return_inverse=True)``, grouping by a hash of each row first: the rows of one
    hash are checked equal to their first (a collision falls back to the sort of whole rows), and only the
    distinct rows are sorted.

    >>> r = np.array([[3, 1], [0, 2], [3, 1], [0, 2], [0, 1]])
    >>> u, inverse = np.unique(r, axis=0, return_inverse=True)
    >>> [a.tolist() for a in _unique_rows(r)] == [u.tolist(), inverse.reshape(-1).tolist()]
    True
    """
    w: IntArray = (np.asarray(np.random.default_rng(0x5EED).integers(1, 1 << 62, size=rows.shape[1]), np.int64)
                   if weights is None else weights)  # a test passes zeros to force every row into one key
    with np.errstate(over="ignore"):
        keys = (rows.astype(np.int64, copy=False) * w).sum(axis=1)
    _, first, by_key = np.unique(keys, return_index=True, return_inverse=True)
    by_key = by_key.reshape(-1)
    if not np.array_equal(rows, rows[first[by_key]]):
        u, inv = np.unique(rows, axis=0, return_inverse=True)
        return u, inv.reshape(-1)
    uniq, order = np.unique(rows[first], axis=0, return_inverse=True)
    return uniq, order.reshape(-1)[by_key]


@per_object(256)
def _classes(cfg: InterReduceConfig) -> _Classes | None:
    """The classes of ``cfg``'s output rows (cached per configuration, under the plan budget:
    :func:`~visa.engines.cache.per_object`), or None when fewer than half of the rows repeat another."""
    n_rows = int(np.prod(cfg.out_shape[:3]))
    found = None
    if n_rows > 1:
        got: tuple[IntArray, IntArray] | None = None
        if cfg.labels is not None and cfg.labels.size == n_rows:  # (vector.inter-row-labels: one row per label read)
            parted = _parted(cfg, n_rows)
            if parted is not None:
                return parted
            got = fast_row_classes.from_row_constants(cfg.out_rows, cfg.labels)  # (the labels are the constants)
        else:
            og = cfg.out_group
            rows = og.reshape(n_rows, -1)
            got = fast_row_classes.unique_rows(rows) if fast_row_classes.ROWS.on else None
            got = got if got is not None else _unique_rows(rows)
        uniq, inverse = got
        if 2 * uniq.shape[0] <= n_rows:
            valid = uniq >= 0
            owner = inverse.reshape(-1).astype(np.int64)
            for a in (owner, valid):
                a.flags.writeable = False
            # (the rows found are a new array of their own, made above: their -1 become 0 in place, not in a copy)
            groups = uniq if uniq.base is None and uniq.flags.writeable else np.array(uniq)
            np.copyto(groups, 0, where=~valid)
            found = _Classes(owner, groups, valid, bool(valid.all()))
    return found


def _parted(cfg: InterReduceConfig, n_rows: int) -> _Classes | None:
    """:func:`_classes` from the labels (``vector.inter-row-labels``) when the classes' rows are a row part plus a
    column part of non-negative groups (:meth:`~visa.engines.vector.fast_inter_plan.Groups.out_row_parts`): the
    same owners, valid positions and (made when asked) groups, none of the class rows made here; else None."""
    lazy = cfg.lazy
    if lazy is None or cfg.given_out_group is not None or cfg.labels is None:
        return None
    # (fast_row_classes.from_row_constants: one row per label, in the labels' ascending order)
    _, first, of = np.unique(np.asarray(cfg.labels, dtype=np.int64), return_index=True, return_inverse=True)
    parts = lazy.out_row_parts(first)
    if parts is None:
        return None
    row, row_ok, col, col_ok = parts
    if bool((row[row_ok] < 0).any()) or bool((col[col_ok] < 0).any()):
        return None  # (a valid group below 0 would read as invalid in out_rows' -1: not so here)
    if 2 * first.size > n_rows:
        return None
    valid = row_ok[:, None] & col_ok[None, :]
    owner = of.reshape(-1).astype(np.int64)
    for a in (owner, valid):
        a.flags.writeable = False
    return _Classes(owner, None, valid, bool(valid.all()), parts)


def _strided_rows(red: npt.NDArray[np.generic], rank_order: tuple[int, ...],
                  parts: tuple[IntArray, BoolArray, IntArray, BoolArray]) -> npt.NDArray[np.generic] | None:
    """``red.transpose(rank_order).reshape(-1)[row[:, None] + col[None, :]]`` (valid rows; any value in the
    others) as strided rows of ``red`` when that is one: every column valid, each group digit's largest row part
    plus its largest column part below the digit's size (the sum then carries nowhere: a group's position in
    ``red`` is its row part's plus its column part's), and the columns' positions evenly spaced.  Else None."""
    row, row_ok, col, col_ok = parts
    if not red.flags.c_contiguous or red.size == 0 or not bool(col_ok.all()) or col.size == 0:
        return None
    shape = tuple(red.shape[i] for i in rank_order)
    steps = tuple(red.strides[i] // red.itemsize for i in rank_order)
    rows = row[row_ok]
    if rows.size == 0 or int(rows.max()) >= red.size or int(col.max()) >= red.size:
        return None
    r_digits, c_digits = np.unravel_index(rows, shape), np.unravel_index(col, shape)
    if any(int(r.max()) + int(c.max()) >= n for r, c, n in zip(r_digits, c_digits, shape, strict=True)):
        return None
    r_pos = sum((d * w for d, w in zip(r_digits, steps, strict=True)), np.zeros(rows.shape, dtype=np.int64))
    c_pos = sum((d * w for d, w in zip(c_digits, steps, strict=True)), np.zeros(col.shape, dtype=np.int64))
    step = int(c_pos[1] - c_pos[0]) if c_pos.size > 1 else 0
    if c_pos.size > 1 and not bool((np.diff(c_pos) == step).all()):
        return None
    start = np.full(row.shape, int(c_pos[0]), dtype=np.int64)  # (invalid rows: the columns' own groups)
    start[row_ok] += r_pos
    flat = red.reshape(-1)
    # (rows of the view are read only at ``start``: every element read is a group's position in ``red``)
    view = np.lib.stride_tricks.as_strided(flat, shape=(flat.size, col.size), strides=(red.itemsize,
                                                                                       step * red.itemsize),
                                           writeable=False)
    return view[start]


def execute(cfg: InterReduceConfig, data: StreamData) -> SharedRows | None:
    """The reference's result as :class:`~visa.engines.shared.SharedRows`, or None (another path runs)."""
    c = _classes(cfg)
    v = None if c is None else fast_inter._views(cfg)
    if c is None or v is None:
        return None
    vals = data.values.reshape(-1)
    bound = 0
    if cfg.op == "AddSat" and vals.size:
        bound = max(abs(int(vals.min())), abs(int(vals.max())))
    red = fast_inter._fold(cfg.op, cfg.dtype, fast_inter._members(vals, v), bound)
    rows = _strided_rows(red, v.rank_order, c.parts) if c.parts is not None and STRIDED.on else None
    if rows is not None:  # (vector.inter-shared-strided)
        out = rows.astype(vals.dtype, copy=False)
    else:
        ranked = np.ascontiguousarray(red.transpose(v.rank_order), dtype=vals.dtype).reshape(-1)  # by group rank
        out = ranked[c.groups]
    if not c.all_valid:
        out[~c.valid] = 0
    tail = cfg.out_shape[3:]
    inner_shape = (1, 1, c.valid.shape[0], *tail)
    if is_everywhere(data.known):
        known = known_everywhere(inner_shape) if c.all_valid else c.valid.reshape(inner_shape)
    else:  # a poisoned member poisons its group (as the reference)
        whole = fast_inter.members_known(data.known, v)
        got = _strided_rows(whole, v.rank_order, c.parts) if rows is not None and c.parts is not None else None
        if got is not None:  # (vector.inter-shared-strided: the same digits as the values' rows)
            known = (c.valid & np.asarray(got, dtype=bool)).reshape(inner_shape)
        else:
            kept = np.ascontiguousarray(whole.transpose(v.rank_order)).reshape(-1)
            known = (c.valid & kept[c.groups]).reshape(inner_shape)
    lead = cfg.out_shape[:3]
    return SharedRows(StreamData(out.reshape(inner_shape), known), c.owner, (lead[0], lead[1], lead[2]))
