"""Stream side of the Contraction Engine: ``align``, ``contract``, ``accumulate`` (manual L3670–4548).

``collect_tensor.align(OutTime, OutPacket, trf)`` pairs the stream with a TRF tensor (the Aligner),
``.contract(OutPacket)`` reduces over the packet (the Reducer's trees) and ``.accumulate(OutTime, OutPacket,
kind)`` over time (its accumulator).  The rules and the arithmetic are :mod:`visa.engines.contraction`'s.

The three calls are one pass of the Tensor Unit: ``align`` reads the TRF (a snapshot of the bytes the
sequencer will read) and runs the Stream Adapter; ``contract`` and ``accumulate`` are planned at once, and the
products are computed when the accumulator's result is built — fused, so that the reduction over a time axis
becomes a matrix product.  A :class:`~visa.stream.stages.ContractionTensor`'s own data (the computation
mapping with its Row level, ``(Chip, Cluster, Slice, Row, Time, Packet)``) is computed only if read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa.engines import contraction as engine
from visa.engines.broadcast import BroadcastData, compact_size
from visa.engines.common import EngineReport, LazyData, StreamLayout, unit_validity
from visa.engines.contraction.window import read_window
from visa.errors import VisaError
from visa.mapping.core import ensure_mapping
from visa.tensors.handles import TrfTensor

if TYPE_CHECKING:
    from visa.mapping import Mapping
    from visa.stream.stages import (
        AccumulationKind,
        AccumulationTensor,
        AlignedTensor,
        CollectTensor,
        ContractionTensor,
        ReduceOp,
    )

__all__ = ["align", "contract", "accumulate", "DeferredData", "trf_window", "ContractionPass", "ContractionPlans"]


@dataclass(frozen=True)
class ContractionPlans:
    """What an accumulated stream keeps of its Contraction Engine pass: the Aligner's and the Reducer tree's plans
    and the TRF operand (the activation and the window are let go)."""

    align: engine.AlignPlan
    trf: TrfTensor[Any, Any, Any, Any, Any, Any]
    contract: engine.ContractPlan


@dataclass(frozen=True)
class ContractionPass:
    """What ``align`` hands ``contract`` and ``contract`` hands ``accumulate`` (one pass of the Contraction
    Engine, L3889–4324): the Aligner's plan, the TRF operand, the adapted activation (values, known-mask and its
    Time digits), the TRF window the sequencer reads, the valid ``(Chip, Cluster, Slice)`` positions, the
    activation's replica labels, and (after ``contract``) the Reducer tree's plan."""

    align: engine.AlignPlan
    trf: TrfTensor[Any, Any, Any, Any, Any, Any]
    act: npt.NDArray[Any]
    act_known: npt.NDArray[np.bool_]
    digits: Any
    window: engine.TrfWindow
    valid: npt.NDArray[np.bool_]
    act_replicas: npt.NDArray[np.int64] | None
    contract: engine.ContractPlan | None = None


class DeferredData(LazyData):
    """Stream data computed on first access (a ContractionTensor's, L4310–4317, whose products the accumulator
    fuses)."""

    def __init__(self, compute: Callable[[], tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]]) -> None:
        self._compute = compute

    def _build(self) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
        return self._compute()

    def check(self, layout: StreamLayout) -> None:
        """Deferred data is checked when computed (it has the Row level, see the module docstring)."""


def trf_window(trf: TrfTensor[Any, Any, Any, Any, Any, Any], valid: npt.NDArray[np.bool_], lo: int,
               hi: int) -> engine.TrfWindow:
    """The TRF elements ``lo .. hi - 1`` of ``trf`` at the valid positions, per Row, as the TRF Sequencer reads
    them (L4063–4070): :func:`visa.engines.contraction.window.read_window` over the tensor's TRF images."""
    chips = range(valid.shape[0])
    return read_window(trf.dtype, trf.levels["Row"].size, trf.levels["Element"], trf.element_bit_offset(),
                       [trf.image(c) for c in chips], valid, lo, hi)


def align(
    stream: CollectTensor[Any, Any, Any, Any, Any, Any],
    time: Mapping,
    packet: Mapping,
    trf: TrfTensor[Any, Any, Any, Any, Any, Any],
) -> AlignedTensor[Any, Any, Any, Any, Any, Any]:
    """``align::<OutTime, OutPacket, _, _>(&trf)`` (manual L3889–3896, L4063–4070): the Aligner.

    Plans the Stream Adapter and the TRF Sequencer, runs the Stream Adapter over the data (the result's data
    is the activation in the computation mapping; every Row sees the same) and reads the TRF as the sequencer
    will.  The report gives ``collect_flits``, ``reg_read_size``, the sequencer entries and the TRF cache
    misses.
    """
    from visa.stream.stages import AlignedTensor

    time = ensure_mapping(time, "OutTime", "align", "Time")
    packet = ensure_mapping(packet, "OutPacket", "align", "Packet")
    if not isinstance(trf, TrfTensor):
        raise VisaError(f"align needs a TrfTensor (the weights loaded with to_trf), got {type(trf).__name__}",
                        call="align", fix="load the weights with .collect(...).to_trf(Row, Element, TrfAddress.…)")
    engine.check_context(stream.ctx.hw, stream.tu.kind, "align")
    trf.check_context(stream.ctx, "align")
    trf.check_readable("align")
    hw = stream.ctx.hw
    layout = stream.layout
    operand = engine.TrfOperand(trf.dtype, trf.levels["Chip"], trf.levels["Cluster"], trf.levels["Slice"],
                                trf.levels["Row"], trf.levels["Element"], trf.trf_address.name, trf.address)
    plan = engine.plan_align(hw, layout.dtype, layout.chip, layout.cluster, layout.slice, layout.time,
                             layout.packet, operand, time, packet)
    src = stream.data
    valid = unit_validity(layout.chip, layout.cluster, layout.slice)
    digits = engine.adapt_digits(plan, src.digits) if isinstance(src, BroadcastData) and src.repeats else None
    if isinstance(src, BroadcastData) and digits is not None:  # the fetch's broadcast: adapt the compact stream
        act, act_known = engine.adapt(plan, src.compact_values, src.compact_known, compact_size(digits))
    else:
        act, act_known = engine.adapt(plan, src.values, src.known, units=valid)
        digits = ((plan.act_time, False),)
    lo, hi = engine.window_range(plan)
    window = trf_window(trf, valid, lo, hi)
    out_layout = layout.with_(time=time, packet=packet)
    # the repeats (the fetch's and the tiling's time broadcast) are materialised only if the aligned data is read
    data = BroadcastData(act, act_known, (*digits, (plan.tiles, True)))
    data.check(out_layout)
    report = EngineReport("aligner", plan.describe(), engine.align_cycles(plan), engine.align_latency(plan),
                          details=engine.align_details(plan))
    state = ContractionPass(plan, trf, act, act_known, digits, window, valid,
                            src.replicas)  # (the Stream Adapter treats every slice alike)
    return AlignedTensor(stream.tu, out_layout, data, stream.reports + (report,), stream.inputs + (trf,),
                         stream.carried.with_(contraction=state))


def contract(
    stream: AlignedTensor[Any, Any, Any, Any, Any, Any], packet: Mapping, op: ReduceOp | None = None
) -> ContractionTensor[Any, Any, Any, Any, Any, Any]:
    """``contract::<OutPacket>()`` (manual L4310–4317): the spatial reduction, widening to i32/f32; ``op`` is the
    reduce operation (``ReduceOp.Add``, or ``ReduceOp.Max`` with a one-Row TRF operand, L4393–4395).

    Plans the tree depth; the products are computed with the accumulation (fused), or on reading the
    result's data, which has the Row level: ``(Chip, Cluster, Slice, Row, Time, OutPacket)``.
    """
    from visa.stream.stages import ContractionTensor, ReduceOp

    packet = ensure_mapping(packet, "OutPacket", "contract", "Packet")
    op = ReduceOp.Add if op is None else op
    if not isinstance(op, ReduceOp):
        raise VisaError(f"the reduce operation must be ReduceOp.Add or ReduceOp.Max, got {op!r}", call="contract",
                        fix="pass ReduceOp.Max (from visa), or nothing for ReduceOp.Add")
    hw = stream.ctx.hw
    layout = stream.layout
    state: ContractionPass = stream.carried.contraction
    plan = engine.plan_contract(hw, layout.dtype, layout.packet, packet, op.name, state.trf.levels["Row"])
    align_plan, valid = state.align, state.valid

    def compute() -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
        return engine.contract_values(align_plan, plan, state.act, state.act_known, state.window, valid,
                                      state.digits, state.act_replicas)

    cyc, lat = engine.contract_cycles(plan, align_plan.out_time)
    held = (int(np.count_nonzero(valid)) * int(np.count_nonzero(layout.time.evaluate().valid))
            * int(np.count_nonzero(layout.packet.evaluate().valid)))
    report = EngineReport("reducer.tree", plan.describe(), cyc, latency=lat,
                          details=(("depth", plan.depth), ("tree_depth", plan.tree_depth),
                                   ("outputs_per_row", plan.columns), ("rows", align_plan.rows)),
                          macs=held * align_plan.rows, mac_dtype=layout.dtype.name)
    out_layout = layout.with_(dtype=plan.out_dtype, packet=packet)
    return ContractionTensor(stream.tu, out_layout, DeferredData(compute), stream.reports + (report,), stream.inputs,
                             stream.carried.with_(contraction=replace(state, contract=plan)))


def accumulate(
    stream: ContractionTensor[Any, Any, Any, Any, Any, Any], time: Mapping, packet: Mapping, kind: AccumulationKind
) -> AccumulationTensor[Any, Any, Any, Any, Any, Any]:
    """``accumulate::<OutTime, OutPacket>(kind)`` (manual L4318–4324): the temporal reduction and the output.

    Plans the accumulator (kept and reduced Time axes, buffer slots, the kind's output layout) and computes
    the whole contraction (products, tree and accumulation fused).
    """
    from visa.stream.stages import AccumulationKind, AccumulationTensor

    time = ensure_mapping(time, "OutTime", "accumulate", "Time")
    packet = ensure_mapping(packet, "OutPacket", "accumulate", "Packet")
    if not isinstance(kind, AccumulationKind):
        raise VisaError(f"the accumulation kind must be AccumulationKind.Interleaved or .Sequential, got {kind!r}",
                        call="accumulate", fix="pass AccumulationKind.Interleaved")
    hw = stream.ctx.hw
    layout = stream.layout
    state: ContractionPass = stream.carried.contraction
    align_plan, trf = state.align, state.trf
    contract_plan = state.contract
    assert contract_plan is not None  # (a ContractionTensor's pass has its tree's plan)
    plan = engine.plan_accumulate(hw, layout.dtype, trf.levels["Row"], layout.time, layout.packet, time, packet,
                                  kind.name)
    data = engine.accumulate(align_plan, contract_plan, plan, state.act, state.act_known, state.window,
                             state.valid, state.digits, state.act_replicas)
    cyc, lat = engine.accumulate_cycles(plan)
    report = EngineReport("reducer.accumulator", plan.describe(), cyc, latency=lat,
                          details=(("kind", plan.kind), ("reduced", plan.reduced_text), ("steps", plan.reduced),
                                   ("inner_slots", plan.inner_slots), ("slot_limit", plan.slot_limit)))
    out_layout = layout.with_(time=time, packet=packet)
    data.check(out_layout)
    return AccumulationTensor(stream.tu, out_layout, data, stream.reports + (report,), stream.inputs,
                              stream.carried.with_(contraction=ContractionPlans(align_plan, trf, contract_plan),
                                                   accumulate=plan))
