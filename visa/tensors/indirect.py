"""Staged gather sources, scatter destinations and in-place DMAs (manual L1684–1688,
embedding L7994–8005 and L8241, KV-cache append L8286–8297, MoE L8646–8707).

* ``table.view().gather(m["V"], ids)`` is a :class:`GatherSource`: ``.to_dm(Cluster, Slice, Element, ctx.tdma,
  addr)`` or ``.to_hbm(Chip, Element, ctx.tdma, addr)`` moves ``out[t, …] = table[ids[t], …]`` into a new
  tensor laid out as given (the index axes in place of V).
* ``dst.view().scatter(m["V"], ids)`` is a :class:`ScatterTarget`: ``src.to_hbm_view(target, ctx.tdma)`` (or
  ``to_dm_view`` for a DM table) writes ``dst[ids[t], …] = src[t, …]`` in place.
* ``src.to_hbm_view(dst.view().tile(…), ctx.tdma)`` / ``to_dm_view``: a DMA into part of a live tensor; ``dst``
  stays live and current (other live tensors over the written bytes go stale as for any write).

The rules, execution and cycles are the pure functions of :mod:`visa.engines.dma.indirect` and
:mod:`visa.engines.dma.plan`; this module reads the index tensor (a :class:`~visa.errors.PoisonError` when its
bytes were never written), checks every index before anything is written, runs and records the DMA.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa import fastpaths
from visa.engines.cache import cached
from visa.engines.dma.config import NAMES, DmaCost, DmaPlan, Side
from visa.engines.dma.cost import cycles
from visa.engines.dma.execute import execute
from visa.engines.dma.indirect import IndirectPlan, check_indices, check_prefix, indirect_cycles, plan_indirect
from visa.engines.dma.indirect import execute as execute_indirect
from visa.engines.dma.plan import plan
from visa.errors import DtypeError, LayoutError, PoisonError, TypestateError
from visa.mapping import Mapping
from visa.memory.footprint import IntArray, Span, bitmask, merge_intervals, valid_positions
from visa.memory.layout import LEVELS, element_bytes
from visa.memory.registry import refuse_overlap
from visa.tensors.device import Device, DmaContext, Recorded, dma_device
from visa.tensors.fast_poison import dense
from visa.tensors.moves import _allocate, _destination, _endpoint, _source, check_stream, dma_report
from visa.validate import expect_mapping, wrong_type

if TYPE_CHECKING:
    from visa.tensors.handles import DeviceTensor, DmTensor, DmTensorView, HbmTensor, HbmTensorView, TensorView

WRITTEN_WHOLE_GATHER = fastpaths.register("dma.written-whole-gather", "a gather whose rows (every index position) "
                                          "write every byte of its new destination from another memory does not "
                                          "mark the bytes poison first")

__all__ = ["GatherSource", "ScatterTarget", "to_view", "record_dma", "check_ids", "read_indices", "rows_span"]


def record_dma(ctx: Device, name: str, config: str, cost: DmaCost, *, reads: Sequence[Any],
               writes: Sequence[Any], transfer: DmaPlan | None = None, iterations: int = 1) -> Recorded:
    """Put a tensor DMA on the ``tdma`` track: it waits for every earlier operation that writes what it
    ``reads`` or touches what it ``writes`` (tensors or views: an in-place write names only the view it writes),
    on the engines ``transfer`` (the row plan, run ``iterations`` times by the IndirectLoop) spreads over; the
    written tensors are ready when it ends.  The one place these operations meet the schedule."""
    report = dma_report("dma", config, cost)
    traffic = {"DMA": transfer.nbytes * iterations} if transfer is not None and iterations > 1 else None
    op = ctx.record("tdma", name, [report], reads=reads, writes=writes, transfer=transfer, extra_traffic=traffic)
    for t in writes:
        if isinstance(t, Span):  # (the rows of a scatter: its caller makes the table ready)
            continue
        base = getattr(t, "base", t)
        base.ready_at = max(base.ready_at, op.end)
    return op


def rows_span(view: TensorView, axis: str, rows: npt.NDArray[Any]) -> Span:
    """The bytes of the table rows ``rows`` (positions along ``axis``) a gather reads or a scatter writes: every
    position of the view's Element whose ``axis`` coordinate is one of them, in the table's memory, chips and
    slices (issue 27 item 7: the schedule then sees the rows an index names, not the whole table, so independent
    gathers and scatters of one table overlap; L1684–1688, L7067–7070)."""
    base = view.base
    uniq = np.unique(np.asarray(rows, dtype=np.int64))
    lo, hi = _rows_intervals(view.element, axis, view.offset, base.dtype.size_bits, uniq.tobytes())
    levels = base.levels
    chips = bitmask(np.flatnonzero(levels["Chip"].validity()).tolist())
    if base.MEMORY == "hbm":
        return Span("hbm", chips, -1, -1, lo, hi, base.address)
    per_cluster = base.ctx.hw.dm.slices_per_cluster
    clusters = np.flatnonzero(levels["Cluster"].validity())
    slices = np.flatnonzero(levels["Slice"].validity())
    units = (clusters[:, None] * per_cluster + slices[None, :]).reshape(-1).tolist()
    return Span(base.MEMORY, chips, bitmask(units), -1, lo, hi, base.address)


@cached(limit=64)
def _rows_intervals(element: Mapping, axis: str, offset: int, bits: int, rows: bytes) -> tuple[IntArray, IntArray]:
    """The merged byte intervals, relative to the tensor's address, of the Element positions whose ``axis``
    coordinate is one of ``rows`` (ascending distinct int64, as bytes) at element ``offset`` (:func:`rows_span`):
    a pure function of them, kept for the gathers that name the same rows again (a paged KV cache's block table
    at every decode step; issue 24).  Read-only (shared by every span made from it)."""
    uniq = np.frombuffer(rows, dtype=np.int64)
    sizes = {a: element.axis_set.size(a) for a in element.axes}
    others = [a for a in sorted(sizes) if a != axis]
    grids = np.meshgrid(*(np.arange(sizes[a], dtype=np.int64) for a in others), indexing="ij") if others else []
    per_row = int(np.prod([sizes[a] for a in others], dtype=np.int64)) if others else 1
    coords = {a: np.tile(g.reshape(-1), uniq.size) for a, g in zip(others, grids, strict=True)}
    coords[axis] = np.repeat(uniq, per_row)
    pos, held = element.locate(coords, (uniq.size * per_row,))
    pos = np.asarray(pos)[np.asarray(held)] + offset
    lo, hi = merge_intervals((pos * bits) // 8, ((pos + 1) * bits + 7) // 8)
    lo.flags.writeable = False
    hi.flags.writeable = False
    return lo, hi


def _rows_write_whole(p: IndirectPlan, dtype: type[dt.Scalar], levels: dict[str, Mapping]) -> bool:
    """``dma.written-whole-gather``: do the rows of every index position write each byte of the gather's new
    destination tensor (of ``dtype`` and ``levels``) in every unit it occupies, on every chip its Chip level names?
    The index steps must be an affine grid (one stride per index axis); with the row plan's destination loops their
    strides then form a dense mixed radix of the tensor's bytes (:func:`visa.tensors.fast_poison.dense`, as for a
    plain move's ``dma.written-whole``).  Then the rows leave every byte written as the source's bytes are, poisoned
    first or not (a poisoned source byte is copied as poison either way), and the tensor need not be poisoned."""
    if not WRITTEN_WHOLE_GATHER.on or p.kind != "gather":
        return False
    steps = np.asarray(p.index_steps, dtype=np.int64)
    shape = p.index_shape
    strides = [int(steps[int(np.prod(shape[k + 1:], dtype=np.int64))]) if n > 1 else 0 for k, n in enumerate(shape)]
    grid = np.zeros(shape, dtype=np.int64)
    for k, (n, stride) in enumerate(zip(shape, strides, strict=True)):
        grid = grid + (np.arange(n, dtype=np.int64) * stride).reshape([-1 if j == k else 1 for j in range(len(shape))])
    if steps.size != grid.size or not np.array_equal(steps, grid.reshape(-1)):
        return False
    loops = [(lp.dst, lp.size) for lp in p.row.all_loops()] + list(zip(strides, shape, strict=True))
    nbytes = element_bytes(dtype, levels["Element"].size)
    return dense(loops, nbytes) and bool(valid_positions(levels["Chip"]).size == levels["Chip"].size)


def _iterations(p: IndirectPlan) -> int:
    """How many rows the IndirectLoop moves: one per index position."""
    return int(np.prod(p.index_shape, dtype=np.int64))


def check_ids(ids: object, call: str) -> DeviceTensor:
    """``ids`` if it is an HBM or DM tensor (the index tensor of a gather or scatter); otherwise a
    :class:`~visa.errors.WrongTypeError` naming the parameter ``ids``."""
    from visa.tensors.handles import DeviceTensor

    if not isinstance(ids, DeviceTensor) or ids.MEMORY not in ("hbm", "dm", "spm"):
        raise wrong_type("ids", ids, "an HbmTensor, DmTensor or SpmTensor of i32 indices", call=call,
                         fix="move the indices to HBM or DM first (a host array is not an index tensor)")
    return ids


def read_indices(ids: Any, ctx: Device, call: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The index tensor's axes (in order of appearance) and their extents; refuses anything but a live HBM or DM
    tensor of this context."""
    from visa.tensors.handles import _logical_shape

    ids = check_ids(ids, call)
    ids.check_context(ctx, call)
    ids.check_readable(call)
    order, shape = _logical_shape([ids.levels[n] for n in LEVELS[ids.MEMORY]], None)
    return tuple(order), shape


def in_place(src_view: Any, target: Any, medium: str, tdma: DmaContext, call: str
             ) -> tuple[Device, Any, Any, Side, Side]:
    """What a staged move into a live tensor's view checks first (a gather or a staged slice written with
    ``to_dm_view``/``to_hbm_view``): the target is a view of ``medium``, of this context, of the source's dtype.
    Returns the device, the written tensor, the source's base and side, and the target's DMA side."""
    from visa.tensors.handles import TensorView

    if not isinstance(target, TensorView) or target.base.MEMORY != medium:
        raise wrong_type("target", target, f"a view of a live {NAMES[medium]} tensor", call=call)
    ctx = dma_device(tdma, "tdma", call)
    dst = target.base
    dst.check_context(ctx, call)
    base, side = _source(src_view, call, ctx)
    if base.dtype is not dst.dtype:
        raise DtypeError(f"{base.describe()} holds {base.dtype!r} but {dst.describe()} holds {dst.dtype!r}: a DMA "
                         "does not convert (L2525)", call=call, fix="cast in the Tensor Unit first")
    bit = dst.element_bit_offset() + target.offset * dst.dtype.size_bits
    return ctx, dst, base, side, replace(Side.of(medium, target.levels, name=repr(target)), bit_address=bit)


def _prefix_value(prefix: Any, ctx: Device, call: str) -> int:
    """A sparse prefix's value: an int, or a device scalar staged in SPM read now (the DMA takes its valid length
    from a register: an HbmScalar is staged first with ``s.to_spm(ctx.sub)``)."""
    from visa.tensors.scalar import is_scalar, leaves, scalar_value

    if not is_scalar(prefix):
        return int(prefix)
    for s in leaves(prefix):
        if s.MEMORY != "spm":
            raise TypestateError(f"a gather's valid length is read from a register: {s!r} is in HBM", call=call,
                                 fix="stage it once with s.to_spm(ctx.sub) and pass the copy")
        if s.ctx is not ctx:
            raise TypestateError(f"{s!r} belongs to another context", call=call, fix="use the context that made it")
    return scalar_value(prefix, call)


def _values(ids: DeviceTensor, axes: tuple[str, ...], call: str) -> npt.NDArray[Any]:
    """The index values; a :class:`~visa.errors.PoisonError` naming ``call`` if any byte was never written."""
    try:
        return np.asarray(ids.logical(axes), dtype=np.int64)
    except PoisonError as err:
        raise PoisonError(f"the indices {ids.describe()}: {err.message}", call=call, fix=err.fix) from None


class _Staged:
    """A view of a table and the index tensor that picks its rows along ``axis``."""

    __slots__ = ("view", "axis", "ids")
    KIND = ""

    def __init__(self, view: TensorView, axis: Mapping, ids: DeviceTensor) -> None:
        # wrong Python types are refused when the source or target is staged, naming the parameter (issue 16)
        self.axis = expect_mapping(axis, "axis", call=self.KIND, level="Element")
        self.ids = check_ids(ids, self.KIND)
        self.view = view

    @property
    def dtype(self) -> type:
        """The table's element type."""
        return self.view.dtype

    def side(self) -> Side:
        """The table as one side of the DMA."""
        base = self.view.base
        bit = base.element_bit_offset() + self.view.offset * base.dtype.size_bits
        return replace(Side.of(base.MEMORY, self.view.levels, name=repr(self.view)), bit_address=bit)

    def _plan(self, kind: str, src: Side, dst: Side, ctx: Device, call: str, prefix: Any = None
              ) -> tuple[IndirectPlan, npt.NDArray[Any]]:
        axes, shape = read_indices(self.ids, ctx, call)
        p = plan_indirect(ctx.hw, self.view.dtype, kind, src, dst, self.axis, self.ids.dtype.name, axes, shape,
                          call=call)
        values = _values(self.ids, axes, call)
        if prefix is not None:  # a sparse prefix: only the first n index positions move (and are checked)
            values = values.reshape(-1)[: check_prefix(p, _prefix_value(prefix, ctx, call), call)]
        check_indices(p, values, call)
        return p, values

    def __repr__(self) -> str:
        return f"{self.view!r}.{self.KIND}({self.axis!r}, {self.ids.describe()})"


class GatherSource(_Staged):
    """``table.view().gather(m["V"], ids)``: a staged source (manual L1684–1688,
    L7994–8005).  ``.to_dm(…)``/``.to_hbm(…)`` make ``out[t, …] = table[ids[t], …]`` in the destination's
    layout, whose mappings name the index axes in place of V.  The region may be several whole axes
    (``m["A, C"]``: one index selects a row of ``[A, C]``, design API.md §8)."""

    __slots__ = ("prefix",)
    KIND = "gather"

    def __init__(self, view: TensorView, axis: Mapping, ids: DeviceTensor, prefix: Any = None) -> None:
        super().__init__(view, axis, ids)
        self.prefix = prefix

    def sparse_prefix(self, valid_length: Any) -> GatherSource:
        """Only the first ``valid_length`` index positions (C order over the index axes) move; the rest of the
        destination is left as it was (design API.md §8, the reference's ``sparse_prefix``).  ``valid_length`` is
        an int or a device scalar staged in SPM (or an expression on one), read when the gather runs."""
        from visa.tensors.scalar import is_scalar

        if not is_scalar(valid_length) and (isinstance(valid_length, bool)
                                            or not isinstance(valid_length, int | np.integer)):
            raise wrong_type("valid_length", valid_length, "an int or a device scalar (s.to_spm(ctx.sub))",
                             call="sparse_prefix")
        return GatherSource(self.view, self.axis, self.ids, valid_length)

    def __repr__(self) -> str:
        base = super().__repr__()
        return base if self.prefix is None else f"{base}.sparse_prefix({self.prefix!r})"

    def to_dm(self, cluster: Mapping, slice_: Mapping, element: Mapping, tdma: DmaContext, address: int
              ) -> DmTensor[Any, Any, Any, Any, Any]:
        """Gather into a new DM tensor (Chip kept from the table)."""
        out: DmTensor[Any, Any, Any, Any, Any] = self._move(
            "dm", {"Cluster": cluster, "Slice": slice_, "Element": element}, tdma, address, "gather.to_dm")
        return out

    def to_hbm(self, chip: Mapping, element: Mapping, tdma: DmaContext, address: int) -> HbmTensor[Any, Any, Any]:
        """Gather into a new HBM tensor."""
        out: HbmTensor[Any, Any, Any] = self._move("hbm", {"Chip": chip, "Element": element}, tdma, address,
                                                   "gather.to_hbm")
        return out

    def to_dm_view(self, target: DmTensorView, tdma: DmaContext) -> DmTensor[Any, Any, Any, Any, Any]:
        """Gather into part of a live DM tensor, in place: the rows a sparse prefix does not move keep their
        bytes (design API.md §8)."""
        out: DmTensor[Any, Any, Any, Any, Any] = self._into(target, "dm", tdma, "gather.to_dm_view")
        return out

    def to_hbm_view(self, target: HbmTensorView, tdma: DmaContext) -> HbmTensor[Any, Any, Any]:
        """Gather into part of a live HBM tensor, in place (as :meth:`to_dm_view`)."""
        out: HbmTensor[Any, Any, Any] = self._into(target, "hbm", tdma, "gather.to_hbm_view")
        return out

    def _into(self, target: Any, medium: str, tdma: DmaContext, call: str) -> Any:
        ctx, dst, base, _, dside = in_place(self.view, target, medium, tdma, call)
        p, values = self._plan("gather", self.side(), dside, ctx, call, self.prefix)
        if dst.region is not None and base.region is not None:
            refuse_overlap(dst.region, base.region, call)
        execute_indirect(p, values, _endpoint(ctx, base.MEMORY), _endpoint(ctx, medium))
        if dst.region is not None:
            ctx.memory.registry.note_write(dst.region, call=call, writer=f"{call}({target!r})")
        from visa.tensors.scalar import leaves

        scalars = [s.span() for s in leaves(self.prefix)]
        record_dma(ctx, f"{call}({target!r})", _config(p), indirect_cycles(p, values),
                   reads=[base, self.ids, *scalars], writes=[target], transfer=p.row, iterations=max(1, values.size))
        return dst

    def _move(self, medium: str, levels: dict[str, Mapping], tdma: DmaContext, address: int, call: str) -> Any:
        ctx, base, _, levels, dst = _destination(self.view, medium, levels, tdma, address, call, "tdma", None)
        p, values = self._plan("gather", self.side(), dst, ctx, call, self.prefix)
        reads = [r for r in (base.region, self.ids.region) if r is not None]
        cost = indirect_cycles(p, values)  # (every check, the cost model's too, before any byte changes)
        whole = self.prefix is None and base.MEMORY != medium and _rows_write_whole(p, base.dtype, levels)
        out = _allocate(ctx, medium, base.dtype, levels, address, reads, call, whole=whole)
        execute_indirect(p, values, _endpoint(ctx, base.MEMORY), _endpoint(ctx, medium))
        from visa.tensors.scalar import leaves

        scalars = [s.span() for s in leaves(self.prefix)]
        name = f"{call} → {out.describe()}" + ("" if self.prefix is None else f" (prefix {values.size})")
        touched = rows_span(self.view, p.axis, values)  # the rows the indices name, not the whole table
        op = record_dma(ctx, name, _config(p), cost, reads=[touched, self.ids, *scalars], writes=[out],
                        transfer=p.row, iterations=max(1, values.size))
        out.ready_at = op.end
        return out


class ScatterTarget(_Staged):
    """``dst.view().scatter(m["V"], ids)``: a staged destination (MoE dispatch L8664–8690):
    ``src.to_hbm_view(target, ctx.tdma)`` writes ``dst[ids[t], …] = src[t, …]`` in place."""

    __slots__ = ()
    KIND = "scatter"


def _config(p: IndirectPlan) -> str:
    return (f"IndirectLoop {len(p.index_steps)} over {', '.join(p.index_axes)} → {p.axis}; row {p.row}")


def to_view(src: Any, target: Any, medium: str, tdma: DmaContext, *, stream: tuple[Mapping, Mapping] | None = None
            ) -> Any:
    """``src.to_hbm_view(target, ctx.tdma)`` / ``to_dm_view``: write ``src`` into ``target`` in place — a view
    or tile of a live tensor (KV-cache append, L8286–8297) or a :class:`ScatterTarget` — and return the
    target's tensor, which stays live and current."""
    from visa.tensors.handles import TensorView

    call = f"to_{medium}_view"
    view = target.view if isinstance(target, _Staged) else target
    if not isinstance(view, TensorView):
        raise wrong_type("target", target, "a view of a live tensor (t.view(), a tile, or .scatter(...))",
                         call=call, fix=f"pass dst.view() or dst.view().tile(...) of the {NAMES[medium]} tensor")
    check_stream(stream, call)
    ctx = dma_device(tdma, "tdma", call)
    dst = view.base
    if dst.MEMORY != medium:
        other = "to_dm_view" if dst.MEMORY == "dm" else "to_hbm_view"
        raise TypestateError(f"{call} writes an {NAMES[medium]} tensor, but {dst.describe()} lives in "
                             f"{NAMES.get(dst.MEMORY, dst.MEMORY.upper())}", call=call, fix=f"use {other}")
    dst.check_context(ctx, call)
    base, side = _source(src, call, ctx)
    if base.dtype is not dst.dtype:
        raise DtypeError(f"{base.describe()} holds {base.dtype!r} but {dst.describe()} holds {dst.dtype!r}: a DMA "
                         "does not convert (L2525)", call=call, fix="cast in the Tensor Unit first")
    if stream is not None and isinstance(target, _Staged):
        raise LayoutError("a scatter derives its row stream; stream= is not accepted", call=call,
                          fix="omit stream=")
    if isinstance(target, ScatterTarget):
        p, values = target._plan("scatter", side, target.side(), ctx, call)
        what = f"{call}({target!r})"
    elif isinstance(target, _Staged):
        raise TypestateError(f"{target!r} is a staged source; write into a view or a .scatter(...) target",
                             call=call, fix="move a gather with .to_dm(...) / .to_hbm(...)")
    else:
        bit = dst.element_bit_offset() + view.offset * dst.dtype.size_bits
        dside = replace(Side.of(medium, view.levels, name=repr(view)), bit_address=bit)
        # a padded packet may write only the destination's own padding (L1818–1840): a tile's padding digits
        # are the base tensor's other elements (a KV-cache column ``m["Dv, S = 1 # S"]``), which an in-place
        # write must leave as they are; only a view of the whole tensor has the base's padding as its own
        whole = view.offset == 0 and view.element == dst.levels["Element"]
        dplan = plan(ctx.hw, base.dtype, side, dside, stream=stream, call=call, own_padding=whole)
        what = f"{call}({view!r})"
    if dst.region is not None and base.region is not None:
        refuse_overlap(dst.region, base.region, call)  # nothing written yet
    written: Any
    if isinstance(target, ScatterTarget):
        cost, config, row, runs = indirect_cycles(p, values), _config(p), p.row, _iterations(p)
        reads, written = [base, target.ids], rows_span(view, p.axis, values)  # the rows the indices name
        execute_indirect(p, values, _endpoint(ctx, base.MEMORY), _endpoint(ctx, medium))
    else:
        cost, config, row, runs = cycles(dplan), str(dplan), dplan, 1
        reads, written = [base], view
        execute(dplan, _endpoint(ctx, base.MEMORY), _endpoint(ctx, medium))
    if dst.region is not None:
        ctx.memory.registry.note_write(dst.region, call=call, writer=what)
    op = record_dma(ctx, what, config, cost, reads=reads, writes=[written], transfer=row, iterations=runs)
    dst.ready_at = max(dst.ready_at, op.end)
    return dst
