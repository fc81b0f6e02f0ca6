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

__all__ = ["commit", "commit_view", "generate"]

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


def _valid_count(stream: StreamTensor[Any, Any, Any, Any, Any, Any], count: Any) -> tuple[Any, tuple[Any, ...]]:
    """The lanes sub-context valid-count packing leaves unwritten (L2322–2324), and the tensors its count is read
    from: ``count`` an int (every packet), or a one-element i32 DM tensor or view holding each slice's own count
    (read when the pass runs).  ``(None, ())`` without a count."""
    from visa.tensors.handles import DmTensor, TensorView

    if count is None:
        return None, ()
    ctx, lay = stream.ctx, stream.layout
    static = count if isinstance(count, int) and not isinstance(count, bool) else None
    engine.plan_valid_count(ctx.hw, stream.tu.kind, lay.packet, static)
    shape = (lay.chip.size, lay.cluster.size, lay.slice.size, lay.time.size)
    if static is not None:
        return engine.valid_count_keep(np.full(shape, static, dtype=np.int64), lay.packet, stream.tu.kind), ()
    view = count.view() if isinstance(count, DmTensor) else count
    if not isinstance(view, TensorView) or view.base.MEMORY != "dm" or view.element.size != 1 \
            or view.base.dtype.name != "i32":
        raise wrong_type("valid_count", count, "an int, or a one-element i32 DM tensor (each slice's count)",
                         call="commit", fix="pass an int, or dm.view().tile(m[axis], 1, …, index)")
    from visa.engines.access import RowRead, read_row
    from visa.engines.common import unit_validity
    from visa.errors import PoisonError

    at = int(np.flatnonzero(view.element.validity())[0])
    bits = view.base.address * 8 + (view.offset + at) * view.base.dtype.image_bits
    per = np.zeros(shape[:3], dtype=np.int64)
    need = unit_validity(lay.chip, lay.cluster, lay.slice)
    for c in range(lay.chip.size):
        vals, known = read_row(RowRead(view.base.dtype, bits, 1), view.base.image(c))
        per[c] = np.asarray(vals, dtype=np.int64)[..., 0]
        if bool((need[c] & ~np.asarray(known)[..., 0]).any()):
            raise PoisonError(f"the valid count {view!r} was never written in a slice the stream holds data in",
                              call="commit valid_count_packing (sub context)", level="Slice",
                              fix="write each slice's count (a commit, or ctx.sub.generate) before the pass")
    counts = np.broadcast_to(per[..., None], shape)
    return engine.valid_count_keep(np.ascontiguousarray(counts), lay.packet, stream.tu.kind), (view,)


def commit(stream: StreamTensor[Any, Any, Any, Any, Any, Any], element: Mapping,
           address: int, valid_count: Any = None) -> DmTensor[Any, Any, Any, Any, Any]:
    """``commit::<Element>(address)`` → ``DmTensor<D, Chip, Cluster, Slice, Element>`` (L2149–2158); with
    ``valid_count`` (sub context) only the first ``count`` lanes of each packet are written (L2322–2324)."""
    from visa.tensors.handles import DmTensor

    element = ensure_mapping(element, "Element", "commit", "Element")
    address = expect_int(address, "address", call="commit")
    ctx, lay = stream.ctx, stream.layout
    engine.check_address(ctx.hw, address, element, "commit")
    packet, _counts = _packed(stream, element, "commit")
    cfg = _plan(stream, element, None, packet)
    keep, count_reads = _valid_count(stream, valid_count)
    tensor: DmTensor[Any, Any, Any, Any, Any] = DmTensor(ctx, lay.dtype, lay.chip, lay.cluster, lay.slice, element,
                                                         address, reads=input_regions(stream, "commit"), call="commit")
    images = [ctx.memory.chip(c).dm for c in range(lay.chip.size)]
    engine.execute(cfg, stream.data, images, address * 8, keep)
    tensor.ready_at = record_pass(stream, _report(stream.ctx.hw, cfg, address), (tensor,), count_reads)
    return tensor


def commit_view(stream: StreamTensor[Any, Any, Any, Any, Any, Any], view: Any, valid_count: Any = None) -> None:
    """``commit_view::<Element>(dst)``: write into an existing DM tensor's view (L2159–2163); ``valid_count`` as
    :func:`commit` (the discarded lanes keep their bytes)."""
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
    keep, count_reads = _valid_count(stream, valid_count)
    if counts is not None:  # the lanes after each packet's kept elements are not written (L2324)
        packed = np.arange(lay.packet.size).reshape(1, 1, 1, 1, -1) >= counts[..., None]
        keep = packed if keep is None else keep | packed
    engine.execute(cfg, stream.data, images, base.address * 8 + view.offset * lay.dtype.image_bits, keep)
    if base.region is not None:
        ctx.memory.registry.note_write(base.region, call=call, writer=base.describe())
    address = base.address + view.offset * lay.dtype.size_bits // 8
    base.ready_at = record_pass(stream, _report(stream.ctx.hw, cfg, address), (view,), count_reads)


def generate(tu: Any, view: Any, value: int | float) -> None:
    """Generate mode (sub context, L2325–2326): write one 32-bit ``value`` at a one-element DM view of every slice
    the tensor occupies, by an ITOS command that bypasses the Tensor Unit pipeline (cost: one write,
    :func:`visa.engines.commit.generate_cycles`)."""
    from visa import dtypes as dt
    from visa.tensors.handles import DmTensor, TensorView
    from visa.tensors.handles import to_storage as storage

    call = "generate"
    view = view.view() if isinstance(view, DmTensor) else view
    if not isinstance(view, TensorView) or view.base.MEMORY != "dm":
        raise wrong_type("view", view, "a one-element DM tensor view", call=call,
                         fix="pass dm.view().tile(m[axis], 1, …, index)")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise wrong_type("value", value, "a number (the 32-bit value to write)", call=call,
                         fix="pass an int or a float")
    ctx, base = tu.ctx, view.base
    base.check_context(ctx, call)
    address = base.address + view.offset * base.dtype.size_bits // 8
    engine.plan_generate(ctx.hw, tu.kind, base.dtype, view.element, address)
    at = int(np.flatnonzero(view.element.validity())[0])
    bits = base.address * 8 + (view.offset + at) * base.dtype.image_bits
    image_value = storage(base.dtype, np.asarray([value]), call)
    from visa.engines.access import ElementWrite, write_element
    from visa.engines.common import unit_validity

    on = unit_validity(base.levels["Chip"], base.levels["Cluster"], base.levels["Slice"])
    write = ElementWrite(base.dtype, bits, image_value)
    for c in range(base.levels["Chip"].size):
        if on[c].any():
            write_element(write, base.image(c), on[c])
    if base.region is not None:
        ctx.memory.registry.note_write(base.region, call=call, writer=base.describe())
    report = EngineReport("generate", f"ITOS {value!r} → {dt.scalar(base.dtype.name)!r} @ {address}",
                          engine.generate_cycles(ctx.hw), nbytes=ctx.hw.commit.generate_value_bits // 8)
    base.ready_at = ctx.record(tu.kind, "generate", [report], writes=(view,)).end
