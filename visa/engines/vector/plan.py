"""The rules of the intra-slice pipeline as pure functions of dtypes and mappings (manual L4679–4973, L5154–5273).

Each ``plan_*`` function either returns the configuration of one step or raises the rule's
:class:`~visa.errors.VisaError`; the stream classes (:mod:`visa.stream.vector`) and the mypy plugin call the
same functions.  Limits come from ``hw.vector`` (stage order, lanes per stage, dtypes, ALU pools).

>>> from visa.hw import RNGD
>>> plan_transition(RNGD, "Branch", "Fxp").lanes
8
>>> plan_transition(RNGD, "Fp", "Fxp")
Traceback (most recent call last):
...
visa.errors.TypestateError: vector_fxp: the Fxp stage comes before the Fp stage; the intra-slice stages run \
in the order Branch → Logic → Fxp → FxpToFp → Narrow → Fp → IntraSliceReduce → FpDiv → Widen → FpToFxp → Clip \
→ Filter → Output and never backwards [manual §Vector Engine › Stages, L4730]; fix: run it in a separate Tensor \
Unit pass [V...]
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.common import axes_text
from visa.errors import DtypeError, HardwareLimitError, LayoutError, ResourceError, TypestateError
from visa.hw import HardwareProfile
from visa.mapping import Mapping, pair_of
from visa.mapping import canon as C
from visa.mapping.core import _axes_of
from visa.mapping.evaluate import BoolArray, IntArray
from visa.memory.known import all_true, known_everywhere
from visa.validate import wrong_type

__all__ = [
    "STAGE_CALLS", "STASHABLE", "StageStep", "LaneConfig", "UnzipConfig", "plan_transition", "input_lanes",
    "check_dtype", "check_kind", "claim", "plan_split", "plan_trim", "plan_concat", "plan_pad", "plan_unzip",
    "plan_entry", "plan_int_width", "dtype_name", "dim_axes", "remove_axis_dims", "digit_maps", "valid_mask",
    "output_lanes", "plan_enter", "check_op", "plan_stash", "plan_stash_operand", "plan_inter_entry",
    "check_vrf_operand", "plan_write_operand", "plan_filter", "pack_order", "plan_pending", "plan_carried_lanes",
    "PENDING_CALLS", "plan_second_read",
]

#: The method that enters each stage (the stage table, L4733–4747).
STAGE_CALLS: dict[str, str] = {
    "Branch": "vector_intra_slice_branch", "Logic": "vector_logic", "Fxp": "vector_fxp",
    "FxpToFp": "vector_fxp_to_fp", "Narrow": "vector_split / vector_trim_way4",
    "Fp": "vector_fp_unary / vector_fp_binary / vector_fp_ternary", "IntraSliceReduce": "vector_intra_slice_reduce",
    "FpDiv": "vector_fp_div", "Widen": "vector_concat / vector_pad_way8", "FpToFxp": "vector_fp_to_fxp",
    "Clip": "vector_clip", "Filter": "vector_filter", "Output": "vector_final",
    "InterSliceReduce": "vector_inter_slice_reduce",
}

#: Stages at which ``vector_stash()`` may be called (L4983).
STASHABLE = frozenset({"Branch", "Logic", "Fxp", "Narrow", "Fp", "FpDiv", "Clip"})


def dtype_name(dtype: type[dt.Scalar]) -> str:
    """``"i32"`` / ``"f32"`` (the manual's names, as the hardware profile keys them)."""
    return dtype.__name__


@dataclass(frozen=True)
class StageStep:
    """A legal move to ``stage``: the lanes the stage's input must have."""

    stage: str
    lanes: int


def input_lanes(hw: HardwareProfile, stage: str) -> int:
    """Lanes a stage consumes: Narrow takes Way8 and Widen Way4; every other stage outputs what it takes."""
    v = hw.vector
    if stage == "Narrow":
        return v.way8_lanes
    if stage == "Widen":
        return v.way4_lanes
    if stage == "InterSliceReduce":
        return v.way8_lanes
    return v.stage_lanes[stage]


def output_lanes(hw: HardwareProfile, stage: str) -> int:
    """Lanes a stage produces (L4733–4747)."""
    if stage in ("InterSliceReduce", "Init"):
        return hw.vector.way8_lanes
    return hw.vector.stage_lanes[stage]


def _order(hw: HardwareProfile) -> str:
    return " → ".join(hw.vector.stages)


def plan_transition(hw: HardwareProfile, current: str, target: str) -> StageStep:
    """Check that a stream at stage ``current`` may call the method of stage ``target`` (L4730, L4733–4751).

    Stages run in the manual's order; every stage is optional; only the stages with an ALU pool (Logic,
    Fxp, Fp, Clip) may repeat; the lanes the current stage produces must be the ones the target consumes
    (Fp, IntraSliceReduce and FpDiv need Way4, so a Narrow first; everything after them needs Way8, so a
    Widen first).
    """
    stages = hw.vector.stages
    call = STAGE_CALLS.get(target, target).split(" / ")[0]
    if target == "InterSliceReduce":
        have = output_lanes(hw, current)
        if have != hw.vector.way8_lanes:
            raise TypestateError(f"the inter-slice reduce is reachable only from a Way8 stage, not from the "
                                 f"{current} stage (Way{have})", call=call, line=6603,
                                 fix="widen with vector_concat / vector_pad_way8 first")
        return StageStep(target, hw.vector.way8_lanes)
    if current == "InterSliceReduce" and target not in ("Branch", "Filter", "Output"):
        raise TypestateError(f"after the inter-slice reduce only vector_intra_slice_branch (InterFirst), "
                             f"vector_filter and vector_final follow, not the {target} stage", call=call,
                             line=4627, fix="start the intra-slice block with vector_intra_slice_branch")
    here = stages.index(current) if current in stages else -1  # Init and InterSliceReduce precede every stage
    there = stages.index(target)
    repeat = target in hw.vector.alu_pools
    if there < here or (there == here and not repeat):
        what = "comes before" if there < here else "was already used at"
        raise TypestateError(f"the {target} stage {what} the {current} stage; the intra-slice stages run in the "
                             f"order {_order(hw)} and never backwards", call=call, line=4730,
                             fix="run it in a separate Tensor Unit pass")
    have = output_lanes(hw, current)
    need = input_lanes(hw, target)
    if have != need:
        fix = ("narrow with vector_split / vector_trim_way4 first" if need == hw.vector.way4_lanes
               else "widen with vector_concat / vector_pad_way8 first")
        raise TypestateError(f"the {target} stage needs Way{need} packets, but the stream is Way{have} after the "
                             f"{current} stage", call=call, level="Packet", line=4733, fix=fix)
    return StageStep(target, need)


def plan_enter(hw: HardwareProfile, current: str, target: str, context: str, call: str) -> StageStep:
    """A stage method called on a stream at stage ``current`` in ``context`` (``"Standalone"``, ``"Paired"``
    after an unzip, ``"Zipped"`` after a ``_zip`` op): the Filter stage is unavailable after a zip (L5204), then
    :func:`plan_transition`."""
    if context == "Zipped" and target in ("Filter",):
        raise TypestateError(f"{call} is unavailable after a _zip (two-group mode)", call=call, line=5204,
                             fix="filter in a single-stream pass (no unzip)")
    return plan_transition(hw, current, target)


def _families() -> dict[tuple[str, str], type[Any]]:
    from visa.engines.vector import ops

    return {("Logic", "i32"): ops.LogicBinaryOpI32, ("Logic", "f32"): ops.LogicBinaryOpF32,
            ("Fxp", "i32"): ops.FxpBinaryOp, ("Fp", "f32"): ops.FpBinaryOp, ("FpDiv", "f32"): ops.FpDivBinaryOp,
            ("Clip", "i32"): ops.ClipBinaryOpI32, ("Clip", "f32"): ops.ClipBinaryOpF32}


def check_op(stage: str, op: Any, dtype: str, call: str) -> None:
    """The operator must be of the stage's family for the stream's dtype (``"i32"``/``"f32"``; L4803–4972)."""
    fam = _families().get((stage, dtype))
    if fam is None or not isinstance(op, fam):
        want = fam.FAMILY if fam is not None else "an operator of another dtype"
        raise DtypeError(f"{call} on a {dtype} stream takes a {want}, got {op!r}", call=call,
                         fix="convert the stream with vector_fxp_to_fp / vector_fp_to_fxp, or pick the matching "
                             "operator family")


def check_kind(op: Any, kinds: tuple[type[Any], ...], call: str) -> None:
    """``call`` takes an operator of one of the families ``kinds`` (unary, ternary and reduce operators, whose
    method fixes the family: L4878–4902, L5390–5402, L6611–6625)."""
    if not isinstance(op, kinds):
        names = " / ".join(k.__name__ for k in kinds)
        raise DtypeError(f"{call} takes an operator of {names}, got {op!r}", call=call,
                         fix=f"pass an operator of {names}")


def plan_stash(stage: str, context: str, taken: bool) -> None:
    """``vector_stash()`` (L4977–5051): standalone streams only (L5202), at a Stashable stage (L4983), once per
    pass (one slot, L4984)."""
    call = "vector_stash"
    if context != "Standalone":
        raise TypestateError("vector_stash() is unavailable in two-group mode, before or after the _zip",
                             call=call, line=5202, fix="stash in a single-stream pass (no unzip)")
    if stage not in STASHABLE:
        raise TypestateError(f"vector_stash() is not available at the {stage} stage (Stashable: "
                             f"{', '.join(sorted(STASHABLE))})", call=call, line=4983,
                             fix="call vector_stash() right after a Stashable stage")
    if taken:
        raise TypestateError("a stash was already taken in this pass; there is one slot per pass", call=call,
                             line=4984, fix="keep one vector_stash() per pass, or split the work over two passes")


def plan_stash_operand(stash_dtype: str | None, consumed_by: str | None, dtype: str, call: str) -> None:
    """A ``Stash`` operand (L4977–4984): a ``vector_stash()`` earlier in the pass (``stash_dtype`` is the dtype
    it saved, None if none), not yet consumed by a binary op, and of the operation's dtype (L4981)."""
    if stash_dtype is None:
        raise TypestateError("the Stash operand needs a vector_stash() earlier in this pass", call=call,
                             line=4979, fix="call .vector_stash() at a Stashable stage before this operation")
    if consumed_by is not None:
        raise TypestateError(f"the stash was already consumed by {consumed_by}; it is not available after "
                             "a binary op consumes it", call=call, line=4984,
                             fix="read the stash once per pass, or split the work over two passes")
    if stash_dtype != dtype:
        raise DtypeError(f"the stash holds {stash_dtype}, but this operation works on {dtype}; "
                         "a stash is consumed only by operations of its own dtype", call=call, line=4981,
                         fix=f"stash the stream where it is {dtype}")


#: What may follow an op that read ``OperandRead`` before the pass wrote the register: elementwise ops (they run
#: per time step between the read and the write) and the write itself.
PENDING_CALLS = frozenset({
    "vector_write_operand", "vector_logic", "vector_logic_with_mode", "vector_fxp", "vector_fxp_with_mode",
    "vector_fxp_to_fp", "vector_fp_to_fxp", "vector_fp_unary", "vector_fp_unary_with_mode", "vector_fp_binary",
    "vector_fp_binary_with_mode", "vector_fp_ternary", "vector_fp_ternary_with_mode", "vector_fp_div",
    "vector_fp_div_with_mode", "vector_clip", "vector_clip_with_mode",
})


def plan_pending(pending: str | None, call: str) -> None:
    """While an op that read ``OperandRead`` (``pending`` names its call) waits for the register's first write in
    the pass, only elementwise ops and ``vector_write_operand`` may follow (L8716–8721: the loop read → write
    closes per time step; a lane change, a reduce, the stash or the end of the pass would break it)."""
    if pending is not None and call not in PENDING_CALLS:
        raise TypestateError(f"{pending} read the operand register (OperandRead) before this pass wrote it; only "
                             f"elementwise ops and .vector_write_operand(WriteOperand(...)) may follow it, not "
                             f".{call}()", call=call, line=8716,
                             fix="call .vector_write_operand(WriteOperand(branch=...)) after the op that reads "
                                 "OperandRead")


def plan_second_read(pending: str | None, call: str) -> None:
    """A second ``OperandRead`` while one waits for its write: one read per write (L8716–8721)."""
    if pending is not None:
        raise TypestateError(f"{pending} already reads the operand register and waits for its write; one OperandRead "
                             "per write", call=call, line=8716,
                             fix="write the operand (vector_write_operand) before reading it again")


def plan_carried_lanes(written: tuple[Mapping, Mapping], here: tuple[Mapping, Mapping], call: str) -> None:
    """The register belongs to a lane: a read at other lanes than the write's (Time, Packet) is refused."""
    if written != here:
        (t0, p0), (t1, p1) = written, here
        raise LayoutError(f"the operand register was written with Time {t0!r}, Packet {p0!r}, but this stream is "
                          f"Time {t1!r}, Packet {p1!r}; each lane carries its own register", call=call,
                          level="Packet", mapping=repr(p1), axis=axes_text(p1), line=8716,
                          fix="read the operand at the lanes that wrote it (before a Narrow or after the Widen)")


def plan_write_operand(write: Any, stage: str, context: str, written: bool, read_dtype: str | None = None,
                       dtype: str | None = None) -> None:
    """``vector_write_operand(WriteOperand(...))`` (L8708–8721): a :class:`WriteOperand`, single-stream passes
    only, at a Stashable stage (the stash's tap points, L4983), once per pass (one register per lane); closing a
    read that waits (``read_dtype``), it writes the dtype that read takes."""
    from visa.engines.vector.ops import WriteOperand

    call = "vector_write_operand"
    if not isinstance(write, WriteOperand):
        raise TypestateError(f"vector_write_operand takes a WriteOperand, got {write!r}", call=call, line=8716,
                             fix="pass WriteOperand(branch=(0, 1))")
    if context != "Standalone":
        raise TypestateError("vector_write_operand() is unavailable in two-group mode", call=call, line=8716,
                             fix="carry the operand in a single-stream pass (no unzip)")
    if stage not in STASHABLE:
        raise TypestateError(f"vector_write_operand() is not available at the {stage} stage (at "
                             f"{', '.join(sorted(STASHABLE))})", call=call, line=4983,
                             fix="write the operand right after a Stashable stage")
    if written:
        raise TypestateError("this pass already wrote the operand register; there is one per lane and pass",
                             call=call, line=8716, fix="write the operand once per pass")
    if read_dtype is not None and dtype is not None and read_dtype != dtype:
        raise DtypeError(f"the op that reads the operand register works on {read_dtype}, but the stream written "
                         f"is {dtype}", call=call, line=8716, fix=f"write the operand where the stream is {read_dtype}")


def plan_inter_entry(order: str, inter_done: bool) -> None:
    """Only one switch between the intra- and the inter-slice block per pass (L4626)."""
    call = "vector_inter_slice_reduce"
    if order == "InterFirst" or inter_done:
        raise TypestateError("this pass already ran its inter-slice reduce (InterFirst); only one switch between "
                             "the blocks is possible", call=call, line=4626, fix="finish the pass with vector_final()")


def check_vrf_operand(vrf_dtype: str, dtype: str, call: str) -> None:
    """A VRF operand has the operation's dtype (L5063–5081)."""
    if vrf_dtype != dtype:
        raise DtypeError(f"the VRF operand is {vrf_dtype} but the operation works on {dtype}",
                         call=call, fix=f"load a {dtype} tensor with .to_vrf()")


def check_dtype(hw: HardwareProfile, stage: str, dtype: type[dt.Scalar], call: str) -> None:
    """The stage's dtype rule (``hw.vector.stage_dtypes``, L4733–4747; Narrow and Widen take i32 as well as f32,
    docs/manual-notes.md Q1)."""
    name = dtype_name(dtype)
    allowed = hw.vector.stage_dtypes.get(stage, hw.vector.input_dtypes)
    if name not in allowed:
        raise DtypeError(f"the {stage} stage works on {' / '.join(sorted(allowed))}, but the stream is {name}",
                         call=call, line=4733,
                         fix="convert with vector_fxp_to_fp / vector_fp_to_fxp first" if stage in
                         ("Fxp", "Fp", "FpDiv", "FxpToFp", "FpToFxp") else None)


def claim(used: frozenset[str], alu: str, call: str) -> frozenset[str]:
    """Take ALU ``alu`` for this pass: each ALU is usable once per pass (L4750, L5252, L5260–5262)."""
    if alu in used:
        raise ResourceError(f"{alu} is already in use", call=call, line=4750,
                            fix="use an operator on another ALU, or split the work over two Tensor Unit passes")
    return used | {alu}


def plan_entry(hw: HardwareProfile, dtype: type[dt.Scalar], packet: Mapping, call: str) -> None:
    """``vector_init`` / branch / unzip / inter-slice input rule: i32 or f32, and Way8 packets (L4551, E16)."""
    name = dtype_name(dtype)
    if name not in hw.vector.input_dtypes:
        raise DtypeError(f"the Vector Engine works on {' / '.join(sorted(hw.vector.input_dtypes))} only, got {name}",
                         call=call, line=4551, fix="widen in the Fetch Engine (e.g. i8 → i32) or after contraction")
    if call != "vector_init" and packet.size != hw.vector.way8_lanes:
        raise LayoutError(f"{call} requires a Packet of {hw.vector.way8_lanes} elements (one 32-byte flit), "
                          f"got {packet.size}", call=call, level="Packet", mapping=repr(packet),
                          axis=axes_text(packet), line=4838,
                          fix=f"collect into packets of {hw.vector.way8_lanes} i32/f32 elements (pad with # 8)")


def plan_int_width(int_width: int, call: str) -> int:
    """``int_width`` of the fixed-point conversions: 0..31 integer bits of a 32-bit value (L4837, L4948)."""
    if not isinstance(int_width, int) or not 0 <= int_width <= 31:
        raise DtypeError(f"int_width must be 0..31 (integer bits of the 32-bit fixed-point value), got {int_width!r}",
                         call=call, fix="vector_fxp_to_fp(31) converts plain integers")
    return int_width


# --------------------------------------------------------------------------------------- lane changes


@dataclass(frozen=True)
class LaneConfig:
    """A Narrow or Widen step: its kind (``split``, ``trim``, ``concat``, ``pad``) and the Time and Packet after
    it (L4842–4947)."""

    kind: str
    time: Mapping
    packet: Mapping

    def apply(self, a: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """The step over one array ``(Chip, Cluster, Slice, Time, Packet)`` (values, known mask, ExecutionIds):
        split and concat regroup the lanes of consecutive flits (the upper half of a Way8 packet is the next
        Way4 time step, L4864, L4935), trim keeps the lower lanes, pad appends invalid ones (L4871, L4946)."""
        lanes = self.packet.size
        if self.kind != "pad" and a.dtype == np.bool_ and a.ndim == 5:  # a known-mask (pad adds unknown lanes)
            kept = a[..., :lanes] if self.kind == "trim" else a
            if all_true(kept):  # all known: it stays (or becomes) an all-known broadcast, no copy
                steps = a.shape[3] if self.kind == "trim" else a.shape[3] * a.shape[4] // lanes
                return known_everywhere((*a.shape[:3], steps, lanes))
        if self.kind in ("split", "concat"):
            return a.reshape(*a.shape[:3], -1, lanes)
        if self.kind == "trim":  # a read-only view of the lower lanes (the stream's own memory, never written
            view = a[..., :lanes]  # through), not a copy of them: the padded stream is not copied again
            view.flags.writeable = False
            return view
        out = np.zeros((*a.shape[:-1], lanes), dtype=a.dtype)  # (np.pad's zeros, in one allocation and one copy)
        out[..., :a.shape[-1]] = a
        return out


def _mismatch(call: str, level: str, want: Mapping, got: Mapping, rule: str, line: int) -> LayoutError:
    """The refusal of a ``level`` mapping other than the one the rule derives (the axis at fault: the axes the
    two do not share, or else theirs)."""
    axis = ", ".join(sorted(want.axes ^ got.axes or want.axes | got.axes)) or None
    return LayoutError(f"{rule}: expected {level} {want!r} (≡ {want}), got {got!r} (≡ {got})", call=call, level=level,
                       mapping=repr(got), axis=axis, line=line, fix=f"pass {level} m[\"{want}\"]")


def plan_split(hw: HardwareProfile, time: Mapping, packet: Mapping, time2: Mapping, packet2: Mapping) -> LaneConfig:
    """``vector_split::<Time2, Packet2>()``: ``[T], [P] → [T, P / 4], [P % 4]`` (L4842–4864, Q4).

    The upper half of each 8-lane packet becomes the innermost new Time factor of size 2, so the flit
    count doubles.
    """
    w8, w4 = hw.vector.way8_lanes, hw.vector.way4_lanes
    if packet.size != w8:
        raise LayoutError(f"vector_split needs a Way8 packet of {w8} elements, got {packet.size}", call="vector_split",
                          level="Packet", mapping=repr(packet), axis=axes_text(packet), line=4842,
                          fix=f"collect into packets of {w8} i32/f32 elements (one 32-byte flit; pad with # {w8})")
    want_t, want_p = pair_of(time, packet.stride(w4)), packet.modulo(w4)
    if time2 != want_t:
        raise _mismatch("vector_split", "Time", want_t, time2, "the upper 4 lanes become the innermost Time factor",
                        4864)
    if packet2 != want_p:
        raise _mismatch("vector_split", "Packet", want_p, packet2, "the lower 4 lanes stay in the Packet", 4864)
    return LaneConfig("split", time2, packet2)


def plan_trim(hw: HardwareProfile, time: Mapping, packet: Mapping, packet2: Mapping) -> LaneConfig:
    """``vector_trim_way4::<Packet2>()``: keep the lower 4 lanes; the upper 4 must be padding (L4866–4871, E13)."""
    w8, w4 = hw.vector.way8_lanes, hw.vector.way4_lanes
    if packet.size != w8:
        raise LayoutError(f"vector_trim_way4 needs a Way8 packet of {w8} elements, got {packet.size}",
                          call="vector_trim_way4", level="Packet", mapping=repr(packet), axis=axes_text(packet),
                          line=4866,
                          fix=f"collect into packets of {w8} i32/f32 elements (one 32-byte flit; pad with # {w8})")
    valid = packet.evaluate().valid
    if bool(valid[w4:].any()):
        raise LayoutError(f"the back {w8 - w4} lanes of the packet must be dummy, but Packet {packet!r} holds data "
                          f"in lanes {[int(k) for k in range(w4, w8) if valid[k]]}", call="vector_trim_way4",
                          level="Packet", mapping=repr(packet), axis=axes_text(packet), line=4851,
                          fix="use vector_split() to keep both halves")
    want = packet.modulo(w4)
    if packet2 != want:
        raise _mismatch("vector_trim_way4", "Packet", want, packet2, "trim keeps the lower 4 lanes", 4871)
    return LaneConfig("trim", time, packet2)


def plan_concat(hw: HardwareProfile, time: Mapping, packet: Mapping, time2: Mapping, packet2: Mapping) -> LaneConfig:
    """``vector_concat::<Time2, Packet2>()``: ``[T, 2], [P4] → [T], [2, P4]`` (reverses split, L4919–4947)."""
    w4 = hw.vector.way4_lanes
    if packet.size != w4:
        raise LayoutError(f"vector_concat needs a Way4 packet of {w4} elements, got {packet.size}",
                          call="vector_concat", level="Packet", mapping=repr(packet), axis=axes_text(packet),
                          line=4919, fix="concat what vector_split produced")
    if time.size % 2:
        raise LayoutError(f"vector_concat merges the innermost Time factor of size 2 into the packet, but Time "
                          f"{time!r} has odd size {time.size}", call="vector_concat", level="Time",
                          mapping=repr(time), axis=axes_text(time), line=4935,
                          fix="concat only what vector_split produced")
    want_t, want_p = time.stride(2), pair_of(time.modulo(2), packet)
    if time2 != want_t:
        raise _mismatch("vector_concat", "Time", want_t, time2, "the innermost Time factor leaves the Time", 4935)
    if packet2 != want_p:
        raise _mismatch("vector_concat", "Packet", want_p, packet2, "it becomes the upper packet half", 4935)
    return LaneConfig("concat", time2, packet2)


def plan_pad(hw: HardwareProfile, time: Mapping, packet: Mapping, packet2: Mapping) -> LaneConfig:
    """``vector_pad_way8::<Packet2>()``: ``[P] → [P # 8]``, the upper lanes invalid (L4940–4947)."""
    w4, w8 = hw.vector.way4_lanes, hw.vector.way8_lanes
    if packet.size != w4:
        raise LayoutError(f"vector_pad_way8 needs a Way4 packet of {w4} elements, got {packet.size}",
                          call="vector_pad_way8", level="Packet", mapping=repr(packet), axis=axes_text(packet),
                          line=4940, fix="pad what vector_trim_way4 produced")
    want = packet.pad(w8)
    if packet2 != want:
        raise _mismatch("vector_pad_way8", "Packet", want, packet2, "pad appends 4 invalid lanes", 4946)
    return LaneConfig("pad", time, packet2)


# ------------------------------------------------------------------------------------ axis factors


def dim_axes(d: C.Dim | C.Lin) -> frozenset[str]:
    """The axes one canonical factor (dim) of a mapping sets (its atom's, or a linear combination's)."""
    return frozenset(_axes_of((d,)))


def remove_axis_dims(mp: Mapping, axis: str, call: str, level: str) -> tuple[Mapping, tuple[bool, ...]]:
    """``mp`` without its factors of ``axis``, and which canonical dims carried it (outermost first).

    A factor that mixes ``axis`` with another axis (a linear combination, or a window over both) cannot be
    separated and is refused.
    """
    dims = mp.canon
    keep: list[C.Dim | C.Lin] = []
    flags: list[bool] = []
    for d in dims:
        names = dim_axes(d)
        if axis in names and (len(names) > 1 or isinstance(d, C.Lin)):
            raise LayoutError(f"the factor {C.canon_text((d,))} of {level} {mp!r} mixes {axis} with other axes",
                              call=call, level=level, mapping=repr(mp), axis=axis,
                              fix=f"give {axis} factors of its own (split it with / and %)")
        flags.append(axis in names)
        if axis not in names:
            keep.append(d)
    return Mapping.from_canon(tuple(keep), mp.axis_set) if keep else Mapping.identity(mp.axis_set), tuple(flags)


def digit_maps(mp: Mapping, flags: tuple[bool, ...]) -> tuple[IntArray, IntArray]:
    """For every position of ``mp``: its position with the flagged dims removed, and the flagged digits' number.

    Dims are mixed-radix digits (outermost first); removing the flagged ones keeps the order of the others,
    which is the position in :func:`remove_axis_dims`'s mapping.  Within one kept position the flagged
    number grows with the position, so it is the time order.
    """
    pos = np.arange(mp.size, dtype=np.int64)
    kept = np.zeros(mp.size, dtype=np.int64)
    removed = np.zeros(mp.size, dtype=np.int64)
    w = mp.size
    for d, f in zip(mp.canon, flags, strict=True):
        w //= d.size
        digit = (pos // w) % d.size
        if f:
            removed = removed * d.size + digit
        else:
            kept = kept * d.size + digit
    return kept, removed


@dataclass(frozen=True)
class UnzipConfig:
    """``vector_intra_slice_unzip``: the grouping axis, its dims in Time, and the per-group Time."""

    axis: str
    time: Mapping
    split_time: Mapping
    flags: tuple[bool, ...]


def plan_unzip(hw: HardwareProfile, axis: str, time: Mapping, packet: Mapping, tile_time: Mapping,
               split_time: Mapping) -> UnzipConfig:
    """``vector_intra_slice_unzip::<I, TileTime, SplitTime>()`` (L5154–5249).

    Time must hold the 2-way grouping axis ``I`` (``begin_interleaved``); group g is the data at ``I = g``.
    ``SplitTime`` is Time without ``I``; ``TileTime`` is Time with ``I``'s factor replaced by a dummy of the
    same size (``m["1 # 2"]`` in the manual's examples).
    """
    call = "vector_intra_slice_unzip"
    if axis not in time.axes:
        raise LayoutError(f"the grouping axis {axis} is not in Time {time!r}", call=call, level="Time",
                          mapping=repr(time), axis=axis, line=5156, fix="collect the interleaved axis into Time")
    rest, flags = remove_axis_dims(time, axis, call, "Time")
    dims = [d for d, f in zip(time.canon, flags, strict=True) if f]
    size = 1
    for d in dims:
        size *= d.size
    if size != 2 or any(isinstance(d, C.Lin) or d.count != d.size for d in dims):
        raise LayoutError(f"the grouping axis {axis} must be a 2-way factor of Time, got size {size}", call=call,
                          level="Time", mapping=repr(time), axis=axis, line=5156, fix=f"use {axis} of size 2")
    last = max(k for k, f in enumerate(flags) if f)
    volume = packet.size
    for d in time.canon[last + 1:]:
        volume *= d.size
    nbytes = volume * 4  # 32-bit lanes (the Vector Engine's i32/f32, L4551)
    if nbytes > hw.vector.unzip_cache_bytes:
        raise HardwareLimitError(
            f"the group inside {axis} holds {volume} lanes ({nbytes} bytes): one group waits in the Vector "
            f"Engine's register-file cache ({hw.vector.unzip_cache_bytes} bytes) while the other streams in "
            "(the reference's bound, furiosa-opt v0.7)", call=call, level="Time", mapping=repr(time), axis=axis,
            line=5156, fix=f"read {axis} further inside Time (fetch/collect it innermost), so that a group is at "
                           f"most {hw.vector.unzip_cache_bytes // 4} lanes")
    if split_time != rest:
        raise _mismatch(call, "Time", rest, split_time, f"SplitTime is Time without {axis}", 5156)
    tile_dims = tuple(C.Dim(None, 1, d.size, 1) if f else d for d, f in zip(time.canon, flags, strict=True))
    want_tile = Mapping.from_canon(tile_dims, time.axis_set)
    if tile_time != want_tile:
        raise _mismatch(call, "Time", want_tile, tile_time, f"TileTime is Time with {axis} replaced by a dummy", 5156)
    return UnzipConfig(axis, time, split_time, flags)


def valid_mask(mappings: tuple[Mapping, ...]) -> BoolArray:
    """Joint validity of a multi-level buffer (padding split across levels is decided on the whole index)."""
    return pair_of(*mappings).validity().reshape(tuple(m.size for m in mappings))


# ------------------------------------------------------------------------------------------------- filter


def plan_filter(hw: HardwareProfile, ids: Any, call: str = "vector_filter") -> Any:
    """The ExecutionIds ``vector_filter`` keeps: a ``ValidBranchIds``, a ``GroupId`` (its ids) or ids, each of
    ``0 .. 2**execution_id_bits - 1`` (L4795, L4973)."""
    from visa.engines.vector.ops import GroupId, ValidBranchIds

    if isinstance(ids, GroupId):
        return ValidBranchIds.group(ids)
    if isinstance(ids, ValidBranchIds):
        keep = ids
    else:
        given = list(ids) if isinstance(ids, Iterable) and not isinstance(ids, str | bytes) else None
        if given is None or not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) for k in given):
            raise wrong_type("ids", ids, "a ValidBranchIds, a GroupId or ExecutionIds 0..15", call=call,
                             fix="pass ValidBranchIds.of(0, 1) or GroupId.One")
        keep = ValidBranchIds.of(*(int(k) for k in given))
    top = (1 << hw.vector.execution_id_bits) - 1
    bad = sorted(i for i in keep.ids if not 0 <= i <= top)
    if bad:
        raise LayoutError(f"ExecutionIds are 0..{top}, got {bad[0]}", call=call, line=4795,
                          fix=f"keep ExecutionIds 0..{top}")
    return keep


def pack_order(exec_id: npt.NDArray[np.uint8] | None, keep: Any, valid: BoolArray
               ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """FilterCompaction (L8580–8584, valid-count packing L2324): per packet, how many elements are kept and the
    lane order that puts them first, in lane order (a stable sort; the dropped ones follow).  A layout padding
    position is not an element and is never kept."""
    shape = valid.shape
    eid = np.zeros(shape, dtype=np.uint8) if exec_id is None else exec_id
    table = np.zeros(256, dtype=bool)
    table[sorted(keep.ids)] = True
    kept = table[eid] & valid
    order = np.argsort(~kept, axis=-1, kind="stable").astype(np.int64)
    return kept.sum(axis=-1).astype(np.int64), order
