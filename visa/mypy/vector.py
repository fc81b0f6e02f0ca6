"""The Vector Engine under the plugin: every stage method's rules and exact result type (manual L4549–6755).

The stream classes (:mod:`visa.stream.vector`) carry a pass's state besides its layout: the stage, the ALUs
taken, the stash, the context (standalone, paired after an unzip, zipped after a ``_zip``), the order and
whether the inter-slice reduce ran.  The hook keeps the same state per call expression: a call's state is
its receiver's (the call that produced it, through local variables assigned once) advanced by the call.
Where the chain back to ``vector_init`` is not visible (a parameter typed ``VectorFxpTensor[...]``), only
what the type says is known — the stage (the class), the lanes, the layout, the order, the paired
context — and the rules that need the rest (ALU reuse, the stash, the zipped context) are left to run time.

Each step calls the functions the stream methods call, in their order: :func:`~visa.engines.vector.plan.
plan_enter` / ``plan_transition`` (stage order, lanes, the zipped context), ``check_dtype``, ``check_op``,
``claim`` (each ALU once per pass), the operands' rules (``check_constant``, ``check_vrf_operand`` and
``plan_gather`` for a VRF tensor, ``plan_stash_operand`` and ``plan_gather`` for the stash),
``plan_int_width``, ``plan_split``/``plan_trim``/``plan_concat``/``plan_pad``, ``plan_intra_reduce``,
``plan_inter_entry``/``plan_entry``/``plan_inter_reduce``, ``plan_unzip``, ``plan_stash``.  The layout the
plans return (Narrow/Widen, the reduces, the unzip) is the result's type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mypy.constant_fold import constant_fold_expr
from mypy.nodes import CallExpr, Expression, MemberExpr, NameExpr, StrExpr, TupleExpr
from mypy.plugin import MethodContext
from mypy.types import AnyType, Instance, Type, get_proper_type

from visa import dtypes as dt
from visa.engines.common import StreamLayout
from visa.engines.vector import plan as vp
from visa.mapping import Mapping
from visa.mypy.chain import root_of, type_of
from visa.mypy.typeargs import STREAM, tensor_of

if TYPE_CHECKING:
    from visa.mypy import VisaPlugin
    from visa.mypy.hooks import Call

__all__ = ["PassState", "hook", "METHODS"]

ORDERS = {"visa.engines.vector.ops.IntraFirst": "IntraFirst", "visa.engines.vector.ops.InterFirst": "InterFirst"}


@dataclass(frozen=True)
class PassState:
    """What the rules of a vector pass depend on besides the layout (the stream's ``VeState``, statically).

    ``known`` says the chain since ``vector_init`` is visible, so that ``alus``, ``stash``, ``stash_taken``,
    ``inter_done`` and ``context`` are exact; otherwise only ``stage``, ``order`` and a paired ``context`` (from
    the type) are, and ``alus`` is None.
    """

    stage: str
    context: str | None = "Standalone"
    order: str | None = "IntraFirst"
    alus: frozenset[str] | None = frozenset()
    stash: tuple[str, tuple[Mapping, ...]] | None = None
    stash_consumed: str | None = None
    stash_taken: bool = False
    inter_done: bool = False
    known: bool = True
    #: the operand register (L8708–8721): the dtype and (Time, Packet) it was written at, and the call of an op
    #: that read it before the write (only ``vector_write_operand`` may follow that op)
    carry: tuple[str, tuple[Mapping, Mapping] | None] | None = None
    pending: str | None = None
    pending_dtype: str | None = None


#: method → (kind, stage it enters); pairs have their own kinds (see :func:`_kind`).
METHODS: dict[str, tuple[str, str]] = {
    "vector_intra_slice_branch": ("branch", "Branch"), "vector_intra_slice_unzip": ("unzip", "Branch"),
    "vector_logic": ("binop", "Logic"), "vector_logic_with_mode": ("binop", "Logic"),
    "vector_fxp": ("binop", "Fxp"), "vector_fxp_with_mode": ("binop", "Fxp"),
    "vector_fxp_to_fp": ("convert", "FxpToFp"), "vector_fp_to_fxp": ("convert", "FpToFxp"),
    "vector_split": ("split", "Narrow"), "vector_trim_way4": ("trim", "Narrow"),
    "vector_concat": ("concat", "Widen"), "vector_pad_way8": ("pad", "Widen"),
    "vector_fp_unary": ("unary", "Fp"), "vector_fp_unary_with_mode": ("unary", "Fp"),
    "vector_fp_binary": ("binop", "Fp"), "vector_fp_binary_with_mode": ("binop", "Fp"),
    "vector_fp_ternary": ("ternary", "Fp"), "vector_fp_ternary_with_mode": ("ternary", "Fp"),
    "vector_intra_slice_reduce": ("intra", "IntraSliceReduce"),
    "vector_fp_div": ("binop", "FpDiv"), "vector_fp_div_with_mode": ("binop", "FpDiv"),
    "vector_clip": ("binop", "Clip"), "vector_clip_with_mode": ("binop", "Clip"),
    "vector_filter": ("filter", "Filter"), "vector_final": ("final", "Output"),
    "vector_inter_slice_reduce": ("inter", "InterSliceReduce"), "vector_stash": ("stash", ""),
    "vector_write_operand": ("write_operand", ""),
    "vector_logic_zip": ("zip", "Logic"), "vector_logic_zip_with_mode": ("zip", "Logic"),
    "vector_fxp_zip": ("zip", "Fxp"), "vector_fxp_zip_with_mode": ("zip", "Fxp"),
    "vector_fp_zip": ("zip", "Fp"), "vector_fp_zip_with_mode": ("zip", "Fp"),
    "vector_clip_zip": ("zip", "Clip"), "vector_clip_zip_with_mode": ("zip", "Clip"),
}


def _kind(method: str, paired: bool) -> tuple[str, str] | None:
    kind = METHODS.get(method)
    if kind is None or not paired:
        return kind
    name, stage = kind
    if name == "binop":
        return "pergroup", stage
    if name == "ternary":
        return "pergroup_ternary", stage
    if name == "unary":
        return "pair_unary", stage
    if name in ("split", "trim", "concat", "pad"):
        return "pair_" + name, stage
    return kind


def stage_of(cls: str) -> tuple[str, bool] | None:
    """(stage, paired) of a vector stream class: ``VectorNarrowTensor`` → Narrow, ``VectorPairFpTensor`` → Fp."""
    name = cls.rpartition(".")[2]
    if name == "VectorInitTensor":
        return "Init", False
    if name == "VectorTensorPair":
        return "Branch", True
    if name.startswith("VectorPair") and name.endswith("Tensor"):
        return name[len("VectorPair"):-len("Tensor")], True
    if name.startswith("Vector") and name.endswith("Tensor") and name != "VectorFinalTensor":
        return name[len("Vector"):-len("Tensor")], False
    return None


# -- the hook ---------------------------------------------------------------------------------------------------
def hook(plugin: VisaPlugin, ctx: MethodContext) -> Type:
    """A Vector Engine stage method (or ``vector_init``): its rules, its exact type, and the pass state."""
    from visa.mypy.hooks import Call, _method, layout

    method = _method(ctx)
    call = Call(plugin, ctx, method)
    d, levels, args = layout(call, STREAM)
    recv = get_proper_type(ctx.type)
    if not isinstance(recv, Instance) or not isinstance(ctx.context, CallExpr):
        return ctx.default_return_type
    if method == "vector_init":
        if d is not None and levels is not None:
            if call.run(lambda: vp.plan_entry(plugin.hw, d, levels["Packet"], "vector_init")):
                from visa.mypy.hooks import record

                _record(plugin, ctx.context, PassState("Init"))
                record(plugin, ctx.context, list(levels.values()))
        return ctx.default_return_type
    where = stage_of(recv.type.fullname)
    kind = _kind(method, where[1]) if where is not None else None
    if where is None or kind is None:
        return ctx.default_return_type
    state = _state_of(plugin, ctx, call, where, args)
    step = Step(plugin, call, method, state, d, levels)
    try:
        if state.known:
            step.rule(lambda: vp.plan_pending(state.pending, method))
        out = step.run(*kind)
    except _Refused:
        return ctx.default_return_type
    if out is None:
        return ctx.default_return_type
    new_state, new_layout = out
    _record(plugin, ctx.context, new_state)
    if new_layout is not None:
        from visa.mypy.hooks import record

        record(plugin, ctx.context, _levels(new_layout))
    return _result(plugin, ctx, new_layout)


class _Refused(Exception):
    """A rule refused the call (already reported)."""


def _record(plugin: VisaPlugin, node: Expression, state: PassState) -> None:
    plugin.vector_states[id(node)] = (node, state)


def _state_of(plugin: VisaPlugin, ctx: MethodContext, call: Call, where: tuple[str, bool],
              args: list[Type]) -> PassState:
    """The receiver's pass state: recorded by the hook of the call that produced it, else what its type says."""
    node = root_of(call.receiver(), call.function())
    got = plugin.vector_states.get(id(node)) if node is not None else None
    if got is not None and got[0] is node and isinstance(got[1], PassState) and got[1].stage == where[0]:
        return got[1]
    order = None
    recv = get_proper_type(ctx.type)
    if isinstance(recv, Instance) and len(recv.args) > 6:
        o = get_proper_type(recv.args[6])
        order = ORDERS.get(o.type.fullname) if isinstance(o, Instance) else None
    return PassState(where[0], "Paired" if where[1] else None, order, None, known=False)


def _result(plugin: VisaPlugin, ctx: MethodContext, lay: StreamLayout | None) -> Type:
    """The declared result type with the positions it leaves ``Any`` filled from the derived layout."""
    from visa.mypy.hooks import _dtype_type, static_type

    default = get_proper_type(ctx.default_return_type)
    if lay is None or not isinstance(default, Instance) or len(default.args) < 6:
        return ctx.default_return_type
    fill: list[Type] = [_dtype_type(plugin, lay.dtype),
                        *(static_type(plugin, mp) for mp in (lay.chip, lay.cluster, lay.slice, lay.time, lay.packet))]
    args = [fill[k] if k < 6 and isinstance(get_proper_type(a), AnyType) else a for k, a in enumerate(default.args)]
    return default.copy_modified(args=args)


# -- one step ------------------------------------------------------------------------------------------------------
class Step:
    """One call's rules, in the order the stream method runs them; each refusal is reported at the call."""

    def __init__(self, plugin: VisaPlugin, call: Call, method: str, state: PassState,
                 dtype: type[dt.Scalar] | None, levels: dict[str, Mapping] | None) -> None:
        self.plugin = plugin
        self.hw = plugin.hw
        self.call = call
        self.method = method
        self.state = state
        self.dtype = dtype
        self.layout = StreamLayout(dtype, *(levels[k] for k in STREAM)) if dtype is not None and \
            levels is not None else None

    # helpers
    def rule(self, fn: Callable[[], object]) -> None:
        """Run one rule; a refusal is reported at the call and ends the step (:class:`_Refused`)."""
        if not self.call.run(fn):
            raise _Refused

    def value(self, i: int) -> Any:
        """The static value of argument ``i`` (an operator, a mode, a constant), or None."""
        from visa.mypy.rules import Unknown, static_value

        expr = self.call.arg_expr(i)
        if expr is None:
            return None
        try:
            return static_value(expr, self.call.module)
        except (Unknown, AttributeError, TypeError, ValueError):
            return None

    def dname(self) -> str | None:
        """The stream's dtype as the Vector Engine names it (``"i32"``/``"f32"``), or None when unknown."""
        return vp.dtype_name(self.dtype) if self.dtype is not None else None

    def enter(self, target: str) -> None:
        """The stage order (L4730, L4733–4751) and, in a known context, the zipped context's rule (L5204)."""
        st = self.state
        if st.context is not None:
            self.rule(lambda: vp.plan_enter(self.hw, st.stage, target, st.context or "Standalone", self.method))
        else:
            self.rule(lambda: vp.plan_transition(self.hw, st.stage, target))

    def dtype_rule(self, stage: str) -> None:
        """The stage's dtype (L4733–4747)."""
        d = self.dtype
        if d is not None:
            self.rule(lambda: vp.check_dtype(self.hw, stage, d, self.method))

    def claim(self, alu: str | None) -> None:
        """Take an ALU for the pass (each once, L4750); an unknown ALU makes the pass's ALU set unknown."""
        alus = self.state.alus
        if alus is None or alu is None:
            self.state = replace(self.state, alus=None)
            return
        self.rule(lambda: vp.claim(alus, alu, self.method))
        self.state = replace(self.state, alus=alus | {alu})

    def op(self, i: int, stage: str) -> Any:
        """The operator argument ``i``: its family for the dtype (``check_op``), then its ALU."""
        op = self.value(i)
        name = self.dname()
        if op is not None and name is not None:
            self.rule(lambda: vp.check_op(stage, op, name, self.method))
        self.claim(getattr(op, "alu", None) if op is not None else None)
        return op

    def operand(self, expr: Expression | None, dtype: str | None) -> None:
        """One operand's rules (``VeBase.resolve``): a constant, a VRF tensor or the stash."""
        from visa.engines.vector.elementwise import check_constant
        from visa.engines.vector.ops import OperandRead, StashMarker, VeRhs
        from visa.engines.vector.relayout import plan_gather
        from visa.errors import VisaError

        if expr is None or dtype is None:
            return
        lay = self.layout
        value = _constant(expr, self.call.module)
        if value is None:
            try:
                from visa.mypy.rules import static_value

                value = static_value(expr, self.call.module)
            except VisaError as err:  # a visa constructor refused its constant arguments (OperandRead(16))
                self.call.fail(err)
                raise _Refused from None
            except Exception:  # noqa: BLE001 - not a constant operand
                value = None
        if isinstance(value, OperandRead):
            self.carried(dtype)
            return
        if isinstance(value, VeRhs):
            value = value.value if value.kind == "constant" else (StashMarker() if value.kind == "stash" else None)
        if isinstance(value, (int, float)):
            constant = value
            self.rule(lambda: check_constant(constant, dtype, self.method))
            return
        if isinstance(value, StashMarker):
            st = self.state
            if not st.known:
                return
            slot = st.stash
            self.rule(lambda: vp.plan_stash_operand(slot[0] if slot else None, st.stash_consumed, dtype,
                                                    self.method))
            if slot is not None and lay is not None:
                self.rule(lambda: plan_gather(slot[1], _levels(lay), self.method, "stash"))
            self.state = replace(st, stash_consumed=self.method)
            return
        vrf = tensor_of(type_of(self.call.ctx.api, expr))
        if vrf is not None and "Row" not in vrf[1] and "Cluster" in vrf[1]:
            vd, vl = vrf
            self.rule(lambda: vp.check_vrf_operand(vp.dtype_name(vd), dtype, self.method))
            if lay is not None:
                src = (vl["Chip"], vl["Cluster"], vl["Slice"], vl["Element"])
                self.rule(lambda: plan_gather(src, _levels(lay), self.method, "VRF operand"))

    def carried(self, dtype: str) -> None:
        """An ``OperandRead`` operand (L8708–8721): single stream, the register's dtype and lanes; not yet written
        in the pass, the op waits for the ``vector_write_operand`` that must follow."""
        from visa.engines.vector.elementwise import plan_operand_read

        st = self.state
        if not st.known:
            return
        carry = st.carry
        self.rule(lambda: plan_operand_read(carry[0] if carry else None, dtype, st.context or "Standalone",
                                            self.method))
        self.rule(lambda: vp.plan_second_read(st.pending, self.method))
        lay = self.layout
        if carry is not None and carry[1] is not None and lay is not None:
            lanes = carry[1]
            self.rule(lambda: vp.plan_carried_lanes(lanes, (lay.time, lay.packet), self.method))
        if carry is None:
            self.state = replace(self.state, pending=self.method, pending_dtype=dtype)

    # the kinds ---------------------------------------------------------------------------------------------
    def run(self, kind: str, stage: str) -> tuple[PassState, StreamLayout | None] | None:
        """The rules of a call of this ``kind`` (:data:`METHODS`) entering ``stage``: the new state and layout."""
        lanes = kind.removeprefix("pair_")
        if lanes in ("split", "trim", "concat", "pad"):  # Narrow/Widen, the same on one stream or a pair
            out: tuple[PassState, StreamLayout | None] | None = self._lanes(stage, lanes)
        else:
            out = getattr(self, "_" + kind)(stage)
        return out

    def _next(self, stage: str, lay: StreamLayout | None = None, **changes: Any) -> tuple[PassState,
                                                                                         StreamLayout | None]:
        return replace(self.state, stage=stage, **changes), lay if lay is not None else self.layout

    def _binop(self, stage: str) -> Any:
        mode = self.method.endswith("_with_mode")
        self.enter(stage)
        self.dtype_rule(stage)
        self.op(0, stage)
        self.operand(self.call.arg_expr(2 if mode else 1), self.dname())
        return self._next(stage)

    def _unary(self, stage: str) -> Any:
        self.enter(stage)
        self.dtype_rule(stage)
        op = self.value(0)
        self.claim(getattr(op, "alu", None) if op is not None else None)
        mode = self.value(1) if self.method.endswith("_with_mode") else None
        if mode is not None and getattr(mode, "args", None) == (1,):
            self.operand(self.call.arg_expr(2), "f32")
        return self._next(stage)

    def _ternary(self, stage: str) -> Any:
        self.enter(stage)
        self.dtype_rule(stage)
        op = self.value(0)
        self.claim(getattr(op, "alu", None) if op is not None else None)
        first = _operand0(self.call.arg_expr(2 if self.method.endswith("_with_mode") else 1))
        if first is not None:
            self.operand(first, "f32")  # OperandRead as operand0 (L8716) has the carried operand's rules
        return self._next(stage)

    def _convert(self, stage: str) -> Any:
        self.enter(stage)
        self.dtype_rule(stage)
        width = self.call.arg_int(0)
        if width is not None:
            self.rule(lambda: vp.plan_int_width(width, self.method))
        lay = self.layout
        out = replace(lay, dtype=dt.f32 if stage == "FxpToFp" else dt.i32) if lay is not None else None
        return self._next(stage, out)

    def _lanes(self, stage: str, which: str) -> Any:
        """``vector_split``/``vector_concat`` (Time2, Packet2) and ``vector_trim_way4``/``vector_pad_way8``
        (Packet2), on one stream or a pair (``VeBase.enter``, then the plan): the Narrow/Widen plan's Time and
        Packet are the result's."""
        self.enter(stage)
        self.dtype_rule(stage)
        lay = self.layout
        two = which in ("split", "concat")
        t2 = self.call.arg_mapping(0) if two else None
        p2 = self.call.arg_mapping(1 if two else 0)
        if lay is None or p2 is None or (two and t2 is None):
            return self._next(stage)
        plans: dict[str, Callable[[], vp.LaneConfig]] = {
            "split": lambda: vp.plan_split(self.hw, lay.time, lay.packet, t2, p2),  # type: ignore[arg-type]
            "concat": lambda: vp.plan_concat(self.hw, lay.time, lay.packet, t2, p2),  # type: ignore[arg-type]
            "trim": lambda: vp.plan_trim(self.hw, lay.time, lay.packet, p2),
            "pad": lambda: vp.plan_pad(self.hw, lay.time, lay.packet, p2),
        }
        out: list[vp.LaneConfig] = []
        self.rule(lambda: out.append(plans[which]()))
        return self._next(stage, replace(lay, time=out[0].time, packet=out[0].packet))

    def _intra(self, stage: str) -> Any:
        from visa.engines.vector import REDUCE_RESOURCE
        from visa.engines.vector.intra import plan_intra_reduce

        self.enter(stage)
        self.dtype_rule(stage)
        self.claim(REDUCE_RESOURCE)
        lay = self.layout
        axis = self._axis(0)
        otime, opacket, op = self.call.arg_mapping(1), self.call.arg_mapping(2), self.value(3)
        if lay is None or axis is None or otime is None or opacket is None or op is None:
            return self._next(stage)
        out: list[StreamLayout] = []
        self.rule(lambda: out.append(plan_intra_reduce(self.hw, lay, op, axis, otime, opacket, None).out))
        return self._next(stage, out[0])

    def _axis(self, i: int) -> Any:
        expr = self.call.arg_expr(i)
        if isinstance(expr, StrExpr):
            return expr.value
        return self.call.arg_mapping(i)

    def _filter(self, stage: str) -> Any:
        self.enter(stage)
        ids = self.value(0)
        if ids is not None:
            self.rule(lambda: vp.plan_filter(self.hw, ids, self.method))
        return self._next(stage)

    def _final(self, stage: str) -> Any:
        self.enter(stage)
        return self._next(stage)

    def _inter(self, stage: str) -> Any:
        from visa.engines.vector.inter import plan_inter_reduce

        st = self.state
        if st.known and st.order is not None:
            order = st.order
            self.rule(lambda: vp.plan_inter_entry(order, st.inter_done))
        self.enter(stage)
        lay, d = self.layout, self.dtype
        if lay is None or d is None:
            return self._next(stage, order=None)
        self.rule(lambda: vp.plan_entry(self.hw, d, lay.packet, self.method))
        slice2, time2, op = self.call.arg_mapping(0), self.call.arg_mapping(1), self.value(2)
        order_after = "InterFirst" if st.stage == "Init" else "IntraFirst"
        if slice2 is None or time2 is None or op is None:
            return self._next(stage, order=order_after, inter_done=True)
        out: list[StreamLayout] = []
        self.rule(lambda: out.append(plan_inter_reduce(self.hw, lay, op, slice2, time2).out))
        return self._next(stage, out[0], order=order_after, inter_done=True)

    def _stash(self, stage: str) -> Any:
        st = self.state
        if st.known and st.context is not None:
            context = st.context
            self.rule(lambda: vp.plan_stash(st.stage, context, st.stash_taken))
        name, lay = self.dname(), self.layout
        slot = (name, _levels(lay)) if name is not None and lay is not None else None
        return replace(st, stash=slot, stash_taken=True, known=st.known and slot is not None), lay

    def _branch(self, stage: str) -> Any:
        st, lay, d = self.state, self.layout, self.dtype
        self.rule(lambda: vp.plan_transition(self.hw, st.stage, "Branch"))
        if lay is not None and d is not None:
            from visa.engines.vector.elementwise import plan_branch

            self.rule(lambda: vp.plan_entry(self.hw, d, lay.packet, self.method))
            mode = self.value(0)
            if mode is not None:
                self.rule(lambda: plan_branch(self.hw, mode, vp.dtype_name(d)))
            else:
                self._branch_log(lay)
        return self._next(stage)

    def _branch_log(self, lay: StreamLayout) -> None:
        """``BranchMode.Vrf(ids)`` (L4802): the log is an i32 VRF tensor the stream reads from its own slices."""
        from visa.engines.vector.elementwise import check_branch_log_dtype
        from visa.engines.vector.relayout import plan_gather

        expr = self.call.arg_expr(0)
        if not (isinstance(expr, CallExpr) and isinstance(expr.callee, MemberExpr) and expr.callee.name == "Vrf"
                and len(expr.args) == 1):
            return
        vrf = tensor_of(type_of(self.call.ctx.api, expr.args[0]))
        if vrf is None or "Row" in vrf[1] or "Cluster" not in vrf[1]:
            return
        vd, vl = vrf
        self.rule(lambda: check_branch_log_dtype(vp.dtype_name(vd), self.method, vl["Element"]))
        src = (vl["Chip"], vl["Cluster"], vl["Slice"], vl["Element"])
        self.rule(lambda: plan_gather(src, _levels(lay), self.method, "VRF operand"))

    def _write_operand(self, stage: str) -> Any:
        """``vector_write_operand(WriteOperand(...))`` (L8708–8721): ``plan_write_operand``; the register now holds
        the stream's dtype at its lanes."""
        st, lay = self.state, self.layout
        write = self.value(0)
        name = self.dname()
        if st.known and st.context is not None and write is not None:
            context = st.context
            self.rule(lambda: vp.plan_write_operand(write, st.stage, context, st.carry is not None,
                                                    st.pending_dtype, name))
        lanes = (lay.time, lay.packet) if lay is not None else None
        carry = (name, lanes) if name is not None else None
        return replace(st, carry=carry, pending=None, pending_dtype=None, known=st.known and carry is not None), lay

    def _unzip(self, stage: str) -> Any:
        from visa.engines.vector.ops import axis_name

        st, lay, d = self.state, self.layout, self.dtype
        self.rule(lambda: vp.plan_transition(self.hw, st.stage, "Branch"))
        if lay is None or d is None:
            return self._next(stage, context="Paired")
        self.rule(lambda: vp.plan_entry(self.hw, d, lay.packet, self.method))
        axis, tile, split = self._axis(0), self.call.arg_mapping(1), self.call.arg_mapping(2)
        if axis is None or tile is None or split is None:
            return self._next(stage, context="Paired")
        self.rule(lambda: vp.plan_unzip(self.hw, axis_name(axis, self.method), lay.time, lay.packet, tile, split))
        return self._next(stage, replace(lay, time=split), context="Paired")

    def _pergroup(self, stage: str, ternary: bool = False) -> Any:
        mode = self.method.endswith("_with_mode")
        self.enter(stage)
        self.dtype_rule(stage)
        op = self.value(0)
        name = self.dname()
        if not ternary and op is not None and name is not None:
            self.rule(lambda: vp.check_op(stage, op, name, self.method))
        groups = [self.call.arg_expr(k) for k in ((2, 3) if mode else (1, 2))]
        skipped = [_skipped(g) for g in groups]
        if not all(s is True for s in skipped):
            if any(s is None for s in skipped):
                self.claim(None)
            else:
                self.claim(getattr(op, "alu", None) if op is not None else None)
        if not ternary:
            for g, s in zip(groups, skipped, strict=True):
                if s is False:
                    self.operand(g, name)
        return self._next(stage)

    def _pergroup_ternary(self, stage: str) -> Any:
        return self._pergroup(stage, ternary=True)

    def _pair_unary(self, stage: str) -> Any:
        self.enter(stage)
        self.dtype_rule(stage)
        op = self.value(0)
        on = [_bool(self.call.arg_expr(k)) for k in (1, 2)]
        if any(v is None for v in on):
            self.claim(None)
        elif any(on):
            self.claim(getattr(op, "alu", None) if op is not None else None)
        return self._next(stage)

    def _zip(self, stage: str) -> Any:
        self.enter(stage)
        self.dtype_rule(stage)
        self.op(0, stage)
        return self._next(stage, context="Zipped")


def _operand0(expr: Expression | None) -> Expression | None:
    """Operand0 of a ternary op's operands, ``(o0, o1)`` or ``TernaryOperand(o0, o1)``, when it reads the carried
    operand (``OperandRead(...)``); else None (its other kinds are checked at run time)."""
    if isinstance(expr, TupleExpr) and expr.items:
        first: Expression | None = expr.items[0]
    elif isinstance(expr, CallExpr) and isinstance(expr.callee, (NameExpr, MemberExpr)) and \
            expr.callee.name == "TernaryOperand" and expr.args:
        first = expr.args[0]
    else:
        return None
    if isinstance(first, CallExpr) and isinstance(first.callee, (NameExpr, MemberExpr)) and \
            first.callee.name == "OperandRead":
        return first
    return None


def _levels(lay: StreamLayout) -> tuple[Mapping, ...]:
    return lay.chip, lay.cluster, lay.slice, lay.time, lay.packet


def _constant(expr: Expression, module: str) -> int | float | None:
    got = constant_fold_expr(expr, module)
    return got if isinstance(got, (int, float)) and not isinstance(got, bool) else None


def _bool(expr: Expression | None) -> bool | None:
    if isinstance(expr, NameExpr) and expr.fullname in ("builtins.True", "builtins.False"):
        return expr.fullname == "builtins.True"
    return None


def _skipped(expr: Expression | None) -> bool | None:
    """A group's operand is skipped (``()``/``None``): True; a constant or a visa name (``Stash``): False; else
    None (a variable: the source does not say)."""
    if expr is None:
        return True
    if isinstance(expr, TupleExpr):
        return not expr.items
    if isinstance(expr, NameExpr) and expr.fullname == "builtins.None":
        return True
    if _constant(expr, "") is not None:
        return False
    if isinstance(expr, (NameExpr, MemberExpr)) and (expr.fullname or "").startswith("visa."):
        return False
    if isinstance(expr, CallExpr) and isinstance(expr.callee, (NameExpr, MemberExpr)) and \
            (expr.callee.fullname or "").startswith("visa."):
        return False
    return None
