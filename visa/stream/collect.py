"""Stream side of the Collect Engine and the register-file loads (manual L3543–3669, L4049–4061, L5063).

``collect`` normalises the stream into 32-byte flits (:func:`visa.engines.collect.plan`); ``to_trf`` and
``to_vrf`` end the pass by writing the collected flits into the TRF or the VRF, which records the whole pass
on the context and makes the new tensor ready when the pass ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from visa.engines import channel
from visa.engines import collect as engine
from visa.engines.common import EngineReport, unit_validity
from visa.engines.timing import pass_cost
from visa.errors import StaleTensorError
from visa.mapping import Mapping
from visa.mapping.core import ensure_mapping
from visa.mapping.fast_validity import validity_of
from visa.stream.stages import CollectTensor, FetchTensor
from visa.tensors.handles import TrfAddress, TrfTensor, VrfTensor
from visa.validate import expect_instance, expect_int

if TYPE_CHECKING:
    from visa.memory.registry import Region
    from visa.stream.stages import StreamTensor

__all__ = ["collect", "to_trf", "to_vrf", "record_pass", "pass_reads", "input_regions"]


def collect(stream: StreamTensor[Any, Any, Any, Any, Any, Any], time: Mapping,
            packet: Mapping) -> CollectTensor[Any, Any, Any, Any, Any, Any]:
    """``collect::<Time2, Packet2>()``: pad to 32-byte flits and split larger packets along Time (L3560–3564)."""
    time = ensure_mapping(time, "Time2", "collect", "Time")
    packet = ensure_mapping(packet, "Packet2", "collect", "Packet")
    lay = stream.layout
    hw = stream.ctx.hw
    forwards = isinstance(stream, FetchTensor)  # FetchTensor::collect(): the Switch Engine forwards (L3120-3138)
    held = (hw, lay.slice, lay.time, lay.packet, time, packet)
    ident = (lay.dtype, forwards, *map(id, held))
    seen = _BY_ID.get(ident)
    if seen is not None and all(a is b for a, b in zip(seen[0], held, strict=True)):
        got = seen[1]
    else:
        got = _collect_plan(hw, lay, time, packet, forwards)
        _remember(_BY_ID, ident, (held, got))
    _, cfg, reports = got
    data = engine.execute(cfg, stream.data)
    return stream.then(CollectTensor, lay.with_(time=time, packet=packet), data, *reports)


def _collect_plan(hw: Any, lay: Any, time: Mapping, packet: Mapping, forwards: bool) -> tuple[Any, ...]:
    """``collect``'s configuration and reports, kept per its layout's and arguments' exact keys (:data:`_COLLECTS`)."""
    key = (id(hw), lay.dtype, lay.slice.key, lay.time.key, lay.packet.key, time.key, packet.key, forwards)
    got = _COLLECTS.get(key)
    if got is None or got[0] is not hw:
        cfg = engine.plan(hw, lay.dtype, lay.time, lay.packet, time, packet)
        reports: tuple[EngineReport, ...] = (
            EngineReport("collect", str(cfg), engine.cycles(cfg), details=(("padding", cfg.pad_elements),)),)
        if forwards:
            from visa.stream.switch import forwarding_report

            reports = (forwarding_report(hw, lay), *reports)
        got = _remember(_COLLECTS, key, (hw, cfg, reports))
    return got


#: A stage's configuration and reports per its layout's and arguments' exact keys (and the hardware profile, kept
#: with them: its id is in the key): ``collect`` and the register loads of a kernel's passes plan their stage once,
#: not again at every pass (the plans and reports are pure functions of those; frozen, shared by the passes).
_COLLECTS: dict[Any, tuple[Any, ...]] = {}
_LOADS: dict[Any, tuple[Any, ...]] = {}
#: :data:`_COLLECTS`' and :data:`_LOADS`' entries per the identity of the hardware profile and the mappings their keys
#: read (held by the entry: their ids are theirs while it lives), the dtype and the other arguments: a kernel's pass of
#: the same objects finds its stage's plan without building the mappings' exact keys.
_BY_ID: dict[Any, tuple[Any, ...]] = {}
#: A pass's name, cycles and cost breakdown per its engines' reports (by identity: the entry holds them) — the same
#: reports objects, from the stages' kept plans, give the same :func:`pass_cost`.
_COSTS: dict[Any, tuple[Any, ...]] = {}
_LIMIT = 256


def _remember(store: dict[Any, tuple[Any, ...]], key: Any, value: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(store) >= _LIMIT:
        del store[next(iter(store))]
    store[key] = value
    return value


def pass_reads(stream: StreamTensor[Any, Any, Any, Any, Any, Any]) -> tuple[Any, ...]:
    """What the pass reads: the DM views it fetches (only their bytes: a tile is not its whole tensor) and every
    other memory tensor it reads (TRF weights, VRF operands)."""
    views = tuple(stream.carried.views)
    fetched = {id(v.base) for v in views}
    return views + tuple(t for t in stream.inputs if id(t) not in fetched)


def record_pass(stream: StreamTensor[Any, Any, Any, Any, Any, Any], report: EngineReport,
                writes: tuple[Any, ...] = (), reads: tuple[Any, ...] = ()) -> int:
    """Record the whole pass (every engine's report and this terminal one) on the stream's context track (one
    pass through the pipeline, L3010–3053), reading :func:`pass_reads` and writing ``writes`` (tensors or
    views) and the extra ``reads``; returns the cycle at which it ends (its outputs' ready time).  A dual-channel pass
    (``begin(view, dual_channel=True)``) costs its channel engines at the combined width and holds the sub
    context's lane as well (:mod:`visa.engines.channel`)."""
    reports = stream.reports + (report,)
    lanes: tuple[tuple[int, str], ...] = ()
    if stream.carried.dual_channel:  # the sub context's channel too (visa.engines.channel, L2127, L2142)
        reports = channel.dual(stream.ctx.hw, reports)
        chips = np.flatnonzero(validity_of(stream.layout.chip)).tolist()
        lanes = tuple((int(c), "sub") for c in chips)
    hw = stream.ctx.hw
    key = (id(hw), *map(id, reports))  # (the entry holds them: no other object has their ids while it lives)
    got = _COSTS.get(key)
    if got is None:
        cost = pass_cost(hw, reports)
        got = _remember(_COSTS, key, (hw, reports, " → ".join(r.engine for r in reports), cost.total, str(cost)))
    _, _, name, total, note = got
    op = stream.ctx.record(stream.tu.kind, name, reports, reads=pass_reads(stream) + reads, writes=writes,
                           cycles=total, note=note, extra_lanes=lanes)
    return op.end


def input_regions(stream: StreamTensor[Any, Any, Any, Any, Any, Any], call: str) -> tuple[Region, ...]:
    """The registered bytes of the memory tensors the pass reads: a result written by the pass may not overlap
    them (manual L150–155).  Every pass end calls it before it writes, so it also refuses a pass left open
    across a write of what it read (issue 23): its values came from the old bytes, while the schedule would
    run it after the write, reading the new ones."""
    for region, writes in stream.carried.seen.values():
        if region.writes != writes:
            raise StaleTensorError(
                f"this pass read {region.name}, and {region.written_by} wrote its bytes before the pass ended: the "
                "pass holds the old values, but the schedule would run it after the write", call=call,
                level="Element", fix="end the pass (commit, to_vrf, to_trf) before writing what it reads, or begin "
                                     "it after the write")
    return tuple(t.region for t in stream.inputs if t.region is not None)


def to_trf(stream: CollectTensor[Any, Any, Any, Any, Any, Any], row: Mapping, element: Mapping,
           address: TrfAddress) -> TrfTensor[Any, Any, Any, Any, Any, Any]:
    """``to_trf::<Row, Element>(address)``: the outermost stream axes become Row, the rest Element (L4049–4061)."""
    row = ensure_mapping(row, "Row", "to_trf", "Row")
    element = ensure_mapping(element, "Element", "to_trf", "Element")
    expect_instance(address, TrfAddress, "address", call="to_trf",
                    expected="a TrfAddress (Full, FirstHalf or SecondHalf)", fix="pass TrfAddress.Full")
    ctx, lay = stream.ctx, stream.layout
    cfg, report, units = _load_plan(ctx.hw, lay, row, element, address.name)
    tensor: TrfTensor[Any, Any, Any, Any, Any, Any] = TrfTensor(
        ctx, lay.dtype, lay.chip, lay.cluster, lay.slice, row, element, address,
        reads=input_regions(stream, "to_trf"), call="to_trf")
    images = [ctx.memory.chip(c).trf for c in range(lay.chip.size)]
    engine.execute_load(cfg, stream.data, images, tensor.element_bit_offset(), units)
    tensor.ready_at = record_pass(stream, report, (tensor,))
    return tensor


def _load_plan(hw: Any, lay: Any, row: Mapping | None, element: Mapping, address: str | int
               ) -> tuple[engine.RegisterLoadConfig, EngineReport, Any]:
    """A register load's configuration (``plan_trf`` with a ``row``, else ``plan_vrf``), its report and the
    slices it loads (:func:`unit_validity`, read-only), kept per layout and arguments (:data:`_LOADS`)."""
    held = (hw, lay.chip, lay.cluster, lay.slice, lay.time, lay.packet, row, element)
    ident = ("load", lay.dtype, address, *map(id, held))
    seen = _BY_ID.get(ident)
    if seen is not None and all(a is b for a, b in zip(seen[0], held, strict=True)):
        kept: tuple[Any, ...] = seen[1]
        return kept[1], kept[2], kept[3]
    key = (id(hw), lay.dtype, lay.chip.key, lay.cluster.key, lay.slice.key, lay.time.key, lay.packet.key,
           None if row is None else row.key, element.key, address)
    got = _LOADS.get(key)
    if got is None or got[0] is not hw:
        if row is None:
            cfg = engine.plan_vrf(hw, lay.dtype, lay.time, lay.packet, element, int(address))
        else:
            cfg = engine.plan_trf(hw, lay.dtype, lay.time, lay.packet, row, element, str(address))
        units = unit_validity(lay.chip, lay.cluster, lay.slice)
        units.flags.writeable = False
        got = _remember(_LOADS, key, (hw, cfg, EngineReport(f"to_{cfg.memory}", str(cfg), engine.load_cycles(cfg)),
                                      units))
    _remember(_BY_ID, ident, (held, got))
    return got[1], got[2], got[3]


def to_vrf(stream: CollectTensor[Any, Any, Any, Any, Any, Any], element: Mapping,
           address: int) -> VrfTensor[Any, Any, Any, Any, Any]:
    """``to_vrf(address)`` with Element ``element``: the flattened stream (L280–285, L5063–5081)."""
    element = ensure_mapping(element, "Element", "to_vrf", "Element")
    address = expect_int(address, "address", call="to_vrf")
    ctx, lay = stream.ctx, stream.layout
    cfg, report, units = _load_plan(ctx.hw, lay, None, element, address)
    tensor: VrfTensor[Any, Any, Any, Any, Any] = VrfTensor(
        ctx, lay.dtype, lay.chip, lay.cluster, lay.slice, element, address, reads=input_regions(stream, "to_vrf"),
        call="to_vrf")
    images = [ctx.memory.chip(c).vrf for c in range(lay.chip.size)]
    engine.execute_load(cfg, stream.data, images, tensor.element_bit_offset(), units)
    tensor.ready_at = record_pass(stream, report, (tensor,))
    return tensor
