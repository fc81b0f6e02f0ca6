"""The Inter-Slice Block: ``vector_inter_slice_reduce::<Slice2, Time2>(op)`` (manual L6583–6755).

Plan: Chip, Cluster and Packet are preserved; Slice and Time become ``Slice2`` and ``Time2``.  Every axis of the
input's Slice and Time that the output lacks is reduced; an axis the output has and the input lacks is
broadcast (the result is replicated over it, L6654–6672); an axis may move from Time into Slice
(promotion, L6673–6697); a dummy ``1 # n`` leaves the other positions invalid (L6636–6653).  The reduction
stays inside one cluster (L6732–6737): a reduced axis in Chip, Cluster or Packet is refused, as is an output
that loses or invents an index.

Execute: for every group of input elements that share the kept coordinates, fold them in ring order (slice,
then time) from the operator's identity, with the operator's arithmetic (i32 ``Add`` wraps, ``AddSat``
saturates at each step, f32 sums and products round at each step).  The cost is the input stream plus one
ring traversal of the group (L6738–6755, L4375).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from visa.engines.affine import Factors
from visa.engines.common import StreamData, StreamLayout, axes_text
from visa.engines.vector import arith, fast_inter, fast_inter_factors, fast_inter_plan, fast_inter_shared
from visa.engines.vector.cache import cached
from visa.engines.vector.fast_reduce import SHORTCUTS
from visa.engines.vector.ops import InterSliceReduceOpF32, InterSliceReduceOpI32
from visa.engines.vector.plan import dtype_name
from visa.engines.vector.relayout import joint_eval
from visa.errors import DtypeError, HardwareLimitError, LayoutError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.mapping.evaluate import BoolArray, IntArray
from visa.memory.known import is_everywhere

__all__ = ["InterReduceConfig", "plan_inter_reduce", "execute_inter_reduce", "unique_ids", "unique_counts",
           "rank_of"]

CALL = "vector_inter_slice_reduce"


@dataclass(frozen=True)
class InterReduceConfig:
    """The ring reduction: reduced and broadcast axes, the groups in ring order, and the ring size."""

    op: str
    dtype: str
    out: StreamLayout
    reduced: tuple[str, ...]
    broadcast: tuple[str, ...]
    #: (groups, r_max) flat input positions in ring order, -1 = none (:attr:`members`); None: ``lazy`` makes them
    given_members: IntArray | None
    #: output shape: the group of each output position, -1 = invalid (:attr:`out_group`); None: ``lazy`` makes it
    given_out_group: IntArray | None
    ring: int
    full: bool = False  # every group has r_max members (no -1 in ``members``)
    #: ``affine.factor`` of ``members`` (one row) and of the valid output positions with their groups, when the
    #: plan read them off the digits (``vector.inter-factors-digits``); None: ``fast_inter`` factors the arrays
    factors: tuple[Factors | None, Factors | None] | None = field(default=None, compare=False, repr=False)
    #: the groups read off the digits (``vector.inter-plan-digits``): the index arrays made when asked, not kept
    lazy: fast_inter_plan.Groups | None = field(default=None, repr=False)  # (compared: the groups it makes)

    @property
    def labels(self) -> IntArray | None:
        """A label per output row (``Chip × Cluster × Slice``): rows of one label hold the same groups, rows of
        two differ, when the plan read them off the digits (``vector.inter-row-labels``); None: found from the
        rows."""
        return None if self.lazy is None else self.lazy.labels

    @property
    def members(self) -> IntArray:
        """``(groups, r_max)``: each group's flat input positions in ring order, -1 = none."""
        if self.given_members is not None:
            return self.given_members
        assert self.lazy is not None
        return self.lazy.members()

    @property
    def out_group(self) -> IntArray:
        """Over the output's shape: the group of each output position, -1 = invalid."""
        if self.given_out_group is not None:
            return self.given_out_group
        assert self.lazy is not None
        return self.lazy.out_group()

    def out_valid(self) -> npt.NDArray[np.bool_]:
        """``out_group >= 0`` over the output's shape (from the digits when ``lazy`` has them: no group array)."""
        if self.given_out_group is not None:
            return np.asarray(self.given_out_group >= 0)
        assert self.lazy is not None
        return self.lazy.out_valid()

    def out_valid_box(self) -> tuple[bool, bool]:
        """``(out_valid().all(), out_valid().any())``, from the digits when ``lazy`` has them (no array)."""
        if self.given_out_group is not None:
            valid = self.given_out_group >= 0
            return bool(valid.all()), bool(valid.any())
        assert self.lazy is not None
        return self.lazy.out_valid_box()

    def out_rows(self, rows: IntArray) -> IntArray:
        """``out_group`` as rows of ``Chip × Cluster × Slice``, rows ``rows`` only (from the digits when ``lazy``
        has them: no group array)."""
        if self.given_out_group is not None:
            og = self.given_out_group
            out: IntArray = og.reshape(int(np.prod(og.shape[:3])), -1)[np.asarray(rows, dtype=np.int64)]
            return out
        assert self.lazy is not None
        return self.lazy.out_rows(rows)

    @property
    def members_shape(self) -> tuple[int, int]:
        """The shape of :attr:`members` (without making it)."""
        if self.given_members is not None:
            groups, ring = self.given_members.shape
            return int(groups), int(ring)
        assert self.lazy is not None
        return self.lazy.members_shape

    @property
    def out_shape(self) -> tuple[int, ...]:
        """The shape of :attr:`out_group`: the output stream's (without making it)."""
        if self.given_out_group is not None:
            return tuple(int(n) for n in self.given_out_group.shape)
        assert self.lazy is not None
        return self.lazy.out_shape

    def describe(self) -> str:
        """The configuration for the pass report (reduced and broadcast axes, ring size)."""
        red = ", ".join(self.reduced)
        extra = f", broadcast over {', '.join(self.broadcast)}" if self.broadcast else ""
        return f"inter_slice_reduce({self.op}) over {red} (ring of {self.ring} slices){extra}"


def plan_inter_reduce(hw: HardwareProfile, layout: StreamLayout, op: InterSliceReduceOpI32 | InterSliceReduceOpF32,
                      slice2: Mapping, time2: Mapping) -> InterReduceConfig:
    """Check the inter-slice rules and derive the ring groups (see the module docstring)."""
    return _plan(hw, layout, op.name, op.dtype, slice2, time2)


@cached(paths=(fast_inter_plan.DIGITS, fast_inter_plan.LABELS, fast_inter_factors.FACTORS))
def _plan(hw: HardwareProfile, layout: StreamLayout, op: str, op_dtype: str, slice2: Mapping,
          time2: Mapping) -> InterReduceConfig:
    v = hw.vector
    name = dtype_name(layout.dtype)
    if name not in v.input_dtypes:
        raise DtypeError(f"the inter-slice reduce works on i32 / f32 only, got {name}", call=CALL, line=6733,
                         fix="convert to i32 / f32 before the Vector Engine")
    if op_dtype != name or op not in v.inter_reduce_ops.get(name, frozenset()):
        raise DtypeError(f"{op} is not an inter-slice reduce of {name} (supported: "
                         f"{', '.join(sorted(v.inter_reduce_ops.get(name, frozenset())))})", call=CALL, line=6611,
                         fix=f"use an InterSliceReduceOp{name.upper()} operator")
    if layout.packet.size != v.way8_lanes:
        raise LayoutError(f"the inter-slice reduce takes Way8 packets of {v.way8_lanes} elements, got "
                          f"{layout.packet.size}", call=CALL, level="Packet", mapping=repr(layout.packet),
                          axis=axes_text(layout.packet), line=6603,
                          fix=f"collect into packets of {v.way8_lanes} i32/f32 elements (pad with # {v.way8_lanes})")
    if slice2.size > hw.dm.slices_per_cluster:
        raise HardwareLimitError(f"Slice2 {slice2!r} has {slice2.size} positions, but a cluster has "
                                 f"{hw.dm.slices_per_cluster} slices", call=CALL, level="Slice", mapping=repr(slice2),
                                 axis=axes_text(slice2), line=6734, fix="the reduction stays inside one cluster")
    src = (layout.chip, layout.cluster, layout.slice, layout.time, layout.packet)
    out = layout.with_(slice=slice2, time=time2)
    dst = (out.chip, out.cluster, out.slice, out.time, out.packet)
    in_axes = frozenset().union(*(m.axes for m in src))
    out_axes = frozenset().union(*(m.axes for m in dst))
    moved = frozenset().union(*(m.axes for m in (layout.slice, layout.time)))
    reduced = tuple(sorted(moved - (slice2.axes | time2.axes)))
    broadcast = tuple(sorted(out_axes - in_axes))  # Chip, Cluster and Packet do not change: only Slice2 / Time2's
    for lv, mp in (("Chip", layout.chip), ("Cluster", layout.cluster), ("Packet", layout.packet)):
        bad = sorted(set(reduced) & mp.axes)
        if bad:
            raise LayoutError(f"axis {bad[0]} is in {lv} {mp!r}; the inter-slice reduce reduces Slice and Time only "
                              f"and keeps Chip, Cluster and Packet: the reduction stays inside one cluster's slices",
                              call=CALL, level=lv, mapping=repr(mp), axis=bad[0], line=6733,
                              fix=f"keep {bad[0]} in Slice2 / Time2, or move it out of {lv}")
    if not reduced:
        raise LayoutError("Slice2 and Time2 keep every axis of Slice and Time, so nothing is reduced", call=CALL,
                          level="Slice", mapping=repr(slice2), line=6626,
                          fix="leave the reduced axis out of Slice2 / Time2 (a dummy 1 # n keeps the slice count)")
    kept = sorted(in_axes & out_axes)
    fast = fast_inter_plan.groups(src, dst, kept) if fast_inter_plan.DIGITS.on else None
    if fast is not None:  # plain digits: the same groups by broadcast (fast_inter_plan), the arrays made when asked
        ring = _ring(fast.first(), tuple(m.size for m in src))
        return InterReduceConfig(op, name, out, reduced, broadcast, None, None, ring, True, fast.factors, fast)
    icoords, ivalid = joint_eval(src)
    ocoords, ovalid = joint_eval(dst)
    sizes = {a: int(max(int(icoords[a].max(initial=0)), int(ocoords[a].max(initial=0))) + 1) for a in kept}
    gin = np.zeros(ivalid.shape, dtype=np.int64)
    gout = np.zeros(ovalid.shape, dtype=np.int64)
    for a in kept:
        gin = gin * sizes[a] + icoords[a]
        gout = gout * sizes[a] + ocoords[a]
    bound = math.prod(sizes.values())  # every group id is below it
    in_groups = unique_ids(gin[ivalid], bound)
    out_groups = unique_ids(gout[ovalid], bound)
    lost = np.setdiff1d(in_groups, out_groups, assume_unique=True)
    if lost.size:
        raise LayoutError(f"Slice2 {slice2!r} / Time2 {time2!r} do not hold every index left after reducing "
                          f"{', '.join(reduced)}", call=CALL, level="Slice", mapping=repr(slice2),
                          axis=_short(kept, (icoords, ivalid), (ocoords, ovalid)),
                          fix="each kept axis must appear in Slice2 or Time2 at its full size")
    extra = np.setdiff1d(out_groups, in_groups, assume_unique=True)
    if extra.size:
        raise LayoutError(f"Slice2 {slice2!r} / Time2 {time2!r} hold indices the input does not have", call=CALL,
                          level="Slice", mapping=repr(slice2), axis=_short(kept, (ocoords, ovalid), (icoords, ivalid)),
                          fix="pad the output with a dummy (1 # n) instead")
    # groups in ring order: by group, then slice, then time, then packet (flat C-order is chip, cluster, slice, …)
    flat_in = np.flatnonzero(ivalid.reshape(-1))
    g_of = gin.reshape(-1)[flat_in]
    order = np.argsort(g_of, kind="stable")
    g_sorted = g_of[order]
    members_flat = flat_in[order]
    uniq, start, counts = unique_counts(g_sorted, bound)
    r_max = int(counts.max(initial=0))
    full = bool(uniq.size) and uniq.size * r_max == members_flat.size
    if full:  # every group has r_max members, consecutive in the sorted order: a reshape
        members = members_flat.reshape(uniq.size, r_max)
    else:
        members = np.full((uniq.size, r_max), -1, dtype=np.int64)
        col = np.arange(members_flat.size) - np.repeat(start, counts)
        members[np.repeat(np.arange(uniq.size), counts), col] = members_flat
    out_group = np.where(ovalid, rank_of(uniq, gout, bound), -1)
    # ring size: distinct slices feeding one group (the first group's members, consecutive in the sorted order)
    first = members_flat[start[0]: start[0] + counts[0]] if uniq.size else None
    ring = _ring(first, ivalid.shape) if first is not None else 1
    return InterReduceConfig(op, name, out, reduced, broadcast, members, out_group, ring, full)


def _ring(first: IntArray, shape: tuple[int, ...]) -> int:
    """The ring size: how many distinct slices hold the first group's members (flat input positions ``first``
    over the stream's ``shape``: chip, cluster, slice, time, packet)."""
    return int(len(np.unique((first // (shape[3] * shape[4])) % shape[2])))


def unique_ids(ids: IntArray, bound: int) -> IntArray:
    """``np.unique(ids)`` for ids in ``[0, bound)``: a table of the ids present when ``bound`` is not much
    larger than the ids (numpy's hash-based ``unique`` took 40 ms per million group ids, issue 15)."""
    if bound > max(_TABLE_FROM, 8 * ids.size):
        return np.unique(ids)
    present = np.zeros(bound, dtype=bool)
    present[ids] = True
    return np.flatnonzero(present)


def unique_counts(sorted_ids: IntArray, bound: int) -> tuple[IntArray, IntArray, IntArray]:
    """``np.unique(sorted_ids, return_index=True, return_counts=True)`` for sorted ids in ``[0, bound)``, by
    counting (the first index of an id in a sorted array is the count of the smaller ids)."""
    if bound > max(_TABLE_FROM, 8 * sorted_ids.size):
        uniq, start, counts = np.unique(sorted_ids, return_index=True, return_counts=True)
        return uniq, start, counts
    every = np.bincount(sorted_ids, minlength=bound)
    uniq = np.flatnonzero(every)
    counts = every[uniq]
    return uniq, np.cumsum(counts) - counts, counts


def rank_of(uniq: IntArray, ids: IntArray, bound: int) -> IntArray:
    """``np.searchsorted(uniq, ids)`` for sorted unique ``uniq`` and ``ids`` in ``[0, bound)``: how many of
    ``uniq`` are below each id, read from a running count over ``[0, bound)``."""
    if bound > max(_TABLE_FROM, 8 * ids.size):
        out: IntArray = np.searchsorted(uniq, ids)
        return out
    below = np.zeros(bound + 1, dtype=np.int64)
    below[uniq + 1] = 1
    np.cumsum(below, out=below)
    return below[ids]


_TABLE_FROM = 1 << 20  # ids below this bound are always counted in a table


def _short(axes: list[str], a: tuple[dict[str, IntArray], BoolArray], b: tuple[dict[str, IntArray], BoolArray]
           ) -> str | None:
    """The axes of which ``a`` holds an index (at its valid positions) that ``b`` does not (all ``axes`` when
    only their combinations differ)."""
    short = [x for x in axes if np.setdiff1d(a[0][x][a[1]], b[0][x][b[1]]).size]
    return ", ".join(short or axes) or None


def execute_inter_reduce(cfg: InterReduceConfig, data: StreamData) -> StreamData:
    """Fold each group in ring order and lay the results out in Slice2 / Time2 (broadcast where new)."""
    if fast_inter_shared.SHARED.on:
        shared = fast_inter_shared.execute(cfg, data)
        if shared is not None:
            return shared
    if fast_inter.STRIDED.on:
        fast = fast_inter.execute(cfg, data)
        if fast is not None:
            return fast
    ident = arith.reduce_identity(cfg.op, cfg.dtype)
    vals = data.values.reshape(-1)
    m = cfg.members
    if cfg.full and SHORTCUTS.on:  # every group has r_max members: no identity padding, no masks (fast_reduce)
        x = vals[m]
        poison: BoolArray | None = None if is_everywhere(data.known) else \
            np.asarray(~data.known.reshape(-1)[m].all(axis=1))
    else:
        present = m >= 0
        idx = np.where(present, m, 0)
        x = np.where(present, vals[idx], np.asarray(ident, dtype=vals.dtype))
        poison = None if SHORTCUTS.on and is_everywhere(data.known) else \
            np.asarray((present & ~data.known.reshape(-1)[idx]).any(axis=1))
    red = arith.sequential_reduce(cfg.op, cfg.dtype, x, axis=1)
    og = cfg.out_group
    valid = og >= 0
    g = np.where(valid, og, 0)
    out_v: npt.NDArray[np.generic] = np.where(valid, red[g], np.zeros((), dtype=vals.dtype)).astype(vals.dtype)
    out_k: BoolArray = valid if poison is None else valid & ~poison[g]
    return StreamData(out_v, out_k)
