"""``SpmTensor``: a tensor in the Scratchpad Memory, 4 KiB per PE (design API.md §8; the reference's
``SpmTensor<D, Chip, Cluster, Pe, Element>``, furiosa-opt v0.9 — docs/manual-notes.md "issue 26").

``dm.to_spm(Pe, Element, ctx.tdma, addr)`` moves a DM tensor (or view) into SPM, Chip and Cluster kept;
``spm.to_dm(Cluster, Slice, Element, ctx.tdma, addr)`` moves it back, Chip kept.  Gather and scatter indices
may live in SPM (``table.view().gather(m["V"], spm_ids)``).  The rules, execution and cost are
:mod:`visa.engines.spm`'s; every move is a DMA on the ``tdma`` track.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from visa import dtypes as dt
from visa.engines import spm as engine
from visa.engines.common import EngineReport
from visa.mapping import Mapping
from visa.memory.images import DenseImage
from visa.memory.layout import element_bytes
from visa.tensors.device import Device, DmaContext, dma_device
from visa.tensors.handles import DeviceTensor, DmTensor, TensorView
from visa.tensors.moves import _check_args

__all__ = ["SpmTensor", "dm_to_spm"]

D = TypeVar("D", bound=dt.Scalar)
Chip = TypeVar("Chip")
Cluster = TypeVar("Cluster")
Pe = TypeVar("Pe")
Element = TypeVar("Element")


class SpmTensor(DeviceTensor, Generic[D, Chip, Cluster, Pe, Element]):
    """``SpmTensor<D, Chip, Cluster, Pe, Element>``: PE ``p`` of cluster ``k`` of chip ``c`` holds, at element
    ``e``, T at ``Chip.map(c) ∪ Cluster.map(k) ∪ Pe.map(p) ∪ Element.map(e)``; the Pe level has 4 positions (a
    cluster's 256 slices, 64 a PE, L2343) and the Element at most 4 KiB (the reference's capacity)."""

    __slots__ = ()
    MEMORY = "spm"

    def __init__(self, ctx: Device, dtype: type[D], chip: Mapping, cluster: Mapping, pe: Mapping, element: Mapping,
                 address: int, **kw: Any) -> None:
        super().__init__(ctx, dtype, {"Chip": chip, "Cluster": cluster, "Pe": pe, "Element": element}, address, **kw)

    def image(self, chip: int) -> DenseImage:
        return self.ctx.memory.chip(chip).spm

    def to_dm(self, cluster: Mapping, slice_: Mapping, element: Mapping, tdma: DmaContext,
              address: int) -> DmTensor[Any, Any, Any, Any, Any]:
        """DMA back to a new DM tensor laid out as ``(Chip, cluster, slice_, element)`` (Chip kept)."""
        out: DmTensor[Any, Any, Any, Any, Any] = _move(self, "dm", {"Cluster": cluster, "Slice": slice_,
                                                                     "Element": element}, tdma, address, "spm.to_dm")
        return out


def dm_to_spm(src: Any, pe: Mapping, element: Mapping, tdma: DmaContext, address: int) -> SpmTensor[Any, Any, Any,
                                                                                                     Any, Any]:
    """``dm.to_spm(Pe, Element, ctx.tdma, addr)``: a DMA into a new SPM tensor (Chip and Cluster kept)."""
    out: SpmTensor[Any, Any, Any, Any, Any] = _move(src, "spm", {"Pe": pe, "Element": element}, tdma, address,
                                                    "dm.to_spm")
    return out


def _move(src: Any, medium: str, given: dict[str, Mapping], tdma: DmaContext, address: int, call: str) -> Any:
    from visa.tensors.moves import _poison

    _check_args(call, {k.lower(): v for k, v in given.items()}, address, None)
    ctx = dma_device(tdma, "tdma", call)
    base = src.base if isinstance(src, TensorView) else src
    if not isinstance(base, DeviceTensor) or base.MEMORY != ("dm" if medium == "spm" else "spm"):
        from visa.validate import wrong_type

        raise wrong_type("self", src, "a DM tensor or view" if medium == "spm" else "an SpmTensor", call=call)
    base.check_context(ctx, call)
    base.check_readable(call)
    src_levels = dict(src.levels)
    keep = ("Chip", "Cluster") if medium == "spm" else ("Chip",)
    levels = {**{k: base.levels[k] for k in keep}, **given}
    p = engine.plan(ctx.hw, base.dtype, base.MEMORY, src_levels, medium, levels, call)
    reads = (base.region,) if base.region is not None else ()
    out: Any
    if medium == "spm":
        out = SpmTensor(ctx, base.dtype, levels["Chip"], levels["Cluster"], levels["Pe"], levels["Element"], address,
                        reads=reads, call=call)
    else:
        out = DmTensor(ctx, base.dtype, levels["Chip"], levels["Cluster"], levels["Slice"], levels["Element"],
                       address, reads=reads, call=call)
    n = element_bytes(base.dtype, levels["Element"].size)
    if medium == "spm":
        for c in range(levels["Chip"].size):
            ctx.memory.chip(c).spm.poison(address, address + n)
    else:
        _poison(ctx, "dm", levels["Chip"].size, address, address + n)
    chips = range(levels["Chip"].size)
    images_in = [getattr(ctx.memory.chip(c), base.MEMORY) for c in chips]
    images_out = [getattr(ctx.memory.chip(c), medium) for c in chips]
    engine.execute(p, images_in, images_out, src.address, address)
    cost = engine.cycles(p)
    report = EngineReport("dma", str(p), cost - ctx.hw.dma.startup_cycles, latency=ctx.hw.dma.startup_cycles,
                          nbytes=p.src_unit.size * p.nb * len(p.chips))
    out.ready_at = ctx.record("tdma", f"{call} → {out.describe()}", [report], reads=[src], writes=[out]).end
    return out
