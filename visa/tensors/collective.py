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
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from visa.engines import parallel_copy as pcopy
from visa.engines.common import EngineReport, axes_text
from visa.engines.dma import shuffle as engine
from visa.engines.dma.plan import plan as dma_plan
from visa.engines.timing import pass_cost
from visa.errors import VisaError
from visa.mapping import Mapping
from visa.tensors.device import Device, DmaContext, Recorded, TuHandle
from visa.tensors.moves import _allocate, _destination, _endpoint, _poison, dma_report
from visa.validate import expect_int, expect_ints, expect_mapping, wrong_type

if TYPE_CHECKING:
    from visa.tensors.handles import DeviceTensor, DmTensor, HbmTensor, TensorView

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

    __slots__ = ("view", "chips", "clusters")

    def __init__(self, view: TensorView | DeviceTensor, chips: tuple[int, ...], clusters: tuple[int, ...]) -> None:
        self.view = view
        self.chips = chips
        self.clusters = clusters

    @classmethod
    def stage(cls, view: Any, *, perm: Sequence[object] | None = None, swap: bool = False) -> ShuffledSource[Any]:
        """Stage a shuffle (``perm``) or a cluster swap (``swap``) on a view or an already staged source.

        Without ``swap`` it is a shuffle: ``perm`` must be a list of chip numbers (a wrong Python type, ``None``
        included, is a :class:`~visa.errors.WrongTypeError` naming ``perm``; its values are the shuffle's rule)."""
        if not swap:
            perm = expect_ints(perm, "perm", call="chip_shuffle",
                               expected="a list of chip numbers such as [1, 2, 3, 0]")
        base = view.view if isinstance(view, ShuffledSource) else view
        chips = view.chips if isinstance(view, ShuffledSource) else ()
        clusters = view.clusters if isinstance(view, ShuffledSource) else ()
        levels = base.levels
        t = base.base if hasattr(base, "base") else base
        if perm is not None:
            n = levels["Chip"].size
            new = engine.check_permutation(perm, n, mapping=repr(levels["Chip"]), axis=axes_text(levels["Chip"]))
            chips = tuple(chips[p] for p in new) if chips else new
        if swap:
            cl = levels.get("Cluster")
            held = int(cl.validity().sum()) if cl is not None else None
            new_c = engine.check_cluster_swap(t.ctx.hw, cl.size if cl is not None else 0, medium=t.MEMORY, held=held,
                                              mapping=repr(cl) if cl is not None else None, axis=axes_text(cl))
            clusters = tuple(clusters[k] for k in new_c) if clusters else new_c
        return cls(base, chips, clusters)

    @property
    def levels(self) -> dict[str, Mapping]:
        """The level mappings of the staged tensor (the view's)."""
        levels: dict[str, Mapping] = self.view.levels
        return levels

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
        return f"{self.view!r}.{'.'.join(parts)}"


def shuffled_move(src: ShuffledSource, medium: str, levels: dict[str, Mapping], tdma: DmaContext, address: int,
                  stream: Stream | None) -> Any:
    """The shuffled DMA of ``src`` to a new ``medium`` tensor with ``levels`` (the source's Chip unless given):
    plan the layout change (:func:`visa.engines.dma.plan.plan`), allocate, poison, execute through the shuffle,
    record."""
    # refusals name the DMA as the plain moves do (``dm.to_dm``: the mypy plugin runs the same rules); the
    # schedule names the shuffle
    what = "chip_shuffle" if src.chips else "cluster_swap"
    call = f"{getattr(getattr(src.view, 'base', src.view), 'MEMORY', 'dm')}.to_{medium}"
    ctx, base, side, levels, dst = _destination(src.view, medium, levels, tdma, address, call, "tdma", stream)
    p = dma_plan(ctx.hw, base.dtype, side, dst, stream=stream, call=call)
    sp = engine.ShufflePlan(p, src.chips, src.clusters)
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
