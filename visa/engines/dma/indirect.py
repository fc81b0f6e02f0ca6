"""Gather and scatter DMAs: the IndirectLoop sequencer entry (manual "Indirect Access", L1684–1688).

An IndirectLoop turns a sequencer entry ``(limit, stride)`` into ``(limit, [offset0, offset1, …])``: iteration
k adds its own offset.  The tensor DMA uses it for embedding lookups (L7994–8005, L8241) and the MoE dispatch,
weight gather and combine (L8646–8707):

* **gather** ``out[t, …] = table[ids[t], …]``: the *table* side is the source; the index entry walks the
  index positions t (regular destination steps) and reads table row ``ids[t]`` (per-iteration source offsets);
* **scatter** ``dst[ids[t], …] = src[t, …]``: the table side is the destination (per-iteration destination
  offsets), the source steps regularly over t.

The payload of one iteration (one row: the table with V fixed, the other side with the index axes fixed) is an
ordinary DMA planned by :func:`~visa.engines.dma.plan.plan` with the same rules (alignment, packets, engines);
the rows' offsets must keep those rules.  Three pure functions, as for every engine:

* :func:`plan_indirect` (the rules; the mypy plugin calls :func:`check_indirect_types` for the part the types
  decide): ids are i32, V is an axis of the table (not of its Chip) laid out as digits of its own, the index
  axes are new to the table, the other side names the index axes in place of V, and the row DMA is legal for
  every row;
* :func:`check_indices` and :func:`execute`: every index inside V (the refusal names the position and the
  value), no repeated scatter index, and only then the copy, row after row;
* :func:`indirect_cycles`: :func:`~visa.engines.dma.cost.cycles` of the row plan with the IndirectLoop entry
  outermost in each command: each packet of each iteration costed at its own addresses, one startup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.cache import cached
from visa.engines.dma import fast_plan
from visa.engines.dma.config import TABLE, DmaCost, DmaPlan, Side
from visa.engines.dma.cost import cycles
from visa.engines.dma.plan import plan
from visa.errors import AddressError, DtypeError, LayoutError, UnsupportedFeatureError
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of
from visa.mapping import canon as C
from visa.memory import fast_rows
from visa.memory.transfer import Endpoint, address_space
from visa.memory.transfer import copy as copy_bytes

__all__ = ["IndirectPlan", "check_indirect_types", "region_axes", "plan_indirect", "check_indices", "execute",
           "indirect_cycles", "check_prefix"]

INDEX_DTYPE = "i32"  # the index tensor's type (the MoE indices are i32, L8596–8707)


@dataclass(frozen=True)
class IndirectPlan:
    """A gather or scatter DMA: the row plan and the IndirectLoop's per-iteration byte offsets.

    ``table_steps[v]`` is the byte offset of table row v from row 0 (on the source for a gather, the
    destination for a scatter); ``index_steps[k]`` that of the k-th index position (C order over
    ``index_axes``) on the other side.  ``kind`` is ``"gather"`` or ``"scatter"``."""

    kind: str
    row: DmaPlan
    axis: str
    axis_size: int
    index_axes: tuple[str, ...]
    index_shape: tuple[int, ...]
    table_steps: tuple[int, ...]
    index_steps: tuple[int, ...]

    def offsets(self, ids: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(source, destination) byte offsets of each iteration for the flat index values ``ids`` (the first
        ``len(ids)`` index positions: a sparse prefix moves only those)."""
        table = np.asarray(self.table_steps, dtype=np.int64)[ids]
        index = np.asarray(self.index_steps, dtype=np.int64)[: ids.size]
        return (table, index) if self.kind == "gather" else (index, table)


def region_axes(axis: Mapping, call: str) -> tuple[str, ...]:
    """The axes of an indexed region, outermost first: ``m["V"]``, or consecutive whole axes ``m["A, C"]`` whose
    rows one index selects in C order (flat index ``a · |C| + c``; design API.md §8, the reference's
    multi-axis region).  A digit of an axis, padding or a repeated axis is refused."""
    names: list[str] = []
    for item in axis.items():
        dims = item.canon
        d = dims[0] if len(dims) == 1 else None
        if not (isinstance(d, C.Dim) and isinstance(d.atom, C.Sym) and d.stride == 1 and d.offset == 0
                and d.count == d.size == d.atom.size) or d.atom.name in names:
            one = not axis.axes and axis.size == 1  # (an axis of size 1 is no axis of a mapping: no dims)
            raise LayoutError(f"the indexed region must be whole axes, each once (m[\"V\"] or m[\"A, C\"]), got "
                              f"{axis!r}" + (" of size 1, which is no axis of a mapping: a table of one row has no "
                                             "rows to pick between" if one else ""), call=call, mapping=repr(axis),
                              axis=", ".join(sorted(axis.axes)) or (axis.text if one else None),
                              fix='move the one row itself (no gather), or give the table an axis of size ≥ 2'
                              if one else 'name whole axes of the table, e.g. m["V"] or m["A, C"]')
        names.append(d.atom.name)
    if not names:
        raise LayoutError(f"the indexed region {axis!r} names no axis", call=call, mapping=repr(axis),
                          fix='name an axis of the table, e.g. m["V"]')
    return tuple(names)


def check_indirect_types(kind: str, ids_dtype: str, axis: Mapping, table_levels: Sequence[tuple[str, Mapping]],
                         index_axes: Sequence[str], other_axes: frozenset[str] | None, call: str) -> tuple[str, ...]:
    """The rules the types decide (shared with the mypy plugin): the index type, the region's axes in the
    table (not its Chip), the index axes new to the table, and the other side naming the index axes in place of
    the region's (when ``other_axes``, the axes of the gather's destination or the scatter's source, are known).
    Returns the region's axis names."""
    if ids_dtype != INDEX_DTYPE:
        raise DtypeError(f"{kind} indices must be {INDEX_DTYPE}, got {ids_dtype} (L1684–1688)",
                         call=call, fix=f"cast the indices to {INDEX_DTYPE} first")
    region = region_axes(axis, call)
    element = dict(table_levels)["Element"]
    chip = dict(table_levels).get("Chip")
    for v in region:
        if not any(v in mp.axes for _, mp in table_levels):
            where = ", ".join(f"{level} {mp!r}" for level, mp in table_levels if level != "Chip")
            raise LayoutError(f"{v} is not an axis of the table ({where}): the IndirectLoop walks rows of the table "
                              "(L1684–1688)", call=call, level="Element", mapping=repr(element), axis=v,
                              fix=f"index an axis of the table, e.g. one of {', '.join(sorted(element.axes)) or '?'}")
        if chip is not None and v in chip.axes:
            raise LayoutError(f"{v} spreads the table over chips ({chip!r}); a gather or scatter picks rows within "
                              "each chip's table", call=call, level="Chip", mapping=repr(chip), axis=v,
                              fix=f"keep {v} in the table's Element (or Cluster/Slice in DM)")
    table_axes = frozenset().union(*(mp.axes for _, mp in table_levels))
    clash = sorted(set(index_axes) & table_axes)
    if clash:
        raise LayoutError(f"the index axis {clash[0]} is also an axis of the table: out[{clash[0]}, …] would name "
                          "two indices at once", call=call, axis=clash[0],
                          fix="give the index tensor axes of its own (say T)")
    if other_axes is not None:
        side = "destination" if kind == "gather" else "source"
        v = ", ".join(region)
        for r in region:
            if r in other_axes:
                raise LayoutError(f"the {side} names the indexed axis {r}; it must name the index axes "
                                  f"({', '.join(index_axes)}) in place of {v}", call=call, axis=r,
                                  fix=f"replace {v} by {', '.join(index_axes)} in the {side} mappings")
        want = (table_axes - set(region)) | set(index_axes)
        missing = sorted(want - other_axes)
        extra = sorted(other_axes - want)
        if missing:
            raise LayoutError(f"the {side} does not name axis {missing[0]}: {kind} moves "
                              f"{', '.join(sorted(want))} (the index axes in place of {v})", call=call,
                              axis=missing[0], fix=f"put {missing[0]} in the {side} mappings")
        if extra:
            raise LayoutError(f"the {side} names axis {extra[0]} that neither the table nor the indices have",
                              call=call, axis=extra[0], fix=f"drop {extra[0]} from the {side} mappings")
    return region


def _fix_axes(side: Side, names: frozenset[str], call: str) -> Side:
    """The side with the digits of ``names`` held at index 0 (pure padding digits of the same size): one row."""
    levels = []
    for level, mp in side.levels:
        dims: list[C.Dim | C.Lin] = []
        for d in mp.canon:
            if isinstance(d, C.Dim) and isinstance(d.atom, C.Sym) and d.atom.name in names:
                dims.append(C.Dim(None, 0, d.size, 1, d.offset))
                continue
            inner = Mapping.from_canon((d,), mp.axis_set).axes if isinstance(d, C.Dim) else mp.axes
            if inner & names:
                raise UnsupportedFeatureError(
                    f"{side.label()}: axis {', '.join(sorted(inner & names))} shares a digit with other axes in "
                    f"{level} {mp!r}; an IndirectLoop steps whole digits of one axis (L1684–1688)", call=call,
                    level=level, mapping=repr(mp), axis=", ".join(sorted(inner & names)),
                    fix="lay the indexed (or index) axis out as digits of its own (V, or V / n and V % n)")
            dims.append(d)
        levels.append((level, Mapping.from_canon(tuple(dims), mp.axis_set)))
    return Side(side.medium, tuple(levels), side.bit_address, side.name)


def _steps(hw: HardwareProfile, side: Side, names: Sequence[str], shape: tuple[int, ...], bits: int,
           call: str) -> tuple[int, ...]:
    """Byte offsets (in the side's DMA address space) of each index of ``names`` from index 0, others at 0
    (one offset, 0, for no axis: a single index)."""
    if not names:
        return (0,)
    pos, held = _locate(hw, side, bits, names, shape)
    if not held.all():
        k = int(np.argmin(held))
        at = np.unravel_index(k, shape)
        where = ", ".join(f"{a}: {int(i)}" for a, i in zip(names, at, strict=True))
        level, mp = side.levels[-1]
        raise LayoutError(f"{side.label()} does not hold index {{{where}}}", call=call, level=level, mapping=repr(mp),
                          axis=names[0], fix="give the side the whole extent of the axis")
    rel = (pos - pos[0]) * bits
    if np.any(rel % 8):
        raise AddressError(f"{side.label()}: a step of {', '.join(names)} starts inside a byte; the DMA addresses "
                           "bytes", call=call, axis=", ".join(names), fix="pad 4-bit rows to an even length (# 2)")
    return tuple(int(x) for x in rel // 8)


def _locate(hw: HardwareProfile, side: Side, bits: int, names: Sequence[str], shape: tuple[int, ...]
            ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """The DMA address (in elements) of each index of ``names`` (C order over ``shape``, other axes at 0), and
    whether the side holds it.  The levels are located as one pair (so an axis split between Slice and Element,
    ``G / 2`` and ``G % 2, D``, is found), then a DM position is moved to its slice's address space."""
    maps = [mp for _, mp in side.levels]
    joint = pair_of(*maps)
    grids = np.meshgrid(*(np.arange(n, dtype=np.int64) for n in shape), indexing="ij")
    coords = {a: g.reshape(-1) for a, g in zip(names, grids, strict=True)}
    for a in joint.axes - set(names):
        coords[a] = np.zeros(1, dtype=np.int64)
    pos, held = joint.locate(coords, (int(np.prod(shape)),))
    pos, held = np.broadcast_to(pos, held.shape).reshape(-1), held.reshape(-1)
    if side.medium != "host":
        element = maps[-1].size
        per_unit = address_space(hw, side.medium).unit_bytes * 8 // bits
        unit, e = np.divmod(pos, element)
        pos = unit * per_unit + e
    return pos, held


def _check_steps(hw: HardwareProfile, p: DmaPlan, steps: tuple[int, ...], side_k: int, names: str,
                 call: str) -> None:
    """Every iteration's start keeps the alignment of the row plan's side (L2424–2427)."""
    side = p.dst if side_k else p.src
    table = hw.dma.write_address_align if side_k else hw.dma.read_address_align
    align = table[TABLE[side.medium]]
    if (p.src.medium, p.dst.medium) == ("hbm", "dm"):
        align = max(align, hw.dma.hbm_to_dm_align)
    bad = [s for s in steps if s % align]
    if bad:
        what = "writes" if side_k else "reads"
        level, mp = side.levels[-1]
        raise AddressError(f"{side.label()}: the DMA {what} need {align}-byte aligned addresses (manual L2424–2427), "
                           f"but the row of {names} starts {bad[0]} bytes after the first", call=call, level=level,
                           mapping=repr(mp), axis=names,
                           fix=f"pad the axes inside {names} so that one row is a multiple of {align} bytes")


def plan_indirect(hw: HardwareProfile, dtype: type[dt.Scalar], kind: str, src: Side, dst: Side, axis: Mapping,
                  ids_dtype: str, index_axes: tuple[str, ...], index_shape: tuple[int, ...], *,
                  call: str) -> IndirectPlan:
    """Plan a gather (``kind="gather"``: ``src`` is the table) or a scatter (``dst`` is the table) of the rows
    of ``axis`` by an index tensor over ``index_axes`` (pure; raises the rule's ``VisaError``; a plan is kept per
    its arguments, by the mappings' exact identity: a gather launched again, say a decode step's block table,
    plans nothing; L1684–1688)."""
    return _plan_indirect(hw, dtype, kind, src, dst, axis, ids_dtype, tuple(index_axes), tuple(index_shape), call)


@cached(64, paths=(fast_plan.REBASE, fast_plan.ONE_SIDE))  # (its rows' plans: never a rebased one with the path off)
def _plan_indirect(hw: HardwareProfile, dtype: type[dt.Scalar], kind: str, src: Side, dst: Side, axis: Mapping,
                   ids_dtype: str, index_axes: tuple[str, ...], index_shape: tuple[int, ...],
                   call: str) -> IndirectPlan:
    table, other = (src, dst) if kind == "gather" else (dst, src)
    other_axes = frozenset().union(*(mp.axes for _, mp in other.levels))
    region = check_indirect_types(kind, ids_dtype, axis, table.levels, index_axes, other_axes, call)
    sizes = tuple(axis.axis_set.size(r) for r in region)
    size = int(np.prod(sizes))
    v = ", ".join(region)
    table_row = _fix_axes(table, frozenset(region), call)
    other_row = _fix_axes(other, frozenset(index_axes), call)
    row_src, row_dst = (table_row, other_row) if kind == "gather" else (other_row, table_row)
    row = plan(hw, dtype, row_src, row_dst, call=call, own_padding=False)
    bits = dtype.size_bits
    table_steps = _steps(hw, table, region, sizes, bits, call)
    index_steps = _steps(hw, other, index_axes, index_shape, bits, call)
    t_side, i_side = (0, 1) if kind == "gather" else (1, 0)
    _check_steps(hw, row, table_steps, t_side, v, call)
    _check_steps(hw, row, index_steps, i_side, ", ".join(index_axes), call)
    if kind == "scatter":
        _check_rows_apart(table_steps, row, v, call)
    return IndirectPlan(kind, row, v, size, index_axes, index_shape, table_steps, index_steps)


def _check_rows_apart(steps: tuple[int, ...], row: DmaPlan, v: str, call: str) -> None:
    """Distinct indices must write distinct bytes (else "repeated indices" would hide in the layout)."""
    if len(set(steps)) != len(steps):
        level, mp = row.dst.levels[-1]
        raise LayoutError(f"two rows of {v} share their bytes in {row.dst.label()}", call=call, level=level,
                          mapping=repr(mp), axis=v, fix=f"lay {v} out without broadcasting it")


def check_indices(p: IndirectPlan, ids: npt.NDArray[np.int64], call: str) -> None:
    """Refuse an index outside the axis (naming its position and value) and, for a scatter, a repeated one.

    ``ids`` has ``p.index_shape`` (axes ``p.index_axes``)."""
    flat = ids.reshape(-1)

    def where(k: int) -> str:
        at = np.unravel_index(k, p.index_shape)
        return ", ".join(f"{a}: {int(i)}" for a, i in zip(p.index_axes, at, strict=True))

    bad = np.flatnonzero((flat < 0) | (flat >= p.axis_size))
    if bad.size:
        k = int(bad[0])
        raise AddressError(f"index {{{where(k)}}} is {int(flat[k])}, outside {p.axis} (0..{p.axis_size - 1}); "
                           f"{bad.size} index(es) out of range, nothing was moved", call=call, axis=p.axis,
                           fix=f"keep every index in 0..{p.axis_size - 1}")
    if p.kind == "scatter":
        _, first, counts = np.unique(flat, return_index=True, return_counts=True)
        if (counts > 1).any():
            value = int(np.unique(flat)[np.argmax(counts > 1)])
            ks = np.flatnonzero(flat == value)
            raise AddressError(f"indices {{{where(int(ks[0]))}}} and {{{where(int(ks[1]))}}} both scatter to "
                               f"{p.axis} = {value}: a scatter writes each row once; nothing was moved",
                               call=call, axis=p.axis, fix="make the scatter indices distinct")


def execute(p: IndirectPlan, ids: npt.NDArray[np.int64], src: Endpoint, dst: Endpoint) -> None:
    """Run the DMA over the byte images, iteration after iteration (call :func:`check_indices` first)."""
    loops = [(lp.size, lp.src, lp.dst) for lp in p.row.all_loops()]
    so, do = p.offsets(ids.reshape(-1).astype(np.int64))
    if fast_rows.copy_rows(loops, p.row.base[0] + so, p.row.base[1] + do, src, dst):
        return  # (dma.gather-rows: the rows as one batch, the same bytes and written-state)
    for s, d in zip(so.tolist(), do.tolist(), strict=True):
        copy_bytes(loops, (p.row.base[0] + s, p.row.base[1] + d), src, dst)


def indirect_cycles(p: IndirectPlan, ids: npt.NDArray[np.int64]) -> DmaCost:
    """Cycles: the row plan's cost model (:func:`~visa.engines.dma.cost.cycles`) with the IndirectLoop entry
    outermost in each command (L1684–1688): one startup per command, every packet of every iteration at its own
    addresses (requests, DMN and HBM channel time, row switches)."""
    so, do = p.offsets(ids.reshape(-1).astype(np.int64))
    return cycles(p.row, (tuple(so.tolist()), tuple(do.tolist())))



def check_prefix(p: IndirectPlan, n: int, call: str) -> int:
    """A sparse prefix (design API.md §8): the first ``n`` index positions move, ``0 <= n <=`` their count."""
    total = int(np.prod(p.index_shape, dtype=np.int64))
    if not 0 <= n <= total:
        raise AddressError(f"the valid length {n} is outside 0..{total}, the index positions "
                           f"({', '.join(p.index_axes) or 'one index'}) the gather has", call=call,
                           axis=", ".join(p.index_axes) or None, fix=f"keep the valid length in 0..{total}")
    return n
