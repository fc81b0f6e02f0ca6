"""The single-stream Vector Engine stages: one class per stage, so that mypy sees the stage order (manual L4679–4976).

``Branch → Logic → Fxp → FxpToFp → Narrow → Fp → IntraSliceReduce → FpDiv → Widen → FpToFxp → Clip → Filter →
Output``: each class has exactly the methods of the stages that may follow it (every stage optional, never
backwards, L4730) **and** that take its lane mode (Fp, IntraSliceReduce and FpDiv are Way4; everything else is
Way8, L4733–4747), so a backwards call or a Way4 op on a Way8 stream is an attribute error under mypy.  The
order marker (``IntraFirst`` / ``InterFirst``) is the last type argument: the inter-slice reduce is callable
only on ``IntraFirst`` streams, the branch after an inter-slice reduce only on ``InterFirst`` ones.  The same
rules are checked at run time (``TypestateError``), together with the ones types cannot express (ALU reuse,
dtypes, the stash, the context after a zip).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from visa import dtypes as dt
from visa.engines.common import StreamData
from visa.engines.deferred import DeferredData
from visa.engines.shared import SharedRows
from visa.engines.vector import arith
from visa.engines.vector.cost import vector_report
from visa.engines.vector.elementwise import (
    Resolved,
    apply,
    branch_ids,
    carry_fill,
    carry_scan,
    check_constant,
    final_register,
    id_mask,
    kind_of,
    plan_branch,
    plan_operand_read,
    vrf_branch_ids,
)
from visa.engines.vector.inter import execute_inter_reduce, plan_inter_reduce
from visa.engines.vector.intra import Narrowed, execute_intra_reduce, plan_intra_reduce
from visa.engines.vector.ops import (
    REDUCE_RESOURCE,
    BinaryArgMode,
    BranchMode,
    ClipBinaryOpF32,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpDivBinaryOp,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    GroupId,
    InterFirst,
    InterSliceReduceOpF32,
    InterSliceReduceOpI32,
    IntraFirst,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    OperandRead,
    StashMarker,
    TernaryArgMode,
    TernaryOperand,
    UnaryArgMode,
    ValidBranchIds,
    VeOp,
    VeRhs,
    WriteOperand,
)
from visa.engines.vector.plan import (
    LaneConfig,
    check_kind,
    check_op,
    dtype_name,
    pack_order,
    plan_carried_lanes,
    plan_concat,
    plan_enter,
    plan_entry,
    plan_filter,
    plan_int_width,
    plan_inter_entry,
    plan_pad,
    plan_second_read,
    plan_split,
    plan_stash,
    plan_transition,
    plan_trim,
    plan_write_operand,
    valid_mask,
)
from visa.errors import DtypeError, LayoutError, TypestateError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.memory.known import copy_known
from visa.stream.stages import VectorFinalTensor
from visa.stream.vector.base import (
    Carry,
    Chip,
    Cluster,
    D,
    ExecIds,
    O,
    Packet,
    PendingRead,
    Slice,
    StashSlot,
    Time,
    VeBase,
    describe_operand,
    op_fn,
)

if TYPE_CHECKING:
    from visa.stream.vector.pair import VectorTensorPair
    from visa.tensors.handles import DeviceTensor

__all__ = [
    "VectorInitTensor", "VectorBranchTensor", "VectorLogicTensor", "VectorFxpTensor", "VectorFxpToFpTensor",
    "VectorNarrowTensor", "VectorFpTensor", "VectorIntraSliceReduceTensor", "VectorFpDivTensor",
    "VectorWidenTensor", "VectorFpToFxpTensor", "VectorClipTensor", "VectorFilterTensor",
    "VectorInterSliceReduceTensor",
]

V = TypeVar("V", bound=VeBase[Any, Any, Any, Any, Any, Any, Any])

def check_mode(mode: Any, cls: type[Any], call: str) -> tuple[int, ...]:
    """The argument slots of an argument mode of the class ``cls`` (``BinaryArgMode`` …, L5086–5112)."""
    if not isinstance(mode, cls):
        raise TypestateError(f"{call} takes a {cls.__name__}, got {mode!r}", call=call,
                             fix=f"pass a {cls.__name__}.Mode… (L5086–5112)")
    args: tuple[int, ...] = mode.args
    return args


class _Ops(VeBase[D, Chip, Cluster, Slice, Time, Packet, O]):
    """The shared machinery of the stage methods."""

    __slots__ = ()

    def _binop(self, cls: type[V], stage: str, op: VeOp, args: tuple[int, ...], operand: Any, call: str) -> V:
        self.enter(call, stage)
        check_op(stage, op, dtype_name(self.dtype), call)
        return self._operate(cls, stage, op, args, operand, call)

    def _operate(self, cls: type[V], stage: str, op: VeOp, args: tuple[int, ...], operand: Any, call: str) -> V:
        """``op`` with its operand(s) over the stream (the stage entered and the operator checked)."""
        if isinstance(operand, OperandRead):
            return self._carried(cls, stage, op, args, operand, call)
        if isinstance(op, FpTernaryOp):
            pair = (operand.operand0, operand.operand1) if isinstance(operand, TernaryOperand) else operand
            if isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], OperandRead):
                return self._carried(cls, stage, op, args, pair[0], call, pair[1])
        ve = self.ve.use(op.alu, call)
        data, ve, inputs = self.operate(op, args, operand, call, ve, self.data, self.ve.exec_id)
        mode = "" if args == tuple(range(len(args))) else f", Mode{''.join(map(str, args))}"
        ve = ve.step(stage, f"{op!r}{mode}, {describe_operand(operand)}", self.layout.time.size)
        return self.advance(cls, self.layout, data, ve, inputs)

    def _carried(self, cls: type[V], stage: str, op: VeOp, args: tuple[int, ...], operand: OperandRead,
                 call: str, constant: Any = None) -> V:
        """``op`` with ``OperandRead``: the carried register as its operand (L8708–8721) — of a binary op, or
        operand0 of a ternary one (``constant`` is then its f32 operand1, L5059).  Written earlier in the pass, the
        register is read as it stands at each time step; not yet written, the op waits for the
        ``vector_write_operand`` that must follow (:class:`PendingRead`)."""
        dtype = dtype_name(self.dtype)
        carry = self.ve.carry
        plan_operand_read(carry.dtype if carry is not None else None, dtype, self.ve.context, call)
        plan_second_read(None if self.ve.pending is None else self.ve.pending.call, call)
        fn = op_fn(op)
        mode = "" if args == tuple(range(len(args))) else f", Mode{''.join(map(str, args))}"
        text = f"{op!r}{mode}, {operand!r}"
        if isinstance(op, FpTernaryOp):
            if kind_of(constant) != "constant" or isinstance(constant, (VeRhs, StashMarker)):
                raise DtypeError("operand1 of a ternary operation must be an f32 constant", call=call, line=5059,
                                 fix="pass (OperandRead(...), a float)")
            c = check_constant(constant, "f32", call)
            fn3, slots3 = fn, args

            def fn(x: Any, reg: Any) -> Any:
                return fn3(*((x, reg, c)[a] for a in slots3))

            args = (0, 1)
            text += f", {constant!r}"
        ve = self.ve.use(op.alu, call)
        if carry is None:
            pending = PendingRead(fn, args, self.data, operand.branch, call, dtype)
            ve = ve.step(stage, text, self.layout.time.size, pending=pending)
            return self.advance(cls, self.layout, StreamData(self.data.values, self.data.known), ve)
        plan_carried_lanes((carry.time, carry.packet), (self.layout.time, self.layout.packet), call)
        ids = self.ve.exec_id if self.ve.exec_id is not None else np.zeros(self.layout.shape, np.uint8)
        sel = id_mask(ids, operand.branch)
        reg, reg_k = carry.seen()
        values, known = apply(fn, args, self.data.values, self.data.known, [([Resolved(reg, reg_k)], None)], None, 0)
        data = StreamData(np.where(sel, values, self.data.values), np.where(sel, known, self.data.known))
        ve = ve.step(stage, text, self.layout.time.size)
        return self.advance(cls, self.layout, data, ve)

    def _relane(self, cls: type[V], stage: str, cfg: LaneConfig, text: str, **changes: Any) -> V:
        """A Narrow or Widen step: the data and the ExecutionIds regrouped as the plan says."""
        ids = None if self.ve.exec_id is None else cfg.apply(self.ve.exec_id)
        ve = self.ve.step(stage, text, cfg.time.size, exec_id=ids, **changes)
        data = StreamData(cfg.apply(self.data.values), cfg.apply(self.data.known))
        return self.advance(cls, self.layout.with_(time=cfg.time, packet=cfg.packet), data, ve)

    def _convert(self, cls: type[V], stage: str, call: str, int_width: int) -> V:
        """``vector_fxp_to_fp`` / ``vector_fp_to_fxp``: the FxpToFp or FpToFxp stage."""
        self.enter(call, stage)
        fn, dtype = arith.CONVERSIONS[stage]
        iw = plan_int_width(int_width, call)
        ve = self.ve.step(stage, f"{call.removeprefix('vector_')}({iw})", self.layout.time.size)
        if ve.pending is not None:
            ve = replace(ve, pending=ve.pending.then(lambda y, yk, t: (fn(y, iw), yk)))
        return self.advance(cls, self.layout.with_(dtype=dt.scalar(dtype)),
                            StreamData(fn(self.data.values, iw), copy_known(self.data.known)), ve)


class _Logic(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_logic(self, op: LogicBinaryOpI32 | LogicBinaryOpF32, operand: Any
                     ) -> VectorLogicTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """Logic cluster, Way8 (L4803–4820): a bitwise operator against an operand."""
        return self._binop(VectorLogicTensor, "Logic", op, (0, 1), operand, "vector_logic")

    def vector_logic_with_mode(self, op: LogicBinaryOpI32 | LogicBinaryOpF32, mode: BinaryArgMode, operand: Any
                               ) -> VectorLogicTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """``vector_logic`` with a :class:`BinaryArgMode` (L5094–5101)."""
        args = check_mode(mode, BinaryArgMode, "vector_logic_with_mode")
        return self._binop(VectorLogicTensor, "Logic", op, args, operand, "vector_logic_with_mode")


class _Fxp(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_fxp(self, op: FxpBinaryOp, operand: Any) -> VectorFxpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """Fxp cluster, i32, Way8 (L4821–4836): ``op(x, operand)``."""
        return self._binop(VectorFxpTensor, "Fxp", op, (0, 1), operand, "vector_fxp")

    def vector_fxp_with_mode(self, op: FxpBinaryOp, mode: BinaryArgMode, operand: Any
                             ) -> VectorFxpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """``vector_fxp`` with a :class:`BinaryArgMode`: ``Mode10`` computes ``op(operand, x)`` (L5120–5134)."""
        args = check_mode(mode, BinaryArgMode, "vector_fxp_with_mode")
        return self._binop(VectorFxpTensor, "Fxp", op, args, operand, "vector_fxp_with_mode")


class _FxpToFp(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_fxp_to_fp(self, int_width: int) -> VectorFxpToFpTensor[dt.f32, Chip, Cluster, Slice, Time, Packet, O]:
        """i32 → f32 with ``int_width`` integer bits (L4837–4841; ``31`` converts plain integers)."""
        return self._convert(VectorFxpToFpTensor, "FxpToFp", "vector_fxp_to_fp", int_width)


class _FpToFxp(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_fp_to_fxp(self, int_width: int) -> VectorFpToFxpTensor[dt.i32, Chip, Cluster, Slice, Time, Packet, O]:
        """f32 → i32 with ``int_width`` integer bits, rounding half away from zero, saturating (L4948–4952)."""
        return self._convert(VectorFpToFxpTensor, "FpToFxp", "vector_fp_to_fxp", int_width)


class _Narrow(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_split(self, time: Mapping, packet: Mapping
                     ) -> VectorNarrowTensor[D, Chip, Cluster, Slice, Any, Any, O]:
        """Narrow, both halves real: ``[T], [P] → [T, P / 4], [P % 4]`` (L4842–4864); the flits double."""
        self.enter("vector_split", "Narrow")
        cfg = plan_split(self.hw, self.layout.time, self.layout.packet, time, packet)
        return self._relane(VectorNarrowTensor, "Narrow", cfg, f"split({time!r}, {packet!r})",
                            narrowed=Narrowed(self.layout.time, self.layout.packet, "split"))

    def vector_trim_way4(self, packet: Mapping) -> VectorNarrowTensor[D, Chip, Cluster, Slice, Time, Any, O]:
        """Narrow, upper lanes padding: ``[T], [P] → [T], [P % 4]`` (L4866–4871); type-only in hardware."""
        self.enter("vector_trim_way4", "Narrow")
        cfg = plan_trim(self.hw, self.layout.time, self.layout.packet, packet)
        return self._relane(VectorNarrowTensor, "Narrow", cfg, f"trim_way4({packet!r})",
                            narrowed=Narrowed(self.layout.time, self.layout.packet, "trim"))


class _Widen(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_concat(self, time: Mapping, packet: Mapping) -> VectorWidenTensor[D, Chip, Cluster, Slice, Any, Any, O]:
        """Widen, reversing a split: ``[T, 2], [P4] → [T], [2, P4]`` (L4919–4939)."""
        self.enter("vector_concat", "Widen")
        cfg = plan_concat(self.hw, self.layout.time, self.layout.packet, time, packet)
        return self._relane(VectorWidenTensor, "Widen", cfg, f"concat({time!r}, {packet!r})")

    def vector_pad_way8(self, packet: Mapping) -> VectorWidenTensor[D, Chip, Cluster, Slice, Time, Any, O]:
        """Widen, reversing a trim: ``[P] → [P # 8]`` with invalid upper lanes (L4940–4947)."""
        self.enter("vector_pad_way8", "Widen")
        cfg = plan_pad(self.hw, self.layout.time, self.layout.packet, packet)
        return self._relane(VectorWidenTensor, "Widen", cfg, f"pad_way8({packet!r})")


class _Fp(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def _unary(self, op: FpUnaryOp, args: tuple[int, ...], operand: Any, call: str
               ) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        self.enter(call, "Fp")
        check_kind(op, (FpUnaryOp,), call)
        ve = self.ve.use(op.alu, call)
        inputs: tuple[DeviceTensor, ...] = ()
        if args == (1,):
            if operand is None:
                raise TypestateError("UnaryArgMode.Mode1 computes op(operand): pass the operand", call=call,
                                     line=5092)
            r, ve, inputs = self.resolve(operand, "f32", call, ve, known=self.data.known)
            src, kn = np.broadcast_to(r.values, self.layout.shape), np.broadcast_to(r.known, self.layout.shape)
        else:
            src, kn = self.data.values, self.data.known
        values = arith.fp_unary(op.name, src)
        ve = ve.step("Fp", f"{op!r}" + ("" if args == (0,) else f"(Mode1, {describe_operand(operand)})"),
                     self.layout.time.size)
        pending = ve.pending
        if pending is not None:
            name = op.name
            if args == (1,):
                fixed, fixed_k = src, kn
                pending = pending.then(lambda y, yk, t: (arith.fp_unary(name, fixed[:, :, :, t]), fixed_k[:, :, :, t]))
            else:
                pending = pending.then(lambda y, yk, t: (arith.fp_unary(name, y), yk))
            ve = replace(ve, pending=pending)
        return self.advance(VectorFpTensor, self.layout, StreamData(np.ascontiguousarray(values),
                                                                    np.ascontiguousarray(kn)), ve, inputs)

    def vector_fp_unary(self, op: FpUnaryOp) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """Float cluster, f32, Way4 (L4878–4888): exp, sqrt, tanh, sigmoid, erf, log, sin, cos."""
        return self._unary(op, (0,), None, "vector_fp_unary")

    def vector_fp_unary_with_mode(self, op: FpUnaryOp, mode: UnaryArgMode, operand: Any = None
                                  ) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """``vector_fp_unary`` with a :class:`UnaryArgMode`; ``Mode1`` computes ``op(operand)`` (L5088–5093)."""
        args = check_mode(mode, UnaryArgMode, "vector_fp_unary_with_mode")
        return self._unary(op, args, operand, "vector_fp_unary_with_mode")

    def vector_fp_binary(self, op: FpBinaryOp, operand: Any) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet,
                                                                               O]:
        """Float cluster binary (L4889–4897): ``AddF``, ``SubF``, ``MulF(alu)``, ``MaskMulF(alu)``, ``DivF``."""
        return self._binop(VectorFpTensor, "Fp", op, (0, 1), operand, "vector_fp_binary")

    def vector_fp_binary_with_mode(self, op: FpBinaryOp, mode: BinaryArgMode, operand: Any
                                   ) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """``vector_fp_binary`` with a :class:`BinaryArgMode`."""
        args = check_mode(mode, BinaryArgMode, "vector_fp_binary_with_mode")
        return self._binop(VectorFpTensor, "Fp", op, args, operand, "vector_fp_binary_with_mode")

    def _ternary(self, op: FpTernaryOp, args: tuple[int, ...], operands: Any, call: str
                 ) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        self.enter(call, "Fp")
        check_kind(op, (FpTernaryOp,), call)
        return self._operate(VectorFpTensor, "Fp", op, args, operands, call)

    def vector_fp_ternary(self, op: FpTernaryOp, operands: Any
                          ) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """Float cluster ternary (L4898–4902): ``FmaF`` = ``x · operand0 + operand1``, fused."""
        return self._ternary(op, (0, 1, 2), operands, "vector_fp_ternary")

    def vector_fp_ternary_with_mode(self, op: FpTernaryOp, mode: TernaryArgMode, operands: Any
                                    ) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """``vector_fp_ternary`` with a :class:`TernaryArgMode` (L5102–5112)."""
        args = check_mode(mode, TernaryArgMode, "vector_fp_ternary_with_mode")
        return self._ternary(op, args, operands, "vector_fp_ternary_with_mode")


class _Isr(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_intra_slice_reduce(self, axis: Any, time: Mapping, packet: Mapping,
                                  op: IntraSliceReduceOpI32 | IntraSliceReduceOpF32
                                  ) -> VectorIntraSliceReduceTensor[D, Chip, Cluster, Slice, Any, Any, O]:
        """``vector_intra_slice_reduce::<R, OTime, OPacket>(op)``, Way4 (L4907–4913, L5278–5573)."""
        call = "vector_intra_slice_reduce"
        self.enter(call, "IntraSliceReduce")
        check_kind(op, (IntraSliceReduceOpI32, IntraSliceReduceOpF32), call)
        ve = self.ve.use(REDUCE_RESOURCE, call)
        cfg = plan_intra_reduce(self.hw, self.layout, op, axis, time, packet, self.ve.narrowed)
        data, ids = execute_intra_reduce(cfg, self.data, self.ve.exec_id)
        ve = ve.step("IntraSliceReduce", cfg.describe(), self.layout.time.size, exec_id=ids,
                     reduce_steps=cfg.steps)
        return self.advance(VectorIntraSliceReduceTensor, cfg.out, data, ve)


class _FpDiv(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_fp_div(self, op: FpDivBinaryOp, operand: Any
                      ) -> VectorFpDivTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """FpDiv stage, f32, Way4 (L4914–4918): ``x / operand`` on the dedicated divider."""
        return self._binop(VectorFpDivTensor, "FpDiv", op, (0, 1), operand, "vector_fp_div")

    def vector_fp_div_with_mode(self, op: FpDivBinaryOp, mode: BinaryArgMode, operand: Any
                                ) -> VectorFpDivTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """``vector_fp_div`` with a :class:`BinaryArgMode` (``Mode10``: ``operand / x``)."""
        args = check_mode(mode, BinaryArgMode, "vector_fp_div_with_mode")
        return self._binop(VectorFpDivTensor, "FpDiv", op, args, operand, "vector_fp_div_with_mode")


class _Clip(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_clip(self, op: ClipBinaryOpI32 | ClipBinaryOpF32, operand: Any
                    ) -> VectorClipTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """Clip cluster, Way8 (L4953–4972): min, max, abs-min, abs-max, add."""
        return self._binop(VectorClipTensor, "Clip", op, (0, 1), operand, "vector_clip")

    def vector_clip_with_mode(self, op: ClipBinaryOpI32 | ClipBinaryOpF32, mode: BinaryArgMode, operand: Any
                              ) -> VectorClipTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """``vector_clip`` with a :class:`BinaryArgMode`."""
        args = check_mode(mode, BinaryArgMode, "vector_clip_with_mode")
        return self._binop(VectorClipTensor, "Clip", op, args, operand, "vector_clip_with_mode")


class _Filter(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_filter(self, ids: ValidBranchIds | GroupId | Iterable[int]
                      ) -> VectorFilterTensor[D, Chip, Cluster, Slice, Time, Packet, O]:
        """Filter, Way8 (L4973–4974; FilterCompaction L8580–8584): the elements whose ExecutionId is in ``ids``
        are kept and packed to the front of their packet, in order (valid-count packing, L2324); the lanes after
        them hold nothing.  ``commit`` writes only the kept elements, ``commit_view`` leaves the others' bytes
        as they were.  Unavailable after a ``_zip``."""
        call = "vector_filter"
        self.enter(call, "Filter")
        keep = plan_filter(self.hw, ids, call)
        counts, order = pack_order(self.ve.exec_id, keep, valid_mask(self.levels()))
        lanes = np.arange(self.layout.packet.size).reshape(1, 1, 1, 1, -1)
        live = lanes < counts[..., None]
        values = np.take_along_axis(self.data.values, order, axis=-1)
        known = np.take_along_axis(self.data.known, order, axis=-1) & live
        eid = None if self.ve.exec_id is None else np.take_along_axis(self.ve.exec_id, order, axis=-1)
        ve = self.ve.step("Filter", f"filter({sorted(keep.ids)}), packed", self.layout.time.size, exec_id=eid,
                          packed=counts)
        return self.advance(VectorFilterTensor, self.layout, StreamData(values, known), ve)


class _Final(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_final(self) -> VectorFinalTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Leave the Vector Engine (L4975–4976); the result continues to cast, transpose or commit."""
        call = "vector_final"
        self.enter(call, "Output")
        report = vector_report(self.hw, self.ve.ops, (*self.ve.sections, self.layout.time.size),
                               alus=len(self.ve.alu_order), reduce_steps=self.ve.reduce_steps, ring=self.ve.ring,
                               alu_names=self.ve.alu_order)
        extra = {} if self.ve.packed is None else {"packed": self.ve.packed}  # (Carried.packed)
        # an op left as a ufunc stays one (the commit may compute it into DM, visa.engines.deferred); rows shared
        # by slices stay shared (visa.engines.shared)
        keep = isinstance(self.data, SharedRows) or isinstance(self.data, DeferredData) and self.data.pending
        data = self.data if keep else StreamData(
            self.data.values, self.data.known)
        return self.then(VectorFinalTensor, self.layout, data, report, **extra)


class _Inter(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_inter_slice_reduce(self: _Inter[D, Chip, Cluster, Slice, Time, Packet, IntraFirst],
                                  slice_: Mapping, time: Mapping, op: InterSliceReduceOpI32 | InterSliceReduceOpF32
                                  ) -> VectorInterSliceReduceTensor[D, Chip, Cluster, Any, Any, Packet, IntraFirst]:
        """Switch to the Inter-Slice Block (IntraFirst; Way8 stages only, L6600–6604)."""
        result: VectorInterSliceReduceTensor[D, Chip, Cluster, Any, Any, Packet, IntraFirst] = \
            inter_reduce(self, slice_, time, op)
        return result


def inter_reduce(self: VeBase[Any, Any, Any, Any, Any, Any, Any], slice_: Mapping, time: Mapping, op: Any) -> Any:
    """``vector_inter_slice_reduce::<Slice2, Time2>(op)`` from any eligible stage (L6583–6755)."""
    call = "vector_inter_slice_reduce"
    self.take(call)
    plan_inter_entry(self.ve.order, self.ve.inter_done)
    plan_enter(self.hw, self.ve.stage, "InterSliceReduce", self.ve.context, call)
    check_kind(op, (InterSliceReduceOpI32, InterSliceReduceOpF32), call)
    plan_entry(self.hw, self.dtype, self.layout.packet, call)
    cfg = plan_inter_reduce(self.hw, self.layout, op, slice_, time)
    data = execute_inter_reduce(cfg, self.data)
    first = self.ve.stage == "Init"
    ve = self.ve.step("InterSliceReduce", cfg.describe(), time.size, exec_id=None, ring=cfg.ring,
                      order="InterFirst" if first else "IntraFirst", inter_done=True)
    return self.advance(VectorInterSliceReduceTensor, cfg.out, data, ve)


class _Stash(_Ops[D, Chip, Cluster, Slice, Time, Packet, O]):
    __slots__ = ()

    def vector_stash(self: V) -> V:
        """Snapshot the tensor for a later ``Stash`` operand (L4977–5051); not a stage, once per pass."""
        call = "vector_stash"
        self.take(call)
        plan_stash(self.ve.stage, self.ve.context, self.ve.stash_taken)
        slot = StashSlot(self.layout, StreamData(self.data.values.copy(), copy_known(self.data.known)), self.ve.stage)
        ve = replace(self.ve, stash=slot, stash_taken=True, ops=(*self.ve.ops, "stash"))
        return self.advance(type(self), self.layout, StreamData(self.data.values, self.data.known), ve)

    def vector_write_operand(self: V, write: WriteOperand) -> V:
        """``WriteOperand(branch = …)`` (cumsum, L8708–8721): the elements whose ExecutionId is in ``branch`` store
        their value in their lane's operand register, which carries to later time steps; not a stage, once per
        pass, at a Stashable stage (the stash's tap points, L4983), single-stream only.  Right after an op that
        read ``OperandRead`` it closes the loop: that op then runs time step by time step."""
        call = "vector_write_operand"
        self.take(call)
        dtype = dtype_name(self.dtype)
        pending = self.ve.pending
        plan_write_operand(write, self.ve.stage, self.ve.context, self.ve.carry is not None,
                           None if pending is None else pending.dtype, dtype)
        ids = self.ve.exec_id
        data = self.data
        fold = self._fold()
        initial = _surviving(self.ctx.memory.operand_registers.get(self.tu.kind), self.data.values.shape, dtype, fold)
        if pending is not None:
            vals, known = carry_scan(pending.fn, pending.args, pending.data.values, pending.data.known, ids,
                                     pending.read, write.branch, fold, pending.after, initial)
            data = StreamData(vals, known)
        written = StreamData(data.values, data.known)
        seen = carry_fill(written.values, written.known, ids, write.branch, fold, initial)
        # the register survives the pass: the next pass of this context reads it before its own write (L8708–8721)
        self.ctx.memory.operand_registers[self.tu.kind] = (dtype, *final_register(*seen, fold))
        carry = Carry(dtype, self.layout.time, self.layout.packet, functools.cache(lambda: seen))
        ve = replace(self.ve, carry=carry, pending=None, ops=(*self.ve.ops, repr(write)))
        return self.advance(type(self), self.layout, StreamData(data.values, data.known), ve)




def _surviving(saved: tuple[str, Any, Any] | None, shape: tuple[int, ...], dtype: str, fold: int
               ) -> tuple[Any, Any] | None:
    """The operand register an earlier pass of the context left (``saved``), when it holds ``dtype`` for a stream of
    ``shape`` (its slices and Way8 lanes); else None (unwritten: a read of it is poison)."""
    if saved is None or saved[0] != dtype or saved[1].shape != (*shape[:3], shape[4] * fold):
        return None
    return saved[1], saved[2]


# ------------------------------------------------------------------------------------------------ stages


class VectorInitTensor(_Ops[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]):
    """``VectorInitTensor``: fresh Vector Engine input (L4560–4578); choose a block next."""

    __slots__ = ()
    STAGE = "VectorInitTensor"

    def vector_intra_slice_branch(self, mode: BranchMode
                                  ) -> VectorBranchTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """Enter the single-stream intra-slice block, tagging ExecutionIds (L4793–4802)."""
        return branch(self, mode, VectorBranchTensor)

    def vector_intra_slice_unzip(self, axis: Any, tile_time: Mapping, split_time: Mapping
                                 ) -> VectorTensorPair[D, Chip, Cluster, Slice, Any, Packet]:
        """Enter two-group mode: group g is the data at ``axis = g`` (L5154–5249)."""
        from visa.stream.vector.pair import unzip

        return unzip(self, axis, tile_time, split_time)

    def vector_inter_slice_reduce(self, slice_: Mapping, time: Mapping,
                                  op: InterSliceReduceOpI32 | InterSliceReduceOpF32
                                  ) -> VectorInterSliceReduceTensor[D, Chip, Cluster, Any, Any, Packet, InterFirst]:
        """Run the Inter-Slice Block first (InterFirst, L4560–4578, L6586–6598)."""
        result: VectorInterSliceReduceTensor[D, Chip, Cluster, Any, Any, Packet, InterFirst] = \
            inter_reduce(self, slice_, time, op)
        return result


def _log_ids(hw: HardwareProfile, log: Resolved, shape: tuple[int, ...], call: str, element: Any) -> ExecIds:
    """The ExecutionIds a branch log gives (L4802), one per element of the stream ``shape``.  A log broadcast
    along a stream axis reads as a strided view in the split shape (``Resolved.split``): its ids are found once per
    log value (the digits both the values and their known-mask repeat with stride 0 taken once; the same values,
    so the same ids and the same refusal, which is then named at a stream position from the whole view) and
    spread to the stream's shape."""
    known = np.asarray(log.known, dtype=bool)
    if log.split is None:
        return vrf_branch_ids(hw, log.values, known, known, call, element)
    v, k = np.broadcast_to(log.values, log.split), np.broadcast_to(known, log.split)
    once = tuple(slice(0, 1) if v.strides[d] == 0 and k.strides[d] == 0 else slice(None) for d in range(v.ndim))
    try:
        ids = vrf_branch_ids(hw, v[once], k[once], k[once], call, element)
    except LayoutError:
        whole = log.expand(shape)
        known = np.asarray(whole.known, dtype=bool)
        vrf_branch_ids(hw, whole.values, known, known, call, element)  # (raises, naming the stream position)
        raise
    return np.broadcast_to(ids, log.split).reshape(shape)


def branch(self: VeBase[Any, Any, Any, Any, Any, Any, Any], mode: BranchMode, cls: type[V]) -> V:
    """``vector_intra_slice_branch(mode)`` from VectorInit or after an InterFirst inter-slice reduce."""
    call = "vector_intra_slice_branch"
    self.take(call)
    plan_transition(self.hw, self.ve.stage, "Branch")
    plan_entry(self.hw, self.dtype, self.layout.packet, call)
    inputs: tuple[DeviceTensor, ...] = ()
    ids: ExecIds | None
    if isinstance(mode, BranchMode) and mode.name == "Vrf":
        plan_branch(self.hw, mode, dtype_name(self.dtype))
        ids = _log_ids(self.hw, self._vrf(mode.ids, "i32", call, None), self.data.values.shape, call,
                       mode.ids.mapping("Element"))
        inputs = (mode.ids,)
    else:
        ids = branch_ids(self.hw, mode, self.layout, self.data.values)
    ve = self.ve.step("Branch", f"branch({mode!r})", self.layout.time.size, exec_id=ids)
    return self.advance(cls, self.layout, self.data, ve, inputs)


class VectorBranchTensor(_Logic[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Fxp[D, Chip, Cluster, Slice, Time, Packet, O],
                         _FxpToFp[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Narrow[D, Chip, Cluster, Slice, Time, Packet, O],
                         _FpToFxp[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Clip[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Filter[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Final[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Inter[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Stash[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorBranchTensor``: after the Branch stage (Way8)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorBranchTensor"


class VectorLogicTensor(_Logic[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Fxp[D, Chip, Cluster, Slice, Time, Packet, O],
                        _FxpToFp[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Narrow[D, Chip, Cluster, Slice, Time, Packet, O],
                        _FpToFxp[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Clip[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Filter[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Final[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Inter[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Stash[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorLogicTensor``: after a Logic op (Way8)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorLogicTensor"


class VectorFxpTensor(_Fxp[D, Chip, Cluster, Slice, Time, Packet, O],
                      _FxpToFp[D, Chip, Cluster, Slice, Time, Packet, O],
                      _Narrow[D, Chip, Cluster, Slice, Time, Packet, O],
                      _FpToFxp[D, Chip, Cluster, Slice, Time, Packet, O],
                      _Clip[D, Chip, Cluster, Slice, Time, Packet, O],
                      _Filter[D, Chip, Cluster, Slice, Time, Packet, O],
                      _Final[D, Chip, Cluster, Slice, Time, Packet, O],
                      _Inter[D, Chip, Cluster, Slice, Time, Packet, O],
                      _Stash[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorFxpTensor``: after an Fxp op (Way8)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorFxpTensor"


class VectorFxpToFpTensor(_Narrow[D, Chip, Cluster, Slice, Time, Packet, O],
                          _FpToFxp[D, Chip, Cluster, Slice, Time, Packet, O],
                          _Clip[D, Chip, Cluster, Slice, Time, Packet, O],
                          _Filter[D, Chip, Cluster, Slice, Time, Packet, O],
                          _Final[D, Chip, Cluster, Slice, Time, Packet, O],
                          _Inter[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorFxpToFpTensor``: after ``vector_fxp_to_fp`` (f32, Way8)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorFxpToFpTensor"


class VectorNarrowTensor(_Fp[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Isr[D, Chip, Cluster, Slice, Time, Packet, O],
                         _FpDiv[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Widen[D, Chip, Cluster, Slice, Time, Packet, O],
                         _Stash[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorNarrowTensor``: after ``vector_split`` / ``vector_trim_way4`` (Way4)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorNarrowTensor"


class VectorFpTensor(_Fp[D, Chip, Cluster, Slice, Time, Packet, O],
                     _Isr[D, Chip, Cluster, Slice, Time, Packet, O],
                     _FpDiv[D, Chip, Cluster, Slice, Time, Packet, O],
                     _Widen[D, Chip, Cluster, Slice, Time, Packet, O],
                     _Stash[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorFpTensor``: after a Float-cluster op (Way4)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorFpTensor"


class VectorIntraSliceReduceTensor(_FpDiv[D, Chip, Cluster, Slice, Time, Packet, O],
                                   _Widen[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorIntraSliceReduceTensor``: after the intra-slice reduce (Way4)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorIntraSliceReduceTensor"


class VectorFpDivTensor(_Widen[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Stash[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorFpDivTensor``: after ``vector_fp_div`` (Way4)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorFpDivTensor"


class VectorWidenTensor(_FpToFxp[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Clip[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Filter[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Final[D, Chip, Cluster, Slice, Time, Packet, O],
                        _Inter[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorWidenTensor``: after ``vector_concat`` / ``vector_pad_way8`` (Way8)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorWidenTensor"


class VectorFpToFxpTensor(_Clip[D, Chip, Cluster, Slice, Time, Packet, O],
                          _Filter[D, Chip, Cluster, Slice, Time, Packet, O],
                          _Final[D, Chip, Cluster, Slice, Time, Packet, O],
                          _Inter[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorFpToFxpTensor``: after ``vector_fp_to_fxp`` (i32, Way8)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorFpToFxpTensor"


class VectorClipTensor(_Clip[D, Chip, Cluster, Slice, Time, Packet, O],
                       _Filter[D, Chip, Cluster, Slice, Time, Packet, O],
                       _Final[D, Chip, Cluster, Slice, Time, Packet, O],
                       _Inter[D, Chip, Cluster, Slice, Time, Packet, O],
                       _Stash[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorClipTensor``: after a Clip op (Way8)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorClipTensor"


class VectorFilterTensor(_Final[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorFilterTensor``: after ``vector_filter`` (Way8)
    (manual stage table, L4733–4747)."""

    __slots__ = ()
    STAGE = "VectorFilterTensor"


class VectorInterSliceReduceTensor(_Filter[D, Chip, Cluster, Slice, Time, Packet, O],
                                   _Final[D, Chip, Cluster, Slice, Time, Packet, O]):
    """``VectorInterSliceReduceTensor``: after the inter-slice reduce (L6583–6755).

    ``InterFirst``: an intra-slice block may follow (``vector_intra_slice_branch``); ``IntraFirst``: only
    ``vector_filter`` and ``vector_final`` remain (L4626–4629).
    """

    __slots__ = ()
    STAGE = "VectorInterSliceReduceTensor"

    def vector_intra_slice_branch(self: VectorInterSliceReduceTensor[D, Chip, Cluster, Slice, Time, Packet, InterFirst],
                                  mode: BranchMode
                                  ) -> VectorBranchTensor[D, Chip, Cluster, Slice, Time, Packet, InterFirst]:
        """Continue with intra-slice work after an InterFirst inter-slice reduce (L4683, L6608)."""
        if self.ve.order != "InterFirst":
            self.take("vector_intra_slice_branch")
            raise TypestateError("after an IntraFirst inter-slice reduce only vector_filter and vector_final remain",
                                 call="vector_intra_slice_branch", line=4627, fix="finish with vector_final()")
        return branch(self, mode, VectorBranchTensor)
