"""The state a Vector Engine stream carries through its pass, and the helpers every stage method uses.

A vector stage object is a :class:`~visa.stream.stages.StreamTensor` plus a :class:`VeState`: the stage it is
at, the ExecutionIds, the ALUs and single-use units consumed so far, the stash slot, the order
(IntraFirst / InterFirst), the context (Standalone / Zipped), and what the pass has done (for its report).
The rules themselves are the engine's (:mod:`visa.engines.vector`); this module only threads state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.engines.access import RowRead, read_row
from visa.engines.common import EngineReport, StreamData, StreamLayout
from visa.engines.deferred import DEFERRED, DeferredData
from visa.engines.vector import arith
from visa.engines.vector.elementwise import (
    Resolved,
    apply,
    check_constant,
    kind_of,
    operand_list,
    plan_operand_read,
)
from visa.engines.vector.intra import Narrowed
from visa.engines.vector.ops import FpTernaryOp, GroupId, StashMarker, TernaryOperand, VeOp, VeRhs
from visa.engines.vector.plan import (
    STAGE_CALLS,
    check_dtype,
    check_vrf_operand,
    claim,
    dtype_name,
    plan_enter,
    plan_pending,
    plan_stash_operand,
    plan_transition,
)
from visa.engines.vector.relayout import apply_gather, gather_view, plan_gather
from visa.errors import DtypeError, PoisonError, TypestateError, VisaError
from visa.hw import HardwareProfile
from visa.memory.known import all_true, is_everywhere, known_and
from visa.stream.stages import Carried, StreamTensor

if TYPE_CHECKING:
    from visa.tensors.device import TuHandle
    from visa.tensors.handles import DeviceTensor, VrfTensor

__all__ = ["VeState", "Carry", "PendingRead", "StashSlot", "VeBase", "METHOD_STAGE", "D", "Chip", "Cluster", "Slice",
           "Time", "Packet", "O", "ExecIds", "op_fn", "describe_operand", "per_step"]

D = TypeVar("D", bound=dt.Scalar)
Chip = TypeVar("Chip")
Cluster = TypeVar("Cluster")
Slice = TypeVar("Slice")
Time = TypeVar("Time")
Packet = TypeVar("Packet")
O = TypeVar("O")  # noqa: E741 - the order marker, IntraFirst or InterFirst
ExecIds = npt.NDArray[np.uint8]

#: The stage each vector method enters (for the run-time typestate error).
METHOD_STAGE: dict[str, str] = {
    "vector_intra_slice_branch": "Branch", "vector_intra_slice_unzip": "Branch",
    "vector_logic": "Logic", "vector_logic_with_mode": "Logic", "vector_logic_zip": "Logic",
    "vector_logic_zip_with_mode": "Logic",
    "vector_fxp": "Fxp", "vector_fxp_with_mode": "Fxp", "vector_fxp_zip": "Fxp", "vector_fxp_zip_with_mode": "Fxp",
    "vector_fxp_to_fp": "FxpToFp", "vector_split": "Narrow", "vector_trim_way4": "Narrow",
    "vector_fp_unary": "Fp", "vector_fp_unary_with_mode": "Fp", "vector_fp_binary": "Fp",
    "vector_fp_binary_with_mode": "Fp", "vector_fp_ternary": "Fp", "vector_fp_ternary_with_mode": "Fp",
    "vector_fp_zip": "Fp", "vector_fp_zip_with_mode": "Fp",
    "vector_intra_slice_reduce": "IntraSliceReduce", "vector_fp_div": "FpDiv", "vector_fp_div_with_mode": "FpDiv",
    "vector_concat": "Widen", "vector_pad_way8": "Widen", "vector_fp_to_fxp": "FpToFxp",
    "vector_clip": "Clip", "vector_clip_with_mode": "Clip", "vector_clip_zip": "Clip",
    "vector_clip_zip_with_mode": "Clip", "vector_filter": "Filter", "vector_final": "Output",
    "vector_inter_slice_reduce": "InterSliceReduce", "vector_stash": "Stash",
    "vector_write_operand": "WriteOperand",
}


@dataclass(frozen=True)
class StashSlot:
    """The stash: the tensor saved by ``vector_stash()`` at its mapping, and who consumed it."""

    layout: StreamLayout
    data: StreamData
    stage: str
    consumed_by: str | None = None


@dataclass(frozen=True)
class Carry:
    """The operand register after ``vector_write_operand`` (L8708–8721): the dtype and stream Time / Packet it was
    written at, and, at every stream position, the value a later ``OperandRead`` of that time step sees."""

    dtype: str
    time: Any
    packet: Any
    fill: Callable[[], tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]]

    def seen(self) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]:
        """The register each position's read sees (computed when a read needs it)."""
        return self.fill()


@dataclass(frozen=True)
class PendingRead:
    """An op that read the operand register before this pass wrote it: it runs, time step by time step, when
    the ``vector_write_operand`` right after it says which results the register keeps (L8716–8721)."""

    fn: Callable[..., Any]
    args: tuple[int, ...]
    data: StreamData
    read: frozenset[int]
    call: str
    dtype: str
    after: tuple[Callable[..., Any], ...] = ()

    def then(self, step: Callable[..., Any]) -> PendingRead:
        """This wait with one more elementwise step between the read and the write."""
        return replace(self, after=(*self.after, step))


@dataclass(frozen=True)
class VeState:
    """Everything a vector stream carries besides its data."""

    stage: str = "Init"
    exec_id: ExecIds | None = None
    alus: frozenset[str] = frozenset()
    alu_order: tuple[str, ...] = ()
    stash: StashSlot | None = None
    stash_taken: bool = False
    order: str = "IntraFirst"
    context: str = "Standalone"
    ops: tuple[str, ...] = ()
    sections: tuple[int, ...] = ()
    reduce_steps: int = 0
    ring: int = 0
    narrowed: Narrowed | None = None
    inter_done: bool = False
    carry: Carry | None = None
    pending: PendingRead | None = None
    packed: npt.NDArray[np.int64] | None = None

    def step(self, stage: str, op: str, flits: int, **changes: Any) -> VeState:
        """The state after a stage: the stage, one more op in the report, one more section."""
        # (``dataclasses.replace`` without its walk over the fields: every field is an init field, none derived)
        return type(self)(**{**self.__dict__, "stage": stage, "ops": (*self.ops, op),
                          "sections": (*self.sections, flits), **changes})

    def use(self, alu: str, call: str) -> VeState:
        """Consume ALU ``alu`` (each once per pass, L4750)."""
        return type(self)(**{**self.__dict__, "alus": claim(self.alus, alu, call), "alu_order": (*self.alu_order, alu)})


S = TypeVar("S", bound="VeBase[Any, Any, Any, Any, Any, Any, Any]")


class VeBase(StreamTensor[D, Chip, Cluster, Slice, Time, Packet], Generic[D, Chip, Cluster, Slice, Time, Packet, O]):
    """A stream inside the Vector Engine (``VectorTensor<…, Stage, …, VeOrder, Way>`` of the manual)."""

    __slots__ = ("ve",)
    STAGE = "VectorTensor"

    def __init__(self, tu: TuHandle, layout: StreamLayout, data: StreamData,
                 reports: tuple[EngineReport, ...] = (), inputs: tuple[DeviceTensor, ...] = (),
                 carried: Carried | None = None, *, ve: VeState | None = None) -> None:
        super().__init__(tu, layout, data, reports, inputs, carried)
        self.ve = ve if ve is not None else VeState(sections=(layout.time.size,))

    @property
    def hw(self) -> HardwareProfile:
        """The context's hardware profile (every Vector Engine limit comes from ``hw.vector``)."""
        return self.tu.ctx.hw

    def advance(self, cls: type[S], layout: StreamLayout, data: StreamData, ve: VeState,
                inputs: tuple[DeviceTensor, ...] = ()) -> S:
        """The next vector stage object of this pass."""
        data.check(layout)
        return cls(self.tu, layout, data, self.reports, self.inputs + inputs, self.carried, ve=ve)

    def _fold(self) -> int:
        """2 when this Way4 stream came from a split (two time steps per Way8 flit), else 1: the operand register
        belongs to a lane of the Way8 flit (L4864)."""
        nw = self.ve.narrowed
        return 2 if nw is not None and nw.kind == "split" and self.layout.packet.size == self.hw.vector.way4_lanes \
            else 1

    def take(self, call: str) -> None:
        """Consume this value for ``call``; while an ``OperandRead`` waits for its ``vector_write_operand`` only
        that call may follow (L8716–8721)."""
        plan_pending(None if self.ve.pending is None else self.ve.pending.call, call)
        super().take(call)

    def enter(self, call: str, target: str) -> None:
        """Consume this value for ``call`` and check the stage order, the context and the stage's dtype."""
        self.take(call)
        plan_enter(self.hw, self.ve.stage, target, self.ve.context, call)
        check_dtype(self.hw, target, self.dtype, call)

    if not TYPE_CHECKING:  # hidden from type checkers, so that a method of another stage is a mypy error

        def __getattr__(self, name: str) -> Any:
            target = METHOD_STAGE.get(name)
            if target is None or name.startswith("_"):
                return super().__getattr__(name)
            stage = object.__getattribute__(self, "ve").stage
            where = f"{self.STAGE} (stage {stage})"
            if target == "WriteOperand":
                raise TypestateError(f".vector_write_operand() is not available on a {where}: the operand register "
                                     f"is written at the Branch, Logic, Fxp, Narrow, Fp, FpDiv or Clip stage, once "
                                     f"per pass, and not in two-group mode", call=name, line=8716)
            if target == "Stash":
                raise TypestateError(f".vector_stash() is not available on a {where}: the stash is taken at the "
                                     f"Branch, Logic, Fxp, Narrow, Fp, FpDiv or Clip stage, once per pass, and not in "
                                     f"two-group mode", call=name, line=4983)
            try:
                plan_transition(self.hw, stage, target)
            except VisaError as err:
                raise TypestateError(f".{name}() is not available on a {where}: {err.message}", call=name,
                                     line=err.line, fix=err.fix) from None
            raise TypestateError(f".{name}() is not available on a {where}", call=name,
                                 fix=f"the {target} stage is entered with {STAGE_CALLS.get(target, target)}")

    # -- operands -----------------------------------------------------------------------------------------
    def levels(self, layout: StreamLayout | None = None) -> tuple[Any, ...]:
        """The five level mappings (Chip, Cluster, Slice, Time, Packet) of ``layout`` (this stream's by default)."""
        lay = layout or self.layout
        return (lay.chip, lay.cluster, lay.slice, lay.time, lay.packet)

    def resolve(self, operand: Any, dtype: str, call: str, ve: VeState, known: npt.NDArray[np.bool_] | None = None
                ) -> tuple[Resolved, VeState, tuple[DeviceTensor, ...]]:
        """Read one operand at every stream position (constant, VRF or stash; L5052–5081); the pass state ``ve``
        comes back updated (a stash read consumes the stash) with the device tensors read."""
        kind = kind_of(operand)
        if isinstance(operand, VeRhs):
            operand = operand.value if kind != "stash" else operand
        if kind == "constant":
            return Resolved(check_constant(operand, dtype, call), True), ve, ()
        if kind == "vrf":
            return self._vrf(operand, dtype, call, known), ve, (operand,)
        if kind == "stash":
            return self._stash(dtype, call, ve)
        if kind == "carried":
            plan_operand_read(None, dtype, ve.context, call)
            raise TypestateError("OperandRead is the operand of a binary op (vector_logic, vector_fxp, "
                                 "vector_fp_binary, vector_fp_div, vector_clip) in a single-stream pass", call=call,
                                 line=8716, fix="read the carried operand with a binary op of a single stream")
        raise DtypeError(f"{call} takes a constant, a VRF tensor or Stash as its operand, got {operand!r}", call=call,
                         fix="pass a number, VeRhs.vrf(tensor) or Stash")

    def _vrf(self, vrf: VrfTensor[Any, Any, Any, Any, Any], dtype: str, call: str,
             known: npt.NDArray[np.bool_] | None) -> Resolved:
        check_vrf_operand(dtype_name(vrf.dtype), dtype, call)
        if vrf.ctx is not self.tu.ctx:
            raise VisaError("the VRF operand belongs to another context", call=call,
                            fix="load the operand with .to_vrf() in this kernel's context")
        vrf.check_readable(call)
        chip, cluster, slice_, element = (vrf.mapping(k) for k in ("Chip", "Cluster", "Slice", "Element"))
        vals, kn = [], []
        for c in range(chip.size):
            v, k = read_row(RowRead(vrf.dtype, vrf.address * 8, element.size), vrf.image(c))  # (the register's row)
            vals.append(v[:cluster.size, :slice_.size])
            kn.append(k[:cluster.size, :slice_.size])
        g = plan_gather((chip, cluster, slice_, element), self.levels(), call, "VRF operand")
        src_v, src_k = _stacked(vals), _stacked(kn)
        split: tuple[int, ...] | None = None
        bad: npt.NDArray[np.bool_] | None = None
        view = gather_view(g, src_v, src_k)
        if view is not None:  # a strided view of the register file, in the split shape (no copy, relayout.py)
            values, vk, split = view
            if not all_true(vk):  # (O(1) when every byte was written; else the source's size, not the stream's)
                bad = np.asarray(True if known is None else known.reshape(split)) & ~vk
        else:
            values, vk = apply_gather(g, src_v, src_k)
            bad = (g.used if known is None else (g.used & known)) & ~vk
        if bad is not None and bad.any():
            count = int(np.count_nonzero(bad))
            raise PoisonError(f"{count} element(s) of the VRF operand were never loaded", call=call, line=5256,
                              mapping=repr(element), fix="load the operand with .to_vrf() (in ctx.sub) first")
        return Resolved(values, vk, split)

    def _stash(self, dtype: str, call: str, ve: VeState) -> tuple[Resolved, VeState, tuple[DeviceTensor, ...]]:
        slot = ve.stash
        plan_stash_operand(None if slot is None else dtype_name(slot.layout.dtype),
                           None if slot is None else slot.consumed_by, dtype, call)
        assert slot is not None
        src = self.levels(slot.layout)
        g = plan_gather(src, self.levels(), call, "stash")
        view = gather_view(g, slot.data.values, slot.data.known)
        r = Resolved(view[0], view[1], view[2]) if view is not None else Resolved(
            *apply_gather(g, slot.data.values, slot.data.known))
        return r, replace(ve, stash=replace(slot, consumed_by=call)), ()

    def operate(self, op: VeOp, args: tuple[int, ...], operand: Any, call: str, ve: VeState, data: StreamData,
                exec_id: ExecIds | None) -> tuple[StreamData, VeState, tuple[DeviceTensor, ...]]:
        """``op`` over ``data`` with its operand argument (a constant, VRF tensor or Stash, or branch operands per
        group; ``args`` is the argument mode, L5052–5153): the result, the pass state after reading the operands,
        and the device tensors read."""
        ternary = isinstance(op, FpTernaryOp)
        dtype = dtype_name(self.dtype)
        resolved: list[tuple[list[Resolved], GroupId | None]] = []
        inputs: tuple[DeviceTensor, ...] = ()
        for raw, gid in operand_list(self.hw, operand, call):
            if ternary:
                rs, ve, ins = self.resolve_ternary(raw, call, ve)
            else:
                r, ve, ins = self.resolve(raw, dtype, call, ve, known=data.known)
                rs = [r]
            resolved.append((rs, gid))
            inputs += ins
        deferred = _deferred(op, args, data, resolved, ve) if DEFERRED.on else None
        if deferred is not None:
            return deferred, ve, inputs
        group_bit = self.hw.vector.execution_id_bits - 1
        fn = op_fn(op)
        values, known = apply(fn, args, data.values, data.known, resolved, exec_id, group_bit)
        if ve.pending is not None:
            ve = replace(ve, pending=ve.pending.then(per_step(fn, args, resolved, exec_id, group_bit, values.shape)))
        return StreamData(values, known), ve, inputs

    def resolve_ternary(self, operands: Any, call: str, ve: VeState
                        ) -> tuple[list[Resolved], VeState, tuple[DeviceTensor, ...]]:
        """Operand0 (constant, VRF or stash) and operand1 (an f32 constant only) of a ternary op (L5059)."""
        if isinstance(operands, TernaryOperand):
            o0, o1 = operands.operand0, operands.operand1
        elif isinstance(operands, tuple) and len(operands) == 2:
            o0, o1 = operands
        else:
            raise DtypeError(f"{call} takes (operand0, operand1) or a TernaryOperand, got {operands!r}", call=call,
                             fix="pass (operand0, f32 constant)")
        if kind_of(o1) != "constant" or isinstance(o1, (VeRhs, StashMarker)):
            raise DtypeError("operand1 of a ternary operation must be an f32 constant", call=call, line=5059,
                             fix="pass a float as operand1 (operand0 may be a VRF tensor or Stash)")
        r0, ve2, ins = self.resolve(o0, "f32", call, ve)
        r1 = Resolved(check_constant(o1, "f32", call), True)
        return [r0, r1], ve2, ins


def _deferred(op: VeOp, args: tuple[int, ...], data: StreamData,
              resolved: list[tuple[list[Resolved], GroupId | None]], ve: VeState) -> DeferredData | None:
    """The op's result left as one ufunc over the stream and its operand (:mod:`visa.engines.deferred`; the commit
    computes it into DM), when its arithmetic is one (:data:`~visa.engines.vector.arith.UFUNC`), its operand one
    for every element (a constant, or a VRF or stash operand's strided view) and known, and no carried read
    waits; None otherwise (then :func:`apply` runs)."""
    ufunc = arith.UFUNC.get(op.FAMILY, {}).get(op.base)
    if ufunc is None or ve.pending is not None or len(resolved) != 1 or resolved[0][1] is not None:
        return None
    ops = resolved[0][0]
    values = data.values
    if len(ops) != 1 or not values.flags.c_contiguous:
        return None
    r = ops[0]
    operand = np.asarray(r.values)
    # a constant, or an operand's strided view in the split shape (VRF, stash), known everywhere
    if (operand.dtype != values.dtype or (operand.ndim and r.split is None)
            or not (r.known is True or (isinstance(r.known, np.ndarray) and is_everywhere(r.known)))):
        return None
    split = values.shape if r.split is None else r.split
    if split[0] != values.shape[0]:  # (the Chip axis split into digits: the commit writes chip by chip)
        return None
    slots = (values.reshape(split), operand)
    known = known_and([data.known if a == 0 else True for a in sorted(set(args))], values.shape)
    return DeferredData(ufunc, tuple(slots[a] for a in args), values.dtype, values.shape, known, split)


def _stacked(parts: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """The chips' arrays as one C-contiguous ``(Chip, ...)`` array (the one chip's own when it is so: no copy)."""
    if len(parts) == 1:
        return parts[0][None] if is_everywhere(parts[0]) else np.ascontiguousarray(parts[0])[None]
    return np.ascontiguousarray(np.stack(parts))


def per_step(fn: Callable[..., Any], args: tuple[int, ...], resolved: list[tuple[list[Resolved], GroupId | None]],
             exec_id: ExecIds | None, group_bit: int, shape: tuple[int, ...]) -> Callable[..., Any]:
    """``fn`` with its resolved operands as one step at time step ``t`` (between an ``OperandRead`` and its
    ``WriteOperand``, :func:`visa.engines.vector.elementwise.carry_scan`)."""

    def at(a: Any, t: int) -> Any:
        return np.broadcast_to(np.asarray(a), shape)[:, :, :, t]

    full = [([r.expand(shape) for r in rs], gid) for rs, gid in resolved]

    def step(y: Any, yk: Any, t: int) -> tuple[Any, Any]:
        ops = [([Resolved(at(r.values, t), at(r.known, t)) for r in rs], gid) for rs, gid in full]
        return apply(fn, args, y, yk, ops, None if exec_id is None else exec_id[:, :, :, t], group_bit)

    return step


def op_fn(op: VeOp) -> Callable[..., Any]:
    """The exact arithmetic of a binary or ternary operator (:data:`visa.engines.vector.arith.BINARY`,
    :func:`~visa.engines.vector.arith.fp_ternary`; the stage tables, L4803–4972)."""
    if isinstance(op, FpTernaryOp):
        return lambda a, b, c: arith.fp_ternary(op.name, a, b, c)
    fn = arith.BINARY[op.FAMILY]
    return lambda a, b: fn(op.base, a, b)


def describe_operand(operand: Any) -> str:
    """Short text of an operand for the pass report."""
    from visa.engines.vector.ops import VeBranchOperand

    if isinstance(operand, (list, tuple)) and operand and all(isinstance(o, VeBranchOperand) for o in operand):
        return "[" + ", ".join(describe_operand(o) for o in operand) + "]"
    if isinstance(operand, VeBranchOperand):
        inner = describe_operand(operand.operand)
        return f"always({inner})" if operand.group_id is None else f"group({inner}, {operand.group_id!r})"
    kind = kind_of(operand)
    if kind == "vrf":
        return "vrf"
    if kind == "stash":
        return "Stash"
    if isinstance(operand, VeRhs):
        return repr(operand.value)
    return repr(operand)
