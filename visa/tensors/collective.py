"""Collectives across chips and clusters: the staged shuffle source and the asymmetric slices (manual
"Chip/Cluster Reduce", L7382–7610).

* ``t.view().chip_shuffle([1, 2, 3, 0])`` and ``t.view().cluster_swap()`` make a :class:`ShuffledSource`: the
  tensor the view holds, with chip ``c`` holding what chip ``p[c]`` held (L7541; clusters 0 and 1 exchanged).
  ``.to_hbm(Chip, Element, ctx.tdma, addr)`` or ``.to_dm(Cluster, Slice, Element, ctx.tdma, addr)`` moves it
  in one DMA with the destination's own layout (HBM→HBM through PCIe between chips, L7607–7608).  The rules,
  the execution over the byte images and the cost are :mod:`visa.engines.dma.shuffle`'s.
* ``dm.asymmetric_chip_slice(m["B"], ctx.sub, [0, 1, 2, 3], addr)`` and ``dm.asymmetric_cluster_slice(...)``:
  ParallelCopy in the sub context (L7603–7606), :mod:`visa.engines.parallel_copy`.

Every operation is put on the schedule by :func:`record` (one place, for the scheduler to rewire).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic

import numpy as np
from typing_extensions import TypeVar

from visa.engines import parallel_copy as pcopy
from visa.engines.common import EngineReport, axes_text
from visa.engines.dma import shuffle as engine
from visa.engines.dma.plan import plan as dma_plan
from visa.engines.dma.slicing import SliceStep, check_constant_indices, check_dm_stride, plan_slice
from visa.engines.timing import pass_cost
from visa.errors import VisaError
from visa.mapping import Mapping
from visa.mapping.fast_validity import validity_of
from visa.memory.registry import refuse_overlap
from visa.tensors.device import Device, DmaContext, Recorded, TuHandle
from visa.tensors.moves import _allocate, _destination, _endpoint, _poison, dma_report
from visa.validate import expect_int, expect_ints, expect_mapping, wrong_type

if TYPE_CHECKING:
    from visa.tensors.handles import DeviceTensor, DmTensor, DmTensorView, HbmTensor, HbmTensorView, TensorView

__all__ = ["ShuffledSource", "record", "shuffled_move", "asymmetric_slice"]

Stream = tuple[Mapping, Mapping]


def record(ctx: Device, track: str, name: str, reports: Sequence[EngineReport], reads: Sequence[Any],
           writes: Sequence[Any], **placement: Any) -> Recorded:
    """Put a collective's operation on the schedule (the one place this module touches it): it reads ``reads``
    and writes ``writes``; ``placement`` says which lanes and paths it occupies (``transfer=``, ``extra_lanes=``,
    ``extra_traffic=``, :meth:`visa.context.Context.record`).  A Tensor Unit command (``main``/``sub``) costs
    what :func:`visa.engines.timing.pass_cost` says."""
    if track in ("main", "sub") and "cycles" not in placement:
        cost = pass_cost(ctx.hw, reports)
        placement = {**placement, "cycles": cost.total, "note": str(cost)}
    return ctx.record(track, name, reports, reads=reads, writes=writes, **placement)


#: The staged view's type (``ShuffledSource[DmTensorView[i32, …]]``), so that the mypy plugin knows the source's
#: layout when the staged source is moved.
V = TypeVar("V", default=Any)


class ShuffledSource(Generic[V]):
    """A staged DMA source: the tensor ``view`` holds, with its chips permuted (``chips[c]`` is the chip whose
    data chip ``c`` holds, L7541) and/or its two clusters exchanged.  Nothing moves until ``.to_hbm`` or
    ``.to_dm``; a refused move writes nothing."""

    __slots__ = ("view", "chips", "clusters", "steps", "chip_offsets", "cluster_offsets")

    def __init__(self, view: TensorView | DeviceTensor, chips: tuple[int, ...], clusters: tuple[int, ...],
                 steps: tuple[SliceStep, ...] = (), chip_offsets: tuple[int, ...] = (),
                 cluster_offsets: tuple[int, ...] = ()) -> None:
        self.view = view
        self.chips = chips
        self.clusters = clusters
        #: staged chip/cluster slices (design API.md §8), in order; the offsets each destination chip (cluster)
        #: reads its source at, in bytes within each unit
        self.steps = steps
        self.chip_offsets = chip_offsets
        self.cluster_offsets = cluster_offsets

    @classmethod
    def stage(cls, view: Any, *, perm: Sequence[object] | None = None, swap: bool = False,
              plain: bool = False) -> ShuffledSource[Any]:
        """Stage a shuffle (``perm``) or a cluster swap (``swap``) on a view or an already staged source
        (``plain``: nothing yet, for a slice staged on a view).

        Without ``swap`` it is a shuffle: ``perm`` must be a list of chip numbers (a wrong Python type, ``None``
        included, is a :class:`~visa.errors.WrongTypeError` naming ``perm``; its values are the shuffle's rule)."""
        if not swap and not plain:
            check_constant_indices(perm, "perm", "chip_shuffle")
            perm = expect_ints(perm, "perm", call="chip_shuffle",
                               expected="a list of chip numbers such as [1, 2, 3, 0]")
        staged = view if isinstance(view, ShuffledSource) else None
        base = staged.view if staged is not None else view
        chips = staged.chips if staged is not None else ()
        clusters = staged.clusters if staged is not None else ()
        steps = staged.steps if staged is not None else ()
        chip_off = staged.chip_offsets if staged is not None else ()
        cluster_off = staged.cluster_offsets if staged is not None else ()
        levels = base.levels
        t = base.base if hasattr(base, "base") else base
        if perm is not None and not plain:
            n = levels["Chip"].size
            new = engine.check_permutation(perm, n, mapping=repr(levels["Chip"]), axis=axes_text(levels["Chip"]))
            chips = tuple(chips[p] for p in new) if chips else new
            chip_off = tuple(chip_off[p] for p in new) if chip_off else ()
        if swap:
            cl = levels.get("Cluster")
            held = int(np.count_nonzero(validity_of(cl))) if cl is not None else None  # (mapping.validity-memo)
            new_c = engine.check_cluster_swap(t.ctx.hw, cl.size if cl is not None else 0, medium=t.MEMORY, held=held,
                                              mapping=repr(cl) if cl is not None else None, axis=axes_text(cl))
            clusters = tuple(clusters[k] for k in new_c) if clusters else new_c
            cluster_off = tuple(cluster_off[k] for k in new_c) if cluster_off else ()
        return cls(base, chips, clusters, steps, chip_off, cluster_off)

    @property
    def levels(self) -> dict[str, Mapping]:
        """The level mappings of the staged tensor (the view's; after a slice, the declared Element)."""
        levels: dict[str, Mapping] = dict(self.view.levels)
        if self.steps:
            levels["Element"] = self.steps[-1].element
        return levels

    def layout(self) -> Mapping:
        """The Element the source's bytes are read through: the view's, each sliced digit a padding digit."""
        element: Mapping = self.steps[-1].layout if self.steps else self.view.levels["Element"]
        return element

    def _slice(self, which: str, digit: Mapping, element: Mapping, indices: Sequence[int]) -> ShuffledSource[V]:
        call = f"{which}_slice"
        digit = expect_mapping(digit, "digit", call=call, level="Element")
        element = expect_mapping(element, "element", call=call, level="Element")
        check_constant_indices(indices, "indices", call)
        idx = expect_ints(indices, "indices", call=call, expected=f"a list of ints, one entry per {which}")
        t = self.view.base if hasattr(self.view, "base") else self.view
        lv = self.levels
        units = lv["Chip" if which == "chip" else "Cluster"].size if (which == "chip" or "Cluster" in lv) else 0
        step = plan_slice(t.ctx.hw, t.dtype, self.layout(), lv["Element"], digit, element, idx, which, units,
                          t.MEMORY, call=call)
        if which == "chip":
            chip_off = tuple((self.chip_offsets[c] if self.chip_offsets else 0) + o for c, o in enumerate(step.offsets))
            return ShuffledSource(self.view, self.chips, self.clusters, (*self.steps, step), chip_off,
                                  self.cluster_offsets)
        cl_off = tuple((self.cluster_offsets[k] if self.cluster_offsets else 0) + o for k, o in enumerate(step.offsets))
        return ShuffledSource(self.view, self.chips, self.clusters, (*self.steps, step), self.chip_offsets, cl_off)

    def chip_slice(self, digit: Mapping, element: Mapping, indices: Sequence[int]) -> ShuffledSource[V]:
        """Chip c keeps entry ``indices[c]`` of ``digit``; the staged Element is then ``element`` (the Element
        without the digit), and the move that follows is one DMA (design API.md §8,
        :mod:`visa.engines.dma.slicing`)."""
        return self._slice("chip", digit, element, indices)

    def cluster_slice(self, digit: Mapping, element: Mapping, indices: Sequence[int]) -> ShuffledSource[V]:
        """As :meth:`chip_slice`, per cluster of a DM source: cluster k keeps entry ``indices[k]``."""
        return self._slice("cluster", digit, element, indices)

    def to_dm_view(self, target: DmTensorView, tdma: DmaContext) -> DmTensor[Any, Any, Any, Any, Any]:
        """Move the staged tensor into a view of a live DM tensor, in place (one DMA; design API.md §8)."""
        out: DmTensor[Any, Any, Any, Any, Any] = shuffled_into(self, target, "dm", tdma)
        return out

    def to_hbm_view(self, target: HbmTensorView, tdma: DmaContext) -> HbmTensor[Any, Any, Any]:
        """Move the staged tensor into a view of a live HBM tensor, in place (one DMA)."""
        out: HbmTensor[Any, Any, Any] = shuffled_into(self, target, "hbm", tdma)
        return out

    def chip_shuffle(self, perm: Sequence[int]) -> ShuffledSource[V]:
        """Compose another chip shuffle: destination chip c receives what chip ``perm[c]`` of this staged tensor
        holds."""
        return ShuffledSource.stage(self, perm=perm)

    def cluster_swap(self) -> ShuffledSource[V]:
        """Compose a cluster swap (cluster 0 ↔ cluster 1)."""
        return ShuffledSource.stage(self, swap=True)

    def to_hbm(self, chip: Mapping, element: Mapping, tdma: DmaContext, address: int, *,
               stream: Stream | None = None) -> HbmTensor[Any, Any, Any]:
        """Move the shuffled tensor to a new HBM tensor laid out as ``(chip, element)`` (L7607–7608)."""
        out: HbmTensor[Any, Any, Any] = shuffled_move(self, "hbm", {"Chip": chip, "Element": element}, tdma,
                                                      address, stream)
        return out

    def to_dm(self, cluster: Mapping, slice_: Mapping, element: Mapping, tdma: DmaContext, address: int, *,
              stream: Stream | None = None) -> DmTensor[Any, Any, Any, Any, Any]:
        """Move the shuffled tensor to a new DM tensor laid out as ``(Chip, cluster, slice_, element)`` (the
        source's Chip)."""
        out: DmTensor[Any, Any, Any, Any, Any] = shuffled_move(
            self, "dm", {"Cluster": cluster, "Slice": slice_, "Element": element}, tdma, address, stream)
        return out

    def __repr__(self) -> str:
        parts = []
        if self.chips:
            parts.append(f"chip_shuffle({list(self.chips)})")
        if self.clusters:
            parts.append("cluster_swap()")
        for st in self.steps:
            parts.append(f"{st.which}_slice({st.digit!r}, {st.element!r}, {list(st.indices)})")
        return f"{self.view!r}.{'.'.join(parts)}"


def shuffled_move(src: ShuffledSource, medium: str, levels: dict[str, Mapping], tdma: DmaContext, address: int,
                  stream: Stream | None) -> Any:
    """The shuffled DMA of ``src`` to a new ``medium`` tensor with ``levels`` (the source's Chip unless given):
    plan the layout change (:func:`visa.engines.dma.plan.plan`), allocate, poison, execute through the shuffle,
    record."""
    # refusals name the DMA as the plain moves do (``dm.to_dm``: the mypy plugin runs the same rules); the
    # schedule names the shuffle
    what = _what(src)
    call = f"{getattr(getattr(src.view, 'base', src.view), 'MEMORY', 'dm')}.to_{medium}"
    ctx, base, side, levels, dst = _destination(src.view, medium, levels, tdma, address, call, "tdma", stream)
    p, sp = _plan(ctx, base, side, dst, src, medium, stream, call, own_padding=True)
    cost = engine.cycles(sp)  # (every check, the cost model's too, before any byte changes)
    out = _allocate(ctx, medium, base.dtype, levels, address, [r for r in (base.region,) if r is not None], call)
    engine.execute(sp, _endpoint(ctx, side.medium), _endpoint(ctx, medium))
    pcie = engine.pcie_bytes(sp)
    report = dma_report("dma", str(sp), cost, (
        ("shuffle", str(list(sp.chips)) if sp.chips else "none"), ("cluster swap", bool(sp.clusters)),
        ("pcie bytes", pcie), ("read", str(p.read)), ("write", str(p.write))))
    # the engines of the layout change, and the PCIe link of every chip that sends or receives across chips
    crossing = sorted({c for c, src_chip in enumerate(sp.chips) if src_chip != c} |
                      {src_chip for c, src_chip in enumerate(sp.chips) if src_chip != c})
    out.ready_at = record(ctx, "tdma", f"{what}.{call} → {out.describe()}", [report], [src.view], [out],
                          transfer=p, extra_lanes=[(c, "pcie") for c in crossing],
                          extra_traffic={"PCIe": pcie} if pcie else None).end
    return out


def _what(src: ShuffledSource) -> str:
    """How the schedule names a staged move."""
    parts = (["chip_shuffle"] if src.chips else []) + (["cluster_swap"] if src.clusters else [])
    parts += [f"{st.which}_slice" for st in src.steps]
    return ".".join(parts) or "staged"


def _plan(ctx: Device, base: Any, side: Any, dst: Any, src: ShuffledSource, medium: str, stream: Stream | None,
          call: str, own_padding: bool) -> tuple[Any, engine.ShufflePlan]:
    """The DMA plan of a staged move: the source read through the staged layout (each sliced digit held at 0,
    the kept entry an offset per unit), and the shuffle plan around it."""
    if src.steps:
        lv = dict(side.levels)
        lv["Element"] = src.layout()
        side = replace(side, levels=tuple(lv.items()))
        if medium == "dm":
            for st in src.steps:
                check_dm_stride(st.stride_bytes, ctx.hw.dma.write_address_align["DM"], st.digit,
                                src.view.levels["Element"], call)
    p = dma_plan(ctx.hw, base.dtype, side, dst, stream=stream, call=call,
                 own_padding=own_padding and not src.steps)
    return p, engine.ShufflePlan(p, src.chips, src.clusters, src.chip_offsets, src.cluster_offsets)


def shuffled_into(src: ShuffledSource, target: Any, medium: str, tdma: DmaContext) -> Any:
    """The staged move into a view of a live ``medium`` tensor, in place (as ``to_dm_view``): one DMA."""
    from visa.tensors.indirect import in_place

    call = f"to_{medium}_view"
    ctx, dst, base, side, dside = in_place(src.view, target, medium, tdma, call)
    whole = target.offset == 0 and target.element == dst.levels["Element"]
    p, sp = _plan(ctx, base, side, dside, src, medium, None, call, own_padding=whole)
    if dst.region is not None and base.region is not None:
        refuse_overlap(dst.region, base.region, call)
    engine.execute(sp, _endpoint(ctx, side.medium), _endpoint(ctx, medium))
    if dst.region is not None:
        ctx.memory.registry.note_write(dst.region, call=call, writer=f"{_what(src)}.{call}({target!r})")
    pcie = engine.pcie_bytes(sp)
    report = dma_report("dma", str(sp), engine.cycles(sp), (("pcie bytes", pcie),))
    crossing = sorted({c for c, s in enumerate(sp.chips) if s != c} | {s for c, s in enumerate(sp.chips) if s != c})
    op = record(ctx, "tdma", f"{_what(src)}.{call}({target!r})", [report], [src.view], [target], transfer=p,
                extra_lanes=[(c, "pcie") for c in crossing], extra_traffic={"PCIe": pcie} if pcie else None)
    dst.ready_at = max(dst.ready_at, op.end)
    return dst


def asymmetric_slice(dm: DmTensor[Any, Any, Any, Any, Any], digit: Mapping, sub: TuHandle,
                     indices: Sequence[int], address: int, which: str) -> DmTensor[Any, Any, Any, Any, Any]:
    """ParallelCopy in the sub context (L7603–7606): a new DM tensor at ``address`` whose Element lacks
    ``digit``; chip (cluster) u keeps entry ``indices[u]`` of it."""
    from visa.tensors.handles import DmTensor

    call = f"asymmetric_{which}_slice"
    if not isinstance(dm, DmTensor):
        raise VisaError(f"{call} slices a DmTensor, got {type(dm).__name__}", call=call,
                        fix="move the tensor to DM first (.to_dm)")
    # wrong Python types first, each naming its parameter (issue 16); nothing is allocated or written before
    digit = expect_mapping(digit, "digit", call=call, level="Element")
    if not isinstance(sub, TuHandle):
        raise wrong_type("sub", sub, "ctx.sub", call=call)
    indices = expect_ints(indices, "indices", call=call, expected=f"a list of ints, one entry of the digit per {which}")
    address = expect_int(address, "address", call=call)
    pcopy.check_context(sub.kind, call)
    ctx = sub.ctx
    dm.check_context(ctx, call)
    dm.check_readable(call)
    cfg = pcopy.plan(ctx.hw, dm.dtype, dm.levels, digit, indices, which)
    cost = pcopy.cycles(cfg)
    lv = dm.levels
    reads = (dm.region,) if dm.region is not None else ()
    out: DmTensor[Any, Any, Any, Any, Any] = DmTensor(ctx, dm.dtype, lv["Chip"], lv["Cluster"], lv["Slice"],
                                                      cfg.out, address, reads=reads, call=call)
    _poison(ctx, "dm", lv["Chip"].size, address, address + cfg.out_bytes, lv)
    for c in range(lv["Chip"].size):
        img = ctx.memory.chip(c).dm
        pcopy.execute(cfg, img, img, c, dm.address, address)
    report = EngineReport("parallel_copy", str(cfg), cost,
                          details=(("indices", str(list(cfg.indices))), ("bytes per slice", str(cfg.out_bytes))))
    out.ready_at = record(ctx, "sub", f"{call} → {out.describe()}", [report], [dm], [out]).end
    return out
