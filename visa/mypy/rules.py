"""What each stage method does to a stream's type, and which runtime function checks it.

For each method, a function of the call's :class:`StageInputs` returns the next stage's class and type
arguments (``SAME`` keeps the receiver's, ``ArgMapping(i)``/``ArgDtype(i)`` take the call's argument ``i``) and
a ``check`` that calls what the runtime calls for that method — the engine's pure ``plan``
(:mod:`visa.engines`), :func:`~visa.memory.layout.check_placement` — with the same arguments, and lets its
:class:`~visa.errors.VisaError` propagate.  No rule is written here: only which runtime function sees which
dtypes and mappings.  An argument the plugin cannot see (a variable holding a config, a non-constant
address) leaves the check that needs it undone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from mypy.constant_fold import constant_fold_expr
from mypy.nodes import CallExpr, Expression, MemberExpr, NameExpr, RefExpr

from visa import dtypes as dt
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.memory.layout import check_placement

__all__ = ["SAME", "ArgMapping", "ArgDtype", "Result", "StageInputs", "STAGES", "RECEIVERS", "placement",
           "static_value", "engine"]

S = "visa.stream.stages."
T = "visa.memory.tensors."


class _Same:
    def __repr__(self) -> str:
        return "SAME"


#: The output keeps the receiver's type argument at this position.
SAME: Any = _Same()


@dataclass(frozen=True)
class ArgMapping:
    """The output's type argument is the call's mapping argument ``index``."""

    index: int


@dataclass(frozen=True)
class ArgDtype:
    """The output's type argument is the call's dtype argument ``index``."""

    index: int


@dataclass
class Result:
    """The next stage: its class, its type arguments, and the rule to run (None: nothing to check)."""

    cls: str
    args: list[Any]
    check: Callable[[], object] | None = None


@dataclass
class StageInputs:
    """What a stage hook knows about a call (functions of the argument position)."""

    hw: HardwareProfile
    dtype: type[dt.Scalar] | None
    layout: dict[str, Mapping] | None  # Chip, Cluster, Slice, Time, Packet of the receiver
    stage: str  # the receiver's class name (FetchTensor, ...)
    mapping: Callable[[int], Mapping | None]
    dtype_arg: Callable[[int], type[dt.Scalar] | None]
    integer: Callable[[int], int | None]
    expr: Callable[[int], Expression | None]
    num_chips: Callable[[], int | None]
    module: str = ""
    #: the Tensor Unit context ("main"/"sub") and the stage methods before this one, when the call is part
    #: of one chained expression that starts at ``ctx.main.begin(...)``/``ctx.sub.begin(...)``
    context: str = "main"
    history: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def level(self, name: str) -> Mapping:
        assert self.layout is not None
        return self.layout[name]

    def value(self, i: int) -> Any:
        """The value of argument ``i`` when the source spells it as constants (raises Unknown otherwise)."""
        expr = self.expr(i)
        if expr is None:
            raise Unknown(i)
        return static_value(expr, self.module)


class Unknown(Exception):
    """An argument the plugin cannot evaluate statically: the check that needs it is skipped."""


def engine(name: str) -> ModuleType | None:
    """``visa.engines.<name>`` if it exists (engines land one by one)."""
    try:
        return importlib.import_module(f"visa.engines.{name}")
    except ImportError:
        return None


def _object(fullname: str) -> Any:
    """The Python object a fully qualified name in the visa package refers to."""
    if not fullname.startswith("visa."):
        raise Unknown(fullname)
    parts = fullname.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise Unknown(fullname)


def static_value(expr: Expression, module: str) -> Any:
    """Evaluate a constant argument: numbers and strings, visa enum members (``TrfAddress.Full``) and visa
    configuration constructors with constant arguments (``SwitchConfig.Broadcast01(slice1=256, ...)``)."""
    folded = constant_fold_expr(expr, module)
    if folded is not None:
        return folded
    if isinstance(expr, RefExpr) and expr.fullname and expr.fullname.startswith("visa."):
        return _object(expr.fullname)
    if isinstance(expr, MemberExpr):
        return getattr(static_value(expr.expr, module), expr.name)
    if isinstance(expr, CallExpr) and isinstance(expr.callee, (NameExpr, MemberExpr)):
        fn = static_value(expr.callee, module)
        if not callable(fn) or not getattr(fn, "__module__", "").startswith("visa."):
            raise Unknown(expr)
        args, kwargs = [], {}
        for name, arg in zip(expr.arg_names, expr.args, strict=True):
            if name is None:
                args.append(static_value(arg, module))
            else:
                kwargs[name] = static_value(arg, module)
        return fn(*args, **kwargs)
    raise Unknown(expr)


# -- memories ------------------------------------------------------------------------------------------------------
def placement(hw: HardwareProfile, memory: str, dtype: type[dt.Scalar], levels: dict[str, Mapping],
              address: int | None, num_chips: int | None, trf_half: bool = False) -> None:
    """:func:`visa.memory.layout.check_placement` (an unknown address is checked as 0: its own rules skipped)."""
    check_placement(hw, memory, dtype, levels, address if address is not None else 0, num_chips=num_chips,
                    trf_half=trf_half)


def dma_move(hw: HardwareProfile, dtype: type[dt.Scalar], src_memory: str, src: dict[str, Mapping],
             dst_memory: str, dst: dict[str, Mapping], address: int | None, num_chips: int | None) -> None:
    """A DMA move (``host.to_hbm``, ``hbm.to_dm``, ...): :func:`visa.engines.dma.plan` of the two sides, then
    the destination's placement with the kernel's chip count, as :mod:`visa.engines.dma` does.  The source's
    address is not in its type: it is taken as 0 (rules about it are left to run time)."""
    from visa.memory.layout import LEVELS, TYPE_NAMES

    mod = engine("dma")
    if mod is None or not hasattr(mod, "plan") or not hasattr(mod, "Side"):
        if dst_memory != "host":
            placement(hw, dst_memory, dtype, dst, address, num_chips)
        return
    call = src_memory + ".to_" + dst_memory

    def name(memory: str, levels: dict[str, Mapping]) -> str:  # DeviceTensor.describe() without the address
        return f"{TYPE_NAMES[memory]}[{', '.join([repr(dtype), *(repr(levels[k]) for k in LEVELS[memory])])}]"

    src_name = name(src_memory, src)
    dst_name = name(dst_memory, dst) + ("" if dst_memory == "host" else f" @ {address or 0}")
    mod.plan(hw, dtype, mod.Side.of(src_memory, src, 0, name=src_name),
             mod.Side.of(dst_memory, dst, address if address is not None else 0, name=dst_name), call=call)
    if dst_memory != "host":
        placement(hw, dst_memory, dtype, dst, address, num_chips)


# -- stream stages ---------------------------------------------------------------------------------------------------
def _stream(cls: str, *args: Any, check: Callable[[], object] | None = None) -> Result:
    return Result(S + cls, list(args), check)


def _fetch(with_: str) -> Callable[[StageInputs], Result]:
    def rule(inp: StageInputs) -> Result:
        """``fetch(D2, Time2, Packet2)`` and its variants (L1700–1718, L1936–1959, L2022–2049):
        :func:`visa.engines.fetch.plan` of the viewed DmTensor read as the stream."""
        d2, time, packet = inp.dtype_arg(0), inp.mapping(1), inp.mapping(2)

        def check() -> None:
            mod = engine("fetch")
            if mod is None or d2 is None or time is None or packet is None or inp.dtype is None:
                return
            kw: dict[str, Any] = {}
            begin_time = inp.level("Time")
            if begin_time.size != 1:
                kw["interleave"] = begin_time
            if with_ == "table":
                table = inp.value(3)
                kw["table"] = (table.din, table.dout)
            elif with_ == "zero_point":
                kw["zero_points"] = (int(inp.value(3)),)
            elif with_ == "zero_points":
                kw["zero_points"] = tuple(int(z) for z in inp.value(3))
            mod.plan(inp.hw, inp.dtype, d2, inp.level("Chip"), inp.level("Cluster"), inp.level("Slice"),
                     inp.level("Packet"), time, packet, context=inp.context, **kw)

        return _stream("FetchTensor", ArgDtype(0), SAME, SAME, SAME, ArgMapping(1), ArgMapping(2), check=check)

    return rule


def switch(inp: StageInputs) -> Result:
    """``switch(Slice2, Time2, config)`` (L3054–3542): :func:`visa.engines.switch.plan`."""
    slice2, time2 = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        mod = engine("switch")
        if mod is None or slice2 is None or time2 is None or inp.dtype is None:
            return
        config = inp.value(2)
        mod.plan(inp.hw, inp.dtype, inp.level("Slice"), inp.level("Time"), inp.level("Packet"), slice2, time2,
                 config)

    return _stream("SwitchTensor", SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), SAME, check=check)


def collect(inp: StageInputs) -> Result:
    """``collect(Time2, Packet2)`` (L3543–3669): :func:`visa.engines.collect.plan`."""
    time2, packet2 = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        mod = engine("collect")
        if mod is None or time2 is None or packet2 is None or inp.dtype is None:
            return
        mod.plan(inp.hw, inp.dtype, inp.level("Time"), inp.level("Packet"), time2, packet2)

    return _stream("CollectTensor", SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), check=check)


_AFTER = {"FetchTensor": ("fetch",), "SwitchTensor": ("fetch", "switch"), "CollectTensor": ("fetch", "collect"),
          "AccumulationTensor": ("fetch", "collect", "contraction"), "VectorFinalTensor": ("fetch", "collect",
                                                                                          "vector"),
          "CastTensor": ("fetch", "collect", "cast"), "TransposeTensor": ("fetch", "collect", "transpose")}
_ENGINE_OF = {"fetch": "fetch", "fetch_with_table": "fetch", "fetch_with_zero_point": "fetch",
              "fetch_with_zero_points": "fetch", "switch": "switch", "collect": "collect", "align": "contraction",
              "contract": "contraction", "accumulate": "contraction", "cast": "cast", "transpose": "transpose"}


def _after(inp: StageInputs) -> tuple[str, ...]:
    """The engines the stream went through (the chain when it is visible, else what its stage implies)."""
    if inp.history is None:
        return _AFTER.get(inp.stage, ("fetch", "collect"))
    out: list[str] = []
    for name in inp.history:
        eng = _ENGINE_OF.get(name, "vector" if name.startswith("vector") else None)
        if eng is not None and eng not in out:
            out.append(eng)
    return tuple(out)


def commit(inp: StageInputs) -> Result:
    """``commit(Element, address)`` (L2149–2163): :func:`visa.engines.commit.plan`, then the DmTensor's
    placement (:func:`~visa.memory.layout.check_placement`)."""
    element = inp.mapping(0)

    def check() -> None:
        mod = engine("commit")
        if mod is None or element is None or inp.dtype is None:
            return
        mod.plan(inp.hw, inp.dtype, inp.level("Chip"), inp.level("Cluster"), inp.level("Slice"), inp.level("Time"),
                 inp.level("Packet"), element, context=inp.context, after=_after(inp))
        placement(inp.hw, "dm", inp.dtype, {"Chip": inp.level("Chip"), "Cluster": inp.level("Cluster"),
                                            "Slice": inp.level("Slice"), "Element": element},
                  inp.integer(1), inp.num_chips())

    return Result(T + "DmTensor", [SAME, SAME, SAME, SAME, ArgMapping(0)], check)


def to_trf(inp: StageInputs) -> Result:
    """``to_trf(Row, Element, address)`` (L4049–4061): :func:`visa.engines.collect.plan_trf` and the
    TrfTensor's placement."""
    row, element = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        mod = engine("collect")
        if mod is None or row is None or element is None or inp.dtype is None:
            return
        address = inp.value(2)
        mod.plan_trf(inp.hw, inp.dtype, inp.level("Time"), inp.level("Packet"), row, element, address.name)
        placement(inp.hw, "trf", inp.dtype, {"Chip": inp.level("Chip"), "Cluster": inp.level("Cluster"),
                                             "Slice": inp.level("Slice"), "Row": row, "Element": element},
                  0, inp.num_chips(), trf_half=address.half)

    return Result(T + "TrfTensor", [SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1)], check)


def to_vrf(inp: StageInputs) -> Result:
    """``to_vrf(Element, address)`` (L280–285, L5063–5081): :func:`visa.engines.collect.plan_vrf` and the
    VrfTensor's placement."""
    element = inp.mapping(0)

    def check() -> None:
        mod = engine("collect")
        if mod is None or element is None or inp.dtype is None:
            return
        address = inp.integer(1)
        mod.plan_vrf(inp.hw, inp.dtype, inp.level("Time"), inp.level("Packet"), element,
                     address if address is not None else 0)
        placement(inp.hw, "vrf", inp.dtype, {"Chip": inp.level("Chip"), "Cluster": inp.level("Cluster"),
                                             "Slice": inp.level("Slice"), "Element": element},
                  address, inp.num_chips())

    return Result(T + "VrfTensor", [SAME, SAME, SAME, SAME, ArgMapping(0)], check)


def call_arg(call: CallExpr, index: int, name: str) -> Expression | None:
    """Argument ``index`` (or keyword ``name``) of a call expression (``self`` not counted)."""
    for k, (arg_name, arg) in enumerate(zip(call.arg_names, call.args, strict=True)):
        if arg_name == name or (arg_name is None and k == index):
            return arg
    return None


def _trf_mode(inp: StageInputs, expr: Expression | None) -> tuple[str, int] | None:
    """The address mode and byte address of a TRF tensor, from the ``to_trf`` call that made it."""
    src = inp.extra["source"](expr) if expr is not None else None
    if isinstance(src, CallExpr) and isinstance(src.callee, MemberExpr) and src.callee.name == "to_trf":
        arg = call_arg(src, 2, "address")
        if arg is not None:
            address = static_value(arg, inp.module)
            return address.name, address.offset_halves * inp.hw.trf.half_row_bytes
    return None


def align(inp: StageInputs) -> Result:
    """``align(Time, Packet, trf)`` (L3789–4296): :func:`visa.engines.contraction.plan_align` with the TRF
    operand's type (its address mode from the ``to_trf`` call that made it, when the source shows it)."""
    time2, packet2 = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        mod = engine("contraction")
        trf = inp.extra["tensor"](inp.extra["arg_type"](2))
        mode = _trf_mode(inp, inp.expr(2))
        if mod is None or time2 is None or packet2 is None or inp.dtype is None or trf is None or mode is None:
            return
        d, lv = trf
        operand = mod.TrfOperand(d, lv["Chip"], lv["Cluster"], lv["Slice"], lv["Row"], lv["Element"], *mode)
        mod.plan_align(inp.hw, inp.dtype, inp.level("Chip"), inp.level("Cluster"), inp.level("Slice"),
                       inp.level("Time"), inp.level("Packet"), operand, time2, packet2)

    return _stream("AlignedTensor", SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), check=check)


def contract(inp: StageInputs) -> Result:
    """``contract(Packet)`` (L4310–4436): :func:`visa.engines.contraction.plan_contract`, whose output dtype
    (i32 or f32) is the result's."""
    packet2 = inp.mapping(0)
    result = _stream("ContractionTensor", None, SAME, SAME, SAME, SAME, ArgMapping(0))

    def check() -> None:
        mod = engine("contraction")
        if mod is None or packet2 is None or inp.dtype is None:
            return
        result.args[0] = mod.plan_contract(inp.hw, inp.dtype, inp.level("Packet"), packet2).out_dtype

    result.check = check
    return result


def accumulate(inp: StageInputs) -> Result:
    """``accumulate(Time, Packet, kind)`` (L4318–4548): :func:`visa.engines.contraction.plan_accumulate`, with
    the Row of the TRF operand of the ``align`` this stream went through (when the source shows it)."""
    time2, packet2 = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        mod = engine("contraction")
        if mod is None or time2 is None or packet2 is None or inp.dtype is None:
            return
        kind = inp.value(2)
        row = None
        for c in inp.extra["calls"]():
            if isinstance(c.callee, MemberExpr) and c.callee.name == "align":
                arg = call_arg(c, 2, "trf")
                found = inp.extra["tensor"](inp.extra["type_of"](arg)) if arg is not None else None
                row = found[1]["Row"] if found is not None else None
                break
        if row is None:
            return
        mod.plan_accumulate(inp.hw, inp.dtype, row, inp.level("Time"), inp.level("Packet"), time2, packet2,
                            kind.name)

    return _stream("AccumulationTensor", SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), check=check)


def cast(inp: StageInputs) -> Result:
    """``cast(D2, Packet)`` (L6756–6819): :func:`visa.engines.cast.plan`."""
    d2, packet = inp.dtype_arg(0), inp.mapping(1)

    def check() -> None:
        mod = engine("cast")
        if mod is None or d2 is None or packet is None or inp.dtype is None:
            return
        mod.plan(inp.hw, inp.dtype, d2, inp.level("Packet"), packet, inp.level("Time"))

    return _stream("CastTensor", ArgDtype(0), SAME, SAME, SAME, SAME, ArgMapping(1), check=check)


def transpose(inp: StageInputs) -> Result:
    """``transpose(OutTime, OutPacket)`` (L6820–7041): :func:`visa.engines.transpose.plan`."""
    time, packet = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        mod = engine("transpose")
        if mod is None or time is None or packet is None or inp.dtype is None:
            return
        mod.plan(inp.hw, inp.dtype, inp.level("Time"), inp.level("Packet"), time, packet)

    return _stream("TransposeTensor", SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), check=check)


STAGES: dict[str, Callable[[StageInputs], Result]] = {
    "fetch": _fetch(""), "fetch_with_table": _fetch("table"), "fetch_with_zero_point": _fetch("zero_point"),
    "fetch_with_zero_points": _fetch("zero_points"),
    "collect": collect, "switch": switch, "commit": commit, "to_trf": to_trf, "to_vrf": to_vrf,
    "align": align, "contract": contract, "accumulate": accumulate, "cast": cast, "transpose": transpose,
}
#: Receivers of stage methods that ``visa.stream.stages.STAGE_METHODS`` does not list (vector stages).
RECEIVERS: dict[str, tuple[str, ...]] = {}


# -- the Vector Engine ---------------------------------------------------------------------------------------------
def vector_entry(hw: HardwareProfile, dtype: type[dt.Scalar], packet: Mapping) -> None:
    """``vector_init``: :func:`visa.engines.vector.plan.plan_entry` (i32 and f32 only, L4551)."""
    from visa.engines.vector.plan import plan_entry

    plan_entry(hw, dtype, packet, "vector_init")


def alu_of(method: str, op: Expression | None, module: str) -> str | None:
    """The ALU a vector stage call takes, as the stream classes claim it: the operator's ``alu`` (the reducer's
    resource for an intra-slice reduction); None when the source does not show it."""
    if method == "vector_intra_slice_reduce":
        from visa.engines.vector import REDUCE_RESOURCE

        return REDUCE_RESOURCE
    if op is None or not method.startswith("vector_") or "zip" in method:
        return None
    try:
        value = static_value(op, module)
    except (Unknown, AttributeError, TypeError):
        return None
    alu = getattr(value, "alu", None)
    return alu if isinstance(alu, str) else None


def claim_all(earlier: list[tuple[str, str]], current: tuple[str, str]) -> None:
    """Replay :func:`visa.engines.vector.plan.claim` over a pass: the earlier stages' ALUs, then this one's."""
    from visa.engines.vector.plan import claim

    used: frozenset[str] = frozenset()
    for alu, call in earlier:
        try:
            used = claim(used, alu, call)
        except Exception:  # noqa: BLE001 - an earlier call reports its own refusal
            return
    claim(used, current[0], current[1])
