"""The intra-slice reducer: ``vector_intra_slice_reduce::<R, OTime, OPacket>(op)`` (manual L4907–4913, L5278–5573).

Plan: every factor of the axis ``R`` in Time and Packet is eliminated (factors in Chip, Cluster and Slice are
not: each slice keeps its own partial result, L5359–5361, L5485–5497); ``OTime`` is Time without R and
``OPacket`` is Packet (R absent from it) or ``m["1 # 4"]`` (the whole packet reduced into lane 0); a partial
packet reduce is refused.  The accumulator has 8 slots: the non-reduce Time factors inside the outermost R
factor each need their own (L5499–5543).  Padding of R is excluded by the Valid Count Generator where it can
express the placement (:mod:`visa.engines.vector.vcg`); where it cannot, the result is computed only if every
padded element already holds the operator's identity (the Fetch Engine's ``pad_value`` strategy, L5544–5565),
and refused otherwise.

Execute: the hardware's order — a 2-level tree ``op(op(a, b), op(c, d))`` over the four lanes of a flit when R
is in the Packet, then accumulation over the R time steps in time order, one slot per non-reduce position
(L5363–5389).  Chip, Cluster and Slice pass through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.common import StreamData, StreamLayout
from visa.engines.vector import arith, fast_intra_valid
from visa.engines.vector.cache import cached
from visa.engines.vector.fast_reduce import SHORTCUTS, any_last, by_steps, order_free
from visa.engines.vector.ops import IntraSliceReduceOpF32, IntraSliceReduceOpI32, axis_name
from visa.engines.vector.plan import digit_maps, dim_axes, dtype_name, remove_axis_dims, valid_mask
from visa.engines.vector.vcg import VcgResult, check
from visa.errors import DtypeError, HardwareLimitError, LayoutError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.mapping import canon as C
from visa.mapping.evaluate import BoolArray, IntArray
from visa.memory.known import all_true

__all__ = ["IntraReduceConfig", "plan_intra_reduce", "execute_intra_reduce", "Narrowed"]

CALL = "vector_intra_slice_reduce"


@dataclass(frozen=True)
class Narrowed:
    """The Way8 layout that entered the Narrow step, and how it narrowed (for the VCG, which tags Way8 flits)."""

    time: Mapping
    packet: Mapping
    kind: str  # "split" | "trim"


@dataclass(frozen=True)
class IntraReduceConfig:
    """The reducer's configuration: what is reduced, the slot use, the index maps, and the VCG."""

    op: str
    dtype: str
    axis: str
    out: StreamLayout
    packet_reduce: bool
    slots: int
    steps: int
    perm: IntArray  # (OTime.size, steps): the input time position of each (slot position, R step)
    contributes: BoolArray
    relevant: BoolArray
    out_valid: BoolArray  # the output layout's joint validity
    vcg: VcgResult | None

    def describe(self) -> str:
        """The configuration for the pass report (reduced axis, slots, steps, the VCG's configuration)."""
        vcg = "no padding" if self.vcg is None else (self.vcg.config.describe() if self.vcg.supported and
                                                      self.vcg.config else "identity padding")
        mode = "packet+time" if self.packet_reduce else "time"
        return (f"intra_slice_reduce<{self.axis}>({self.op}) {mode}, {self.slots} slot(s), {self.steps} step(s), "
                f"{vcg}")


def _axis_size(layout: StreamLayout, axis: str) -> int:
    from visa.mapping.evaluate import _axis_sizes

    for lv in (layout.slice, layout.time, layout.packet, layout.chip, layout.cluster):
        got = _axis_sizes(lv.canon).get(axis)
        if got is not None:
            return got
    raise LayoutError(f"the reduce axis {axis} is not in the stream", call=CALL, axis=axis)


def plan_intra_reduce(hw: HardwareProfile, layout: StreamLayout, op: IntraSliceReduceOpI32 | IntraSliceReduceOpF32,
                      axis: Any, otime: Mapping, opacket: Mapping, narrowed: Narrowed | None) -> IntraReduceConfig:
    """Check the reduce's rules and derive its configuration (see the module docstring)."""
    return _plan(hw, layout, op.name, op.dtype, axis_name(axis, CALL), otime, opacket, narrowed)


@cached(paths=(fast_intra_valid.SPLIT,))
def _plan(hw: HardwareProfile, layout: StreamLayout, op: str, op_dtype: str, axis: str, otime: Mapping,
          opacket: Mapping, narrowed: Narrowed | None) -> IntraReduceConfig:
    v = hw.vector
    name = dtype_name(layout.dtype)
    if op_dtype != name or op not in v.intra_reduce_ops.get(name, frozenset()):
        raise DtypeError(f"{op} is not an intra-slice reduce of {name} (supported: "
                         f"{', '.join(sorted(v.intra_reduce_ops.get(name, frozenset())))})", call=CALL, line=5390,
                         fix=f"use an IntraSliceReduceOp{name.upper()} operator")
    time, packet = layout.time, layout.packet
    if axis not in time.axes and axis not in packet.axes:
        raise LayoutError(f"the reduce axis {axis} is in neither Time {time!r} nor Packet {packet!r}; factors in "
                          "Slice are not reduced by the intra-slice reducer", call=CALL, level="Time",
                          mapping=repr(time), axis=axis, line=5359,
                          fix="reduce across slices with vector_inter_slice_reduce")
    rest_t, tflags = remove_axis_dims(time, axis, CALL, "Time")
    packet_reduce = axis in packet.axes
    if packet_reduce:
        others = [d for d in packet.canon if isinstance(d, C.Lin) or (d.atom is not None and axis not in dim_axes(d))]
        if others:
            raise LayoutError(f"Packet {packet!r} mixes {axis} with other axes; the reducer folds a whole packet "
                              "into lane 0 or none of it (a partial packet reduce is impossible)", call=CALL,
                              level="Packet", mapping=repr(packet), axis=axis, line=5361,
                              fix=f"put the other axes in Time, leaving only {axis} in the Packet")
        want_p = Mapping.from_canon((C.Dim(None, 1, v.way4_lanes, 1),), packet.axis_set)
    else:
        want_p = packet
    if otime != rest_t:
        # a factor of R that holds no index of R (e.g. the upper half of a split R # 8 with |R| = 2) is padding
        # in canonical form; it is still one of R's factors
        pad = tuple(f or (isinstance(d, C.Dim) and d.atom is None) for d, f in zip(time.canon, tflags, strict=True))
        kept_dims = tuple(d for d, f in zip(time.canon, pad, strict=True) if not f)
        rest_p = Mapping.from_canon(kept_dims, time.axis_set) if kept_dims else Mapping.identity(time.axis_set)
        if otime == rest_p:
            rest_t, tflags = rest_p, pad
    if otime != rest_t:
        raise LayoutError(f"OTime must be Time without {axis}: expected {rest_t!r} (≡ {rest_t}), got {otime!r}",
                          call=CALL, level="Time", mapping=repr(otime), axis=axis, line=5361,
                          fix=f'pass OTime m["{rest_t}"]')
    if opacket != want_p:
        raise LayoutError(f"OPacket must be {want_p!r} (≡ {want_p}), got {opacket!r}", call=CALL, level="Packet",
                          mapping=repr(opacket), axis=axis, line=5361, fix=f'pass OPacket m["{want_p}"]')
    # the accumulator slots (L5499-5543)
    dims = time.canon
    slots, steps = 1, 1
    first = next((k for k, f in enumerate(tflags) if f), None)
    for k, (d, f) in enumerate(zip(dims, tflags, strict=True)):
        if f:
            steps *= d.size
        elif first is not None and k > first:
            slots *= d.size
    if slots > v.intra_reduce_slots:
        raise HardwareLimitError(f"{slots} accumulator slots required, but only {v.intra_reduce_slots} are "
                                 f"available: the non-reduce Time factors inside the outermost {axis} factor "
                                 f"multiply to {slots}", call=CALL, level="Time", mapping=repr(time), axis=axis,
                                 line=5543, fix=f"move the non-reduce factors outside (before) the outermost {axis} "
                                                "factor of Time")
    kept, removed = digit_maps(time, tflags)
    perm = np.zeros((rest_t.size, steps), dtype=np.int64)
    perm[kept, removed] = np.arange(time.size, dtype=np.int64)
    out = layout.with_(time=otime, packet=opacket)
    lead = (layout.chip, layout.cluster, layout.slice)
    pmap = np.zeros(packet.size, dtype=np.int64) if packet_reduce else np.arange(packet.size, dtype=np.int64)
    split = fast_intra_valid.masks(lead, time, packet, otime, opacket, kept, pmap)
    if split is not None:  # broadcasts over slices that are all valid (fast_intra_valid.py)
        contributes, out_valid, relevant, padded = split
    else:
        contributes = valid_mask((*lead, time, packet))
        out_valid = valid_mask((*lead, otime, opacket))
        relevant = out_valid[:, :, :, np.asarray(kept)][..., pmap]
        padded = bool((relevant & ~contributes).any())
    vcg: VcgResult | None = None
    if padded:
        if narrowed is None:
            vcg = VcgResult(None, False, "the stream did not enter through a Narrow step")
        else:
            vcg = check(hw, axis, _axis_size(layout, axis), layout.slice, narrowed.time, narrowed.packet,
                        narrowed.kind, contributes, relevant)
    return IntraReduceConfig(op, name, axis, out, packet_reduce, slots, steps, perm, contributes, relevant,
                             out_valid, vcg)


def _gather_steps(x: npt.NDArray[Any], perm: IntArray) -> npt.NDArray[Any]:
    """The time steps of each output step (``perm``, Time is axis 3), gathered by index."""
    return x[:, :, :, perm]


def execute_intra_reduce(cfg: IntraReduceConfig, data: StreamData, exec_id: npt.NDArray[np.uint8] | None
                         ) -> tuple[StreamData, npt.NDArray[np.uint8] | None]:
    """Run the reducer: lane tree (R in Packet), then temporal accumulation in time order per slot."""
    op, dtype = cfg.op, cfg.dtype
    ident = np.asarray(arith.reduce_identity(op, dtype), dtype=np.int32 if dtype == "i32" else np.float32)
    contrib = cfg.contributes
    values, known = data.values, data.known
    if cfg.vcg is not None and not cfg.vcg.supported:
        pad = cfg.relevant & ~contrib
        ok = known & (values == ident)
        bad = pad & ~ok
        if bad.any():
            where = tuple(int(k[0]) for k in np.nonzero(bad))
            raise LayoutError(f"{cfg.vcg.reason}, and the padded elements of {cfg.axis} do not hold the identity of "
                              f"{op} (e.g. slice {where[2]}, time {where[3]}, lane {where[4]})", call=CALL,
                              level="Slice", axis=cfg.axis, line=5584,
                              fix=f"restructure the mapping into a supported placement (Slice outer / Time inner, "
                                  f"{cfg.axis} innermost in the Packet), or pad {cfg.axis} with the identity "
                                  f"{ident.item()} through the Fetch Engine's pad_value")
    fast = SHORTCUTS.on  # (fast_reduce: no identity where every position contributes, no mask when all known)
    x = values if fast and all_true(contrib) else np.where(contrib, values, ident)
    # poison: a contributing element unknown
    bad_known: BoolArray | None = None if fast and all_true(known) else np.asarray(contrib & ~known)
    poison: BoolArray | None = bad_known
    perm = cfg.perm
    steps = by_steps if fast else _gather_steps
    if cfg.packet_reduce:  # (C, K, S, T'): the lanes' tree, then the steps in order
        poison = None if bad_known is None else any_last(bad_known)
        pois = any_last(np.zeros((1,) * 5, bool) if poison is None else steps(np.asarray(poison), perm))
        # (vector.intra-order-free: an i32 Max / Min over the lanes and the steps in one reduction)
        once = order_free(op, dtype, x, perm, steps)
        red = once if once is not None else arith.sequential_reduce(
            op, dtype, steps(arith.tree4(op, dtype, x), perm), axis=-1)  # (tree4: (C, K, S, T))
    else:
        y = steps(x, perm)  # (C, K, S, T', steps, P)
        p = np.zeros((1,) * y.ndim, bool) if poison is None else steps(np.asarray(poison), perm)
        red = arith.sequential_reduce(op, dtype, np.moveaxis(y, 4, -1), axis=-1)
        pois = np.asarray(p.any(axis=4))
    shape = cfg.out.shape
    if cfg.packet_reduce:
        out_v = np.zeros(shape, dtype=values.dtype)
        out_v[..., 0] = red
        out_k = np.zeros(shape, dtype=bool)
        out_k[..., 0] = ~pois
    else:
        out_v = np.asarray(red, dtype=values.dtype)
        out_k = np.asarray(~pois)
    out_k = out_k & cfg.out_valid
    out_e: npt.NDArray[np.uint8] | None = None
    if exec_id is not None:
        last = exec_id[:, :, :, perm[:, -1]]
        out_e = np.zeros(shape, dtype=np.uint8)
        if cfg.packet_reduce:
            out_e[..., 0] = last[..., -1]
        else:
            out_e = np.ascontiguousarray(last)
    return StreamData(out_v, out_k), out_e
