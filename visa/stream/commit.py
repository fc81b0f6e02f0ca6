"""Stream side of the Commit Engine: ``commit`` and ``commit_view`` (manual L2145–2354).

Both end the pass: they ask :func:`visa.engines.commit.plan` for the configuration, write each enabled
slice's DM image, record the pass on the stream's context and make the written tensor ready when it ends.
A commit may not write over a tensor the same pass reads (``AllocationError``, L150–155).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from visa.engines import commit as engine
from visa.engines.common import EngineReport
from visa.mapping import Mapping
from visa.mapping.core import ensure_mapping
from visa.memory.registry import refuse_overlap
from visa.stream.collect import input_regions, record_pass
from visa.validate import expect_int, wrong_type

if TYPE_CHECKING:
    from visa.hw import HardwareProfile
    from visa.stream.stages import StreamTensor
    from visa.tensors.handles import DmTensor

__all__ = ["commit", "commit_view"]

#: The engine whose output each committable stage is (the last engine of the pass, for the sub-context rule,
#: L2337; a stream built without reports, as tests make them, still names it).
STAGE_ENGINE = {"FetchTensor": "fetch", "SwitchTensor": "switch", "CollectTensor": "collect",
                "AccumulationTensor": "contraction", "CastTensor": "cast", "TransposeTensor": "transpose",
                "VectorFinalTensor": "vector"}


def _packed(stream: StreamTensor[Any, Any, Any, Any, Any, Any], element: Mapping, call: str
            ) -> tuple[Mapping, Any]:
    """The Packet the commit reads and the per-packet kept counts of a compacted stream (``vector_filter``
    then ``vector_final``, L2324, L8580–8584; None otherwise)."""
    lay = stream.layout
    counts = stream.carried.packed if stream.STAGE == "VectorFinalTensor" else None
    if counts is None:
        return lay.packet, None
    packet = engine.packed_packet(lay.chip, lay.cluster, lay.slice, lay.time, lay.packet, element, call)
    if packet is not lay.packet:
        engine.check_packed_counts(counts, packet, call)
    return packet, counts


def _plan(stream: StreamTensor[Any, Any, Any, Any, Any, Any], element: Mapping,
          region: tuple[Mapping, int] | None, packet: Mapping | None = None) -> engine.CommitConfig:
    lay = stream.layout
    return engine.plan(stream.ctx.hw, lay.dtype, lay.chip, lay.cluster, lay.slice, lay.time, packet or lay.packet,
                       element,
                       context=stream.tu.kind, region=region,
                       after=(*(r.engine for r in stream.reports), STAGE_ENGINE.get(stream.STAGE, stream.STAGE)))


def _report(hw: HardwareProfile, cfg: engine.CommitConfig, address: int) -> EngineReport:
    slices = sum(bin(b).count("1") for b in cfg.bitmaps)  # per chip
    nbytes = cfg.elements_written * cfg.time.size * cfg.dtype.size_bits // 8 * slices * cfg.chip.size
    runs = engine.bank_runs(hw, cfg, address)
    return EngineReport("commit", cfg.describe(address), engine.cycles(cfg),
                        details=(("commit_in_size", cfg.commit_in_size), ("commit_size", cfg.commit_size)),
                        nbytes=nbytes, bank_run=max(runs), bank_runs=runs)


def commit(stream: StreamTensor[Any, Any, Any, Any, Any, Any], element: Mapping,
           address: int) -> DmTensor[Any, Any, Any, Any, Any]:
    """``commit::<Element>(address)`` → ``DmTensor<D, Chip, Cluster, Slice, Element>`` (L2149–2158)."""
    from visa.tensors.handles import DmTensor

    element = ensure_mapping(element, "Element", "commit", "Element")
    address = expect_int(address, "address", call="commit")
    ctx, lay = stream.ctx, stream.layout
    engine.check_address(ctx.hw, address, element, "commit")
    packet, _counts = _packed(stream, element, "commit")
    cfg = _plan(stream, element, None, packet)
    tensor: DmTensor[Any, Any, Any, Any, Any] = DmTensor(ctx, lay.dtype, lay.chip, lay.cluster, lay.slice, element,
                                                         address, reads=input_regions(stream, "commit"), call="commit")
    images = [ctx.memory.chip(c).dm for c in range(lay.chip.size)]
    engine.execute(cfg, stream.data, images, address * 8)
    tensor.ready_at = record_pass(stream, _report(stream.ctx.hw, cfg, address), (tensor,))
    return tensor


def commit_view(stream: StreamTensor[Any, Any, Any, Any, Any, Any], view: Any) -> None:
    """``commit_view::<Element>(dst)``: write into an existing DM tensor's view (L2159–2163)."""
    from visa.tensors.handles import TensorView

    call = "commit_view"
    if not isinstance(view, TensorView) or view.base.MEMORY != "dm":
        raise wrong_type("view", view, "a DM tensor view", call=call, fix="pass dm.view() or a tile of it")
    ctx, lay = stream.ctx, stream.layout
    base = view.base
    base.check_context(ctx, call)
    engine.check_view(lay.dtype, lay.chip, lay.cluster, lay.slice, base.dtype, view.levels)
    engine.check_address(ctx.hw, base.address + view.offset * lay.dtype.size_bits // 8, view.element, call)
    packet, counts = _packed(stream, view.element, call)
    cfg = _plan(stream, view.element, (base.levels["Element"], view.offset), packet)
    inputs = input_regions(stream, call)
    if base.region is not None:
        for region in inputs:
            if region.live():
                refuse_overlap(base.region, region, call)
    images = [ctx.memory.chip(c).dm for c in range(lay.chip.size)]
    keep = None
    if counts is not None:  # the lanes after each packet's kept elements are not written (L2324)
        keep = np.arange(lay.packet.size).reshape(1, 1, 1, 1, -1) >= counts[..., None]
    engine.execute(cfg, stream.data, images, base.address * 8 + view.offset * lay.dtype.image_bits, keep)
    if base.region is not None:
        ctx.memory.registry.note_write(base.region, call=call, writer=base.describe())
    address = base.address + view.offset * lay.dtype.size_bits // 8
    base.ready_at = record_pass(stream, _report(stream.ctx.hw, cfg, address), (view,))
