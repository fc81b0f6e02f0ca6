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
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from visa.engines import contraction as engine
from visa.engines.broadcast import BroadcastData, compact_size
from visa.engines.common import EngineReport, LazyData, StreamLayout, unit_validity
from visa.errors import VisaError
from visa.mapping.core import ensure_mapping
from visa.memory.images import DenseImage, load, load_nest
from visa.memory.known import known_everywhere
from visa.memory.replicas import Labels, combine, period_of, verifying
from visa.memory.units import UnitSelection
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

__all__ = ["align", "contract", "accumulate", "DeferredData", "trf_window"]


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
    them (L4063–4070; outside the tensor's Element the values are poison; at its padding, what the load wrote
    there: the zero dummies ``1z`` of a masked load are known zeros, L3771)."""
    dtype = trf.dtype
    rows = trf.levels["Row"].size
    element = trf.levels["Element"]
    if dtype.image_bits % 8 == 0 and trf.element_bit_offset() % 8 == 0:
        return _byte_window(trf, valid, lo, hi)
    idx = np.arange(lo, hi, dtype=np.int64)
    inside = (idx >= 0) & (idx < element.size)
    bits = trf.element_bit_offset() + np.where(inside, idx, 0) * dtype.image_bits
    chips, ks, ss = np.nonzero(valid)
    values = np.zeros((len(chips), rows, idx.size), dtype=dtype.storage)
    known = np.zeros((len(chips), rows, idx.size), dtype=bool)
    for c in np.unique(chips).tolist():
        sel = np.flatnonzero(chips == c)
        image = trf.image(int(c))
        on = np.zeros(image.lead_shape, dtype=bool)  # every Row of the valid slices, in (cluster, slice, row) order
        on[ks[sel], ss[sel], :rows] = True
        units = UnitSelection(image, on)
        # a window of whole bytes inside the element (4-bit elements): one strided copy (load_nest), else by index
        base = trf.element_bit_offset() + lo * dtype.image_bits
        got = load_nest(dtype, units, base, ((hi - lo, 1),)) if bool(inside.all()) else None
        v, k = got if got is not None else load(dtype, units, bits)
        values[sel] = v.reshape(len(sel), rows, idx.size)
        known[sel] = k.reshape(len(sel), rows, idx.size) & inside
    return engine.TrfWindow(values, known, lo)


def _byte_window(trf: TrfTensor[Any, Any, Any, Any, Any, Any], valid: npt.NDArray[np.bool_], lo: int,
                 hi: int) -> engine.TrfWindow:
    """:func:`trf_window` for element types whose images are whole little-endian bytes: one slice of the image."""
    dtype = trf.dtype
    rows = trf.levels["Row"].size
    element = trf.levels["Element"]
    nb = dtype.image_bits // 8
    c_lo, c_hi = max(lo, 0), min(hi, element.size)
    chips, ks, ss = np.nonzero(valid)
    if c_hi <= c_lo:  # the window lies outside the element: poison
        return engine.TrfWindow(np.zeros((len(chips), rows, hi - lo), dtype=dtype.storage),
                                np.zeros((len(chips), rows, hi - lo), dtype=bool), lo)
    held = np.asarray(element.evaluate(np.arange(c_lo, c_hi, dtype=np.int64)).valid)
    b0 = trf.element_bit_offset() // 8 + c_lo * nb
    b1 = b0 + (c_hi - c_lo) * nb
    clusters = _cluster_range(valid)
    if clusters is not None and held.all() and (c_lo, c_hi) == (lo, hi):
        # one chip, every slice of a range of clusters, a window inside the element: the rows' bytes, in place
        image = trf.image(0)
        n, box = len(chips), (clusters, slice(None), slice(0, rows))
        word = next(w for w in (8, 4, 2, 1) if (b1 - b0) % w == 0)
        written = image.all_written(b0, b1, box)  # (no mask read) every element known: no per-element mask
        # slices given the same weights repeat with a period: copy one period (a snapshot, so a later to_trf
        # cannot change what this pass reads; L4063-4070).  Known from the writes (the replica ids), then only
        # the first period's rows are read (through pending copies: DenseImage.read_units); or found in the bytes
        period = period_of(_window_labels(image, clusters, rows, b0, b1)) if written else 0
        if period:
            bank = image.lead_shape[-1]
            first = clusters.start * image.lead_shape[1] + np.arange(period, dtype=np.int64)
            units = (first[:, None] * bank + np.arange(rows, dtype=np.int64)).reshape(-1)
            values = image.read_units(units, b0, b1).view(dtype.storage).reshape(period, rows, hi - lo)
            if verifying():
                whole = image.read_data()[clusters, :, :rows, b0:b1].reshape(n, rows, b1 - b0)
                assert engine.has_period(whole.view(np.dtype(f"u{word}")), period), \
                    "TRF replica ids claim a period the bytes do not have"
                assert np.array_equal(whole[:period].view(dtype.storage).reshape(values.shape), values)
            return engine.TrfWindow(values, known_everywhere(values.shape), lo, period)
        view = image.read_data()[clusters, :, :rows, b0:b1].reshape(n, rows, b1 - b0)
        if written:
            words = view.view(np.dtype(f"u{word}"))
            period = engine.weight_period(words)  # found in the bytes
            count = period or n
            values = view[:count].copy().view(dtype.storage).reshape(count, rows, hi - lo)  # (a snapshot, as above)
            return engine.TrfWindow(values, known_everywhere(values.shape), lo, period)
        wr = image.known_bytes(b0, b1, box).reshape(n, rows, hi - lo, nb)
        every = wr[..., 0].copy()  # (padding holds what the load wrote: zero dummies are known, L3771)
        for k in range(1, nb):  # (an element is known when all its bytes are)
            every &= wr[..., k]
        return engine.TrfWindow(view.copy().view(dtype.storage).reshape(n, rows, hi - lo), every, lo)
    values = np.zeros((len(chips), rows, hi - lo), dtype=dtype.storage)
    known = np.zeros((len(chips), rows, hi - lo), dtype=bool)
    for c in np.unique(chips).tolist():
        sel = np.flatnonzero(chips == c)
        image = trf.image(int(c))
        # the window of every Row of the valid slices: one strided copy through element words
        on = np.zeros(image.lead_shape, dtype=bool)
        on[ks[sel], ss[sel], :rows] = True
        got = load_nest(dtype, UnitSelection(image, on), 8 * b0, ((c_hi - c_lo, 1),))
        if got is not None:
            values[sel, :, c_lo - lo: c_hi - lo] = got[0].reshape(len(sel), rows, c_hi - c_lo)
            known[sel, :, c_lo - lo: c_hi - lo] = got[1].reshape(len(sel), rows, c_hi - c_lo)
            continue
        raw = np.ascontiguousarray(image.read_data()[ks[sel], ss[sel], :rows, b0:b1])
        wr = image.known_bytes(b0, b1, (ks[sel], ss[sel], slice(0, rows))).reshape(len(sel), rows, c_hi - c_lo, nb)
        values[sel, :, c_lo - lo: c_hi - lo] = raw.view(dtype.storage.newbyteorder("<"))
        every = wr[..., 0].copy()
        for k in range(1, nb):  # (not .all(axis=-1): a reduction over a tiny last axis is slow)
            every &= wr[..., k]
        known[sel, :, c_lo - lo: c_hi - lo] = every
    return engine.TrfWindow(values, known, lo)


def _window_labels(image: DenseImage, clusters: slice, rows: int, b0: int, b1: int) -> Labels | None:
    """Labels of the slices of ``clusters`` (every slice of each, in order) whose TRF rows ``0 .. rows - 1`` are
    known to hold the same bytes ``[b0, b1)``, row by row (:mod:`visa.memory.replicas`)."""
    n_cl, n_sl, bank = image.lead_shape
    slices = np.arange(clusters.start * n_sl, clusters.stop * n_sl, dtype=np.int64)
    units = (slices[:, None] * bank + np.arange(rows, dtype=np.int64)).reshape(-1)
    labels = image.replica_labels(units, b0, b1)
    if labels is None:
        return None
    per_row = labels.reshape(slices.size, rows)
    return combine(*(per_row[:, r] for r in range(rows)))


def _cluster_range(valid: npt.NDArray[np.bool_]) -> slice | None:
    """The valid ``(Chip, Cluster, Slice)`` positions as a range of clusters of chip 0 (every slice of each), if
    they are that (a cluster level ``1 # 2`` leaves the second cluster out); else None."""
    if valid.shape[0] != 1:
        return None
    on = np.flatnonzero(valid[0].any(axis=1))
    if not on.size or int(on[-1]) - int(on[0]) + 1 != on.size or not bool(valid[0, on].all()):
        return None
    return slice(int(on[0]), int(on[-1]) + 1)


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
    extra = {**stream.extra, "align": plan, "trf": trf, "activation": (act, act_known, digits), "window": window,
             "valid": valid, "act_replicas": src.replicas}  # (the Stream Adapter treats every slice alike)
    return AlignedTensor(stream.tu, out_layout, data, stream.reports + (report,), stream.inputs + (trf,), extra)


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
    trf: TrfTensor[Any, Any, Any, Any, Any, Any] = stream.extra["trf"]
    plan = engine.plan_contract(hw, layout.dtype, layout.packet, packet, op.name, trf.levels["Row"])
    align_plan: engine.AlignPlan = stream.extra["align"]
    act, act_known, digits = stream.extra["activation"]
    window: engine.TrfWindow = stream.extra["window"]
    valid = stream.extra["valid"]

    def compute() -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
        return engine.contract_values(align_plan, plan, act, act_known, window, valid, digits,
                                      stream.extra.get("act_replicas"))

    cyc, lat = engine.contract_cycles(plan, align_plan.out_time)
    held = (int(np.count_nonzero(valid)) * int(np.count_nonzero(layout.time.evaluate().valid))
            * int(np.count_nonzero(layout.packet.evaluate().valid)))
    report = EngineReport("reducer.tree", plan.describe(), cyc, latency=lat,
                          details=(("depth", plan.depth), ("tree_depth", plan.tree_depth),
                                   ("outputs_per_row", plan.columns), ("rows", align_plan.rows)),
                          macs=held * align_plan.rows, mac_dtype=layout.dtype.name)
    out_layout = layout.with_(dtype=plan.out_dtype, packet=packet)
    extra = {**stream.extra, "contract": plan}
    return ContractionTensor(stream.tu, out_layout, DeferredData(compute), stream.reports + (report,), stream.inputs,
                             extra)


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
    align_plan: engine.AlignPlan = stream.extra["align"]
    contract_plan: engine.ContractPlan = stream.extra["contract"]
    trf: TrfTensor[Any, Any, Any, Any, Any, Any] = stream.extra["trf"]
    plan = engine.plan_accumulate(hw, layout.dtype, trf.levels["Row"], layout.time, layout.packet, time, packet,
                                  kind.name)
    act, act_known, digits = stream.extra["activation"]
    data = engine.accumulate(align_plan, contract_plan, plan, act, act_known, stream.extra["window"],
                             stream.extra["valid"], digits, stream.extra.get("act_replicas"))
    cyc, lat = engine.accumulate_cycles(plan)
    report = EngineReport("reducer.accumulator", plan.describe(), cyc, latency=lat,
                          details=(("kind", plan.kind), ("reduced", plan.reduced_text), ("steps", plan.reduced),
                                   ("inner_slots", plan.inner_slots), ("slot_limit", plan.slot_limit)))
    extra = {k: v for k, v in stream.extra.items() if k not in ("activation", "window", "valid", "act_replicas")}
    extra["accumulate"] = plan
    out_layout = layout.with_(time=time, packet=packet)
    data.check(out_layout)
    return AccumulationTensor(stream.tu, out_layout, data, stream.reports + (report,), stream.inputs, extra)
