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
from dataclasses import dataclass
from typing import Any, Literal

from mypy.constant_fold import constant_fold_expr
from mypy.nodes import CallExpr, Expression, ListExpr, MemberExpr, NameExpr, RefExpr, TupleExpr
from mypy.types import Type

from visa import dtypes as dt
from visa.engines import cast as cast_engine
from visa.engines import collect as collect_engine
from visa.engines import commit as commit_engine
from visa.engines import contraction as contraction_engine
from visa.engines import dma as dma_engine
from visa.engines import fetch as fetch_engine
from visa.engines import switch as switch_engine
from visa.engines import transpose as transpose_engine
from visa.errors import VisaError
from visa.hw import HardwareProfile
from visa.mapping import Mapping
from visa.memory.layout import check_placement
from visa.mypy.chain import call_arg
from visa.mypy.typeargs import S, T, mapping_of, tensor_of

__all__ = ["SAME", "ArgMapping", "ArgDtype", "Result", "StageInputs", "STAGES", "placement",
           "static_value"]

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
    #: the method calls the stream went through before this one, nearest first (:func:`~visa.mypy.chain.calls_before`)
    calls: Callable[[], list[CallExpr]] = list
    #: the type mypy gives argument ``i``, and the receiver's type arguments
    arg_type: Callable[[int], Type | None] = lambda i: None
    recv_args: Callable[[], list[Type]] = list
    #: the type of a name the call refers to (``trf`` in ``.align(T, P, trf)``)
    expr_type: Callable[[Expression], Type | None] = lambda e: None
    #: where the tensor or view an expression holds was made (:func:`visa.mypy.origin.origin_of`), or None
    origin: Callable[[Expression | None], Any] = lambda e: None

    def level(self, name: str) -> Mapping:
        """The receiver's mapping at ``name`` (Chip, Cluster, Slice, Time or Packet); its layout is known."""
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
    """Evaluate a constant argument: numbers and strings, visa enum members (``TrfAddress.Full``), visa
    configuration constructors with constant arguments (``SwitchConfig.Broadcast01(slice1=256, ...)``) and lists
    or tuples of them (``BranchMode.Comparison([InputCmp.I32.Less(0)])``)."""
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
    if isinstance(expr, (ListExpr, TupleExpr)):
        items = [static_value(item, module) for item in expr.items]
        return items if isinstance(expr, ListExpr) else tuple(items)
    raise Unknown(expr)


# -- memories ------------------------------------------------------------------------------------------------------
def placement(hw: HardwareProfile, memory: str, dtype: type[dt.Scalar], levels: dict[str, Mapping],
              address: int | None, num_chips: int | None, trf_half: bool = False, call: str | None = None) -> None:
    """:func:`visa.memory.layout.check_placement` (an unknown address is checked as 0: its own rules skipped)."""
    check_placement(hw, memory, dtype, levels, address if address is not None else 0, num_chips=num_chips,
                    trf_half=trf_half, call=call)


def overlap(hw: HardwareProfile, dtype: type[dt.Scalar], memory: str, levels: dict[str, Mapping], address: int,
            source: Any, call: str) -> None:
    """:func:`visa.memory.registry.refuse_overlap` of a new tensor (at a constant ``address``) and a tensor the
    same operation reads, whose origin the source shows (:class:`visa.mypy.origin.Origin`)."""
    from visa.memory.footprint import units_of
    from visa.memory.layout import describe, element_bytes
    from visa.memory.registry import Region, refuse_overlap

    def region(mem: str, lv: dict[str, Mapping], at: int, name: str) -> Region:
        rows = frozenset(range(lv["Row"].size)) if "Row" in lv else None
        units = units_of(lv, hw.dm.slices_per_cluster) if "Slice" in lv else -1
        return Region(mem, frozenset(range(lv["Chip"].size)), at, at + element_bytes(dtype, lv["Element"].size),
                      name, rows, units=units)

    refuse_overlap(region(memory, levels, address, describe(memory, dtype, levels, address)),
                   region(source.memory, source.levels, source.address, source.describe()), call)


def dma_move(hw: HardwareProfile, dtype: type[dt.Scalar], src_memory: str, src: dict[str, Mapping],
             dst_memory: str, dst: dict[str, Mapping], address: int | None, num_chips: int | None,
             source: Any = None, stream: tuple[Mapping, Mapping] | Literal[False] | None = None) -> None:
    """A DMA move (``host.to_hbm``, ``hbm.to_dm``, ``view.to_dm``, ...): :func:`visa.engines.dma.plan` of the two
    sides, then the destination's placement with the kernel's chip count, then (both addresses known) the
    overlap of the result with its source, as :mod:`visa.engines.dma` does.  ``source`` is the source's origin
    (:class:`visa.mypy.origin.Origin`) when the source shows where it was made; without it the source's address
    is not known: it is taken as 0 and named without it (the rules about it are left to run time).  ``stream`` is
    the call's explicit ``stream=(Time, Packet)`` (False: given but not spelled out, so the plan is skipped)."""
    from visa.memory.layout import LEVELS, TYPE_NAMES

    call = src_memory + ".to_" + dst_memory

    def name(memory: str, levels: dict[str, Mapping]) -> str:  # DeviceTensor.describe() without the address
        return f"{TYPE_NAMES[memory]}[{', '.join([repr(dtype), *(repr(levels[k]) for k in LEVELS[memory])])}]"

    if source is not None:
        src_side = dma_engine.Side.of(src_memory, src, 0, name=source.name())
        src_side = dma_engine.Side(src_side.medium, src_side.levels, source.bit_address(), src_side.name)
    else:
        src_side = dma_engine.Side.of(src_memory, src, 0, name=name(src_memory, src))
    dst_name = name(dst_memory, dst) + ("" if dst_memory == "host" else f" @ {address or 0}")
    if stream is not False:
        dst_side = dma_engine.Side.of(dst_memory, dst, address if address is not None else 0, name=dst_name)
        dma_engine.plan(hw, dtype, src_side, dst_side, stream=stream, call=call)
    if dst_memory != "host":
        placement(hw, dst_memory, dtype, dst, address, num_chips, call=call)
        if source is not None and address is not None:
            overlap(hw, dtype, dst_memory, dst, address, source, call)


# -- stream stages ---------------------------------------------------------------------------------------------------
def _stream(cls: str, *args: Any, check: Callable[[], object] | None = None) -> Result:
    return Result(S + cls, list(args), check)


def _fetch(with_: str) -> Callable[[StageInputs], Result]:
    def rule(inp: StageInputs) -> Result:
        """``fetch(D2, Time2, Packet2)`` and its variants (L1700–1718, L1936–1959, L2022–2049):
        :func:`visa.engines.fetch.plan` of the viewed DmTensor read as the stream."""
        d2, time, packet = inp.dtype_arg(0), inp.mapping(1), inp.mapping(2)

        def check() -> None:
            if d2 is None or time is None or packet is None or inp.dtype is None:
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
            if with_ == "" and inp.expr(3) is not None:  # fetch(..., pad_value=PadValue.Min) (L1898–1902)
                kw["pad_value"] = inp.value(3)
            elif with_ and inp.expr(4) is not None:  # fetch_with_table/zero_point(..., pad_value=...)
                kw["pad_value"] = inp.value(4)
            fetch_engine.plan(inp.hw, inp.dtype, d2, inp.level("Chip"), inp.level("Cluster"), inp.level("Slice"),
                              inp.level("Packet"), time, packet, context=inp.context, **kw)
            for view in _begin_views(inp):  # the views' start addresses, where the source shows them (L1756)
                fetch_engine.view_bit_base(inp.hw, view.dtype, view.address, view.offset, view.element)

        return _stream("FetchTensor", ArgDtype(0), SAME, SAME, SAME, ArgMapping(1), ArgMapping(2), check=check)

    return rule


def _begin_views(inp: StageInputs) -> list[Any]:
    """The origins of the views the stream's ``begin``/``begin_interleaved`` took (only when all are known)."""
    calls = inp.calls()
    begin = calls[-1] if calls else None
    if not (isinstance(begin, CallExpr) and isinstance(begin.callee, MemberExpr)):
        return []
    if begin.callee.name == "begin":
        args = begin.args[:1]
    elif begin.callee.name == "begin_interleaved":
        args = begin.args[1:3]
    else:
        return []
    views = [inp.origin(a) for a in args]
    return views if views and all(v is not None and v.memory == "dm" for v in views) else []


def switch(inp: StageInputs) -> Result:
    """``switch(Slice2, Time2, config)`` (L3054–3542): :func:`visa.engines.switch.plan`."""
    slice2, time2 = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        if slice2 is None or time2 is None or inp.dtype is None:
            return
        config = inp.value(2)
        switch_engine.plan(inp.hw, inp.dtype, inp.level("Slice"), inp.level("Time"), inp.level("Packet"), slice2,
                           time2, config)

    return _stream("SwitchTensor", SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), SAME, check=check)


def collect(inp: StageInputs) -> Result:
    """``collect(Time2, Packet2)`` (L3543–3669): :func:`visa.engines.collect.plan`."""
    time2, packet2 = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        if time2 is None or packet2 is None or inp.dtype is None:
            return
        collect_engine.plan(inp.hw, inp.dtype, inp.level("Time"), inp.level("Packet"), time2, packet2)

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


def _packet(inp: StageInputs, element: Mapping, call: str) -> Mapping:
    """The Packet a commit reads: a stream compacted by ``vector_filter`` (the chain shows it, or, unseen, the
    Element names an axis the stream lacks) is read as :func:`visa.engines.commit.packed_packet` says (L2324)."""
    packet = inp.level("Packet")
    if inp.stage != "VectorFinalTensor":
        return packet
    chip, cluster, slice_, time = (inp.level(k) for k in ("Chip", "Cluster", "Slice", "Time"))
    filtered = "vector_filter" in inp.history if inp.history is not None else \
        bool(element.axes - (chip.axes | cluster.axes | slice_.axes | time.axes | packet.axes))
    return commit_engine.packed_packet(chip, cluster, slice_, time, packet, element, call) if filtered else packet


def commit(inp: StageInputs) -> Result:
    """``commit(Element, address)`` (L2149–2163): :func:`visa.engines.commit.plan`, then the DmTensor's
    placement (:func:`~visa.memory.layout.check_placement`)."""
    element = inp.mapping(0)

    def check() -> None:
        if element is None or inp.dtype is None:
            return
        commit_engine.plan(inp.hw, inp.dtype, inp.level("Chip"), inp.level("Cluster"), inp.level("Slice"),
                           inp.level("Time"), _packet(inp, element, "commit"), element, context=inp.context,
                           after=_after(inp))
        levels = {"Chip": inp.level("Chip"), "Cluster": inp.level("Cluster"), "Slice": inp.level("Slice"),
                  "Element": element}
        address = inp.integer(1)
        placement(inp.hw, "dm", inp.dtype, levels, address, inp.num_chips(), call="commit")
        if address is not None:  # the result may not overlap a DM tensor the pass reads (L150–155)
            for view in _begin_views(inp):
                overlap(inp.hw, inp.dtype, "dm", levels, address, view, "commit")

    return Result(T + "DmTensor", [SAME, SAME, SAME, SAME, ArgMapping(0)], check)


def commit_view(inp: StageInputs) -> Result:
    """``commit_view(view)`` (L2159–2163): :func:`visa.engines.commit.check_view` with the view's type, then
    :func:`visa.engines.commit.plan` with the whole tensor's Element and the view's offset when the source shows
    where the view comes from (``dm.view()``, ``.tile(...)``)."""

    def check() -> None:
        view = tensor_of(inp.arg_type(0))
        if view is None or inp.dtype is None:
            return
        d, lv = view
        commit_engine.check_view(inp.dtype, inp.level("Chip"), inp.level("Cluster"), inp.level("Slice"), d, lv)
        origin = inp.origin(inp.expr(0))
        if origin is None or not origin.view:
            return
        commit_engine.plan(inp.hw, inp.dtype, inp.level("Chip"), inp.level("Cluster"), inp.level("Slice"),
                           inp.level("Time"), _packet(inp, origin.element, "commit_view"), origin.element,
                           context=inp.context, after=_after(inp), region=(origin.levels["Element"], origin.offset))
        for view in _begin_views(inp):  # the tensor written may not overlap one the pass reads (L150–155)
            overlap(inp.hw, inp.dtype, "dm", origin.levels, origin.address, view, "commit_view")

    return Result("", [], check)


def to_trf(inp: StageInputs) -> Result:
    """``to_trf(Row, Element, address)`` (L4049–4061): :func:`visa.engines.collect.plan_trf` and the
    TrfTensor's placement."""
    row, element = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        if row is None or element is None or inp.dtype is None:
            return
        address = inp.value(2)
        collect_engine.plan_trf(inp.hw, inp.dtype, inp.level("Time"), inp.level("Packet"), row, element, address.name)
        placement(inp.hw, "trf", inp.dtype, {"Chip": inp.level("Chip"), "Cluster": inp.level("Cluster"),
                                             "Slice": inp.level("Slice"), "Row": row, "Element": element},
                  0, inp.num_chips(), trf_half=address.half, call="to_trf")

    return Result(T + "TrfTensor", [SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1)], check)


def to_vrf(inp: StageInputs) -> Result:
    """``to_vrf(Element, address)`` (L280–285, L5063–5081): :func:`visa.engines.collect.plan_vrf` and the
    VrfTensor's placement."""
    element = inp.mapping(0)

    def check() -> None:
        if element is None or inp.dtype is None:
            return
        address = inp.integer(1)
        collect_engine.plan_vrf(inp.hw, inp.dtype, inp.level("Time"), inp.level("Packet"), element,
                                address if address is not None else 0)
        placement(inp.hw, "vrf", inp.dtype, {"Chip": inp.level("Chip"), "Cluster": inp.level("Cluster"),
                                             "Slice": inp.level("Slice"), "Element": element},
                  address, inp.num_chips(), call="to_vrf")

    return Result(T + "VrfTensor", [SAME, SAME, SAME, SAME, ArgMapping(0)], check)


def align(inp: StageInputs) -> Result:
    """``align(Time, Packet, trf)`` (L3789–4296): the sub context's refusal, then
    :func:`visa.engines.contraction.plan_align` with the TRF operand's type.  Its address mode comes from the
    ``to_trf`` call that made it when the source shows it; otherwise (a ``TrfTensor`` parameter) the plan is run
    for each address (a full row or its first half at byte 0, the second half) and a refusal is reported only
    when every one of them gives it.  The result carries the TRF's Row (``AlignedTensor[..., Row]``)."""
    time2, packet2 = inp.mapping(0), inp.mapping(1)
    trf = tensor_of(inp.arg_type(2))
    row = trf[1]["Row"] if trf is not None else None

    def check() -> None:
        contraction_engine.check_context(inp.hw, inp.context, "align")
        if time2 is None or packet2 is None or inp.dtype is None or trf is None:
            return
        d, lv = trf
        origin = inp.origin(inp.expr(2))
        if origin is not None and origin.trf_mode is not None:
            modes = [(origin.trf_mode, origin.address)]
        else:
            modes = [("Full", 0), ("SecondHalf", inp.hw.trf.half_row_bytes)]
        refusals: list[VisaError] = []
        for mode in modes:
            operand = contraction_engine.TrfOperand(d, lv["Chip"], lv["Cluster"], lv["Slice"], lv["Row"],
                                                    lv["Element"], *mode)
            try:
                contraction_engine.plan_align(inp.hw, inp.dtype, inp.level("Chip"), inp.level("Cluster"),
                                              inp.level("Slice"), inp.level("Time"), inp.level("Packet"), operand,
                                              time2, packet2)
            except VisaError as err:
                refusals.append(err)
        if len(refusals) == len(modes) and len({str(e) for e in refusals}) == 1:
            raise refusals[0]

    return _stream("AlignedTensor", SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), row, check=check)


def contract(inp: StageInputs) -> Result:
    """``contract(Packet[, ReduceOp])`` (L4310–4436): :func:`visa.engines.contraction.plan_contract`, whose output
    dtype (i32 or f32) is the result's; the Row is carried on (``ContractionTensor[..., Row]``); reduce-max is
    refused with a TRF operand of more than one Row (L4395, L4533)."""
    packet2 = inp.mapping(0)
    result = _stream("ContractionTensor", None, SAME, SAME, SAME, SAME, ArgMapping(0), SAME)

    def check() -> None:
        if packet2 is None or inp.dtype is None:
            return
        op = "Add"
        if inp.expr(1) is not None:
            try:
                op = getattr(inp.value(1), "name", op)
            except Unknown:
                op = "Add"  # not spelled as a constant: only the Add rules are checked
        result.args[0] = contraction_engine.plan_contract(inp.hw, inp.dtype, inp.level("Packet"), packet2, op,
                                                          _row(inp) if op == "Max" else None).out_dtype

    result.check = check
    return result


def _row(inp: StageInputs) -> Mapping | None:
    """The Row of the TRF operand this stream was aligned with: the receiver's ``Row`` type argument, else the
    TRF operand of the ``align`` the chain shows."""
    args = inp.recv_args()
    row: Mapping | None = mapping_of(args[6]) if len(args) > 6 else None
    if row is not None:
        return row
    for c in inp.calls():
        if isinstance(c.callee, MemberExpr) and c.callee.name == "align":
            arg = call_arg(c, 2, "trf")
            found = tensor_of(inp.expr_type(arg)) if arg is not None else None
            return found[1]["Row"] if found is not None else None
    return None


def accumulate(inp: StageInputs) -> Result:
    """``accumulate(Time, Packet, kind)`` (L4318–4548): :func:`visa.engines.contraction.plan_accumulate`, with
    the Row of the TRF operand the stream was aligned with (:func:`_row`)."""
    time2, packet2 = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        if time2 is None or packet2 is None or inp.dtype is None:
            return
        kind = inp.value(2)
        row = _row(inp)
        if row is None:
            return
        contraction_engine.plan_accumulate(inp.hw, inp.dtype, row, inp.level("Time"), inp.level("Packet"), time2,
                                           packet2, kind.name)

    return _stream("AccumulationTensor", SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), check=check)


def cast(inp: StageInputs) -> Result:
    """``cast(D2, Packet)`` (L6756–6819): :func:`visa.engines.cast.plan`."""
    d2, packet = inp.dtype_arg(0), inp.mapping(1)

    def check() -> None:
        cast_engine.check_context(inp.hw, inp.context)
        if d2 is None or packet is None or inp.dtype is None:
            return
        cast_engine.plan(inp.hw, inp.dtype, d2, inp.level("Packet"), packet, inp.level("Time"))

    return _stream("CastTensor", ArgDtype(0), SAME, SAME, SAME, SAME, ArgMapping(1), check=check)


def transpose(inp: StageInputs) -> Result:
    """``transpose(OutTime, OutPacket)`` (L6820–7041): :func:`visa.engines.transpose.plan`."""
    time, packet = inp.mapping(0), inp.mapping(1)

    def check() -> None:
        transpose_engine.check_context(inp.hw, inp.context)
        if time is None or packet is None or inp.dtype is None:
            return
        transpose_engine.plan(inp.hw, inp.dtype, inp.level("Time"), inp.level("Packet"), time, packet)

    return _stream("TransposeTensor", SAME, SAME, SAME, SAME, ArgMapping(0), ArgMapping(1), check=check)


def _lift(level: str) -> Callable[[StageInputs], Result]:
    def rule(inp: StageInputs) -> Result:
        """``fetch_{chip,cluster,slice}_lift(Placement2, Time2)`` (design API.md §8): :func:`visa.engines.lift.plan`
        on the types (the per-unit base alignment needs the sequencer: it is checked at run time)."""
        from visa.engines import lift as lift_engine

        placement2, time2 = inp.mapping(0), inp.mapping(1)

        def check() -> None:
            if placement2 is None or time2 is None:
                return
            others = frozenset().union(*(inp.level(n).axes for n in ("Chip", "Cluster", "Slice") if n != level))
            lift_engine.plan(inp.hw, level, inp.level(level), placement2, inp.level("Time"), time2,
                             inp.level("Packet"), others)

        args: list[Any] = [SAME, SAME, SAME, SAME, ArgMapping(1), SAME]
        args[{"Chip": 1, "Cluster": 2, "Slice": 3}[level]] = ArgMapping(0)
        return _stream("FetchTensor", *args, check=check)

    return rule


STAGES: dict[str, Callable[[StageInputs], Result]] = {
    "fetch_slice_lift": _lift("Slice"), "fetch_cluster_lift": _lift("Cluster"), "fetch_chip_lift": _lift("Chip"),
    "fetch": _fetch(""), "fetch_with_table": _fetch("table"), "fetch_with_zero_point": _fetch("zero_point"),
    "fetch_with_zero_points": _fetch("zero_points"),
    "collect": collect, "switch": switch, "commit": commit, "to_trf": to_trf, "to_vrf": to_vrf,
    "commit_view": commit_view, "align": align, "contract": contract, "accumulate": accumulate, "cast": cast,
    "transpose": transpose,
}
