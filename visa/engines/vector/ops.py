"""The Vector Engine's vocabulary: operator enums, branch modes, operands and argument modes (manual L4793–5153).

Every name keeps the manual's spelling: ``FxpBinaryOp.AddFxp``, ``BranchMode.Unconditional``,
``FpBinaryOp.MulF(FpMulAlu.Mul0)``, ``VeBranchOperand.group(100, GroupId.Zero)``.  Each operator knows the ALU
it occupies (the stage tables at L4806–4971) and the dtype it works on; the arithmetic itself lives in
:mod:`visa.engines.vector.arith`.

>>> FxpBinaryOp.SubFxp.alu, FpBinaryOp.MulF(FpMulAlu.Mul1).alu, FpUnaryOp.Tanh.alu
('FxpAdd', 'FpMul1', 'FpFpu')
>>> BinaryArgMode.Mode10.args
(1, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from visa.errors import LayoutError
from visa.mapping import Mapping

__all__ = [
    "VeOp", "LogicBinaryOpI32", "LogicBinaryOpF32", "FxpBinaryOp", "FpMulAlu", "FpUnaryOp", "FpBinaryOp",
    "FpTernaryOp", "FpDivBinaryOp", "ClipBinaryOpI32", "ClipBinaryOpF32", "IntraSliceReduceOpI32",
    "IntraSliceReduceOpF32", "InterSliceReduceOpI32", "InterSliceReduceOpF32", "BranchMode", "InputCmp",
    "InputCmpI32", "InputCmpF32", "GroupId", "VeOrder", "UnaryArgMode", "BinaryArgMode", "TernaryArgMode",
    "StashMarker", "Stash", "VeRhs", "VeBranchOperand", "TernaryOperand", "ValidBranchIds", "Operand",
    "REDUCE_RESOURCE", "DIVIDE_RESOURCE", "axis_name", "VrfOperand", "is_vrf_tensor", "OperandRead",
    "WriteOperand",
]


class VrfOperand(Protocol):
    """A VRF tensor as the engine sees an operand (manual L4793–4802, L5058): any handle whose memory is
    ``"vrf"``.  The stream stages read its bytes; the engine only needs to know the operand's kind, so it
    names no tensor class (engines sit below the tensor handles)."""

    MEMORY: ClassVar[str]

    @property
    def dtype(self) -> Any:
        """The tensor's element type (a :mod:`visa.dtypes` class)."""
        ...

    def mapping(self, level: str) -> Mapping:
        """The mapping of one level (``"Element"``, ...)."""
        ...


def is_vrf_tensor(operand: object) -> bool:
    """Whether ``operand`` is a VRF tensor handle (its memory is ``"vrf"``)."""
    return getattr(type(operand), "MEMORY", None) == "vrf"

#: The single-use resource of the IntraSliceReduce stage (the accumulation tree, L4908, L5383–5388).
REDUCE_RESOURCE = "ReduceAccTree"
#: The single-use resource of the FpDiv stage (the dedicated divider, L4914–4918).
DIVIDE_RESOURCE = "ReduceFpDiv"


@dataclass(frozen=True)
class VeOp:
    """One operator of a Vector Engine stage: its name, the ALU it occupies, its dtype and arity (the stage
    tables, L4803–4972)."""

    name: str
    alu: str
    dtype: str = "i32"
    arity: int = 2
    FAMILY: ClassVar[str] = "VeOp"

    def __repr__(self) -> str:
        return f"{self.FAMILY}.{self.name}"

    @property
    def base(self) -> str:
        """The operator without its ALU argument (``MulF`` of ``MulF(FpMulAlu.Mul0)``; the name otherwise)."""
        return self.name.split("(")[0]


class LogicBinaryOpI32(VeOp):
    """``LogicBinaryOpI32`` (Logic cluster, i32, L4803–4815)."""

    FAMILY = "LogicBinaryOpI32"
    BitAnd: ClassVar[LogicBinaryOpI32]
    BitOr: ClassVar[LogicBinaryOpI32]
    BitXor: ClassVar[LogicBinaryOpI32]
    LeftShift: ClassVar[LogicBinaryOpI32]
    LogicRightShift: ClassVar[LogicBinaryOpI32]
    ArithRightShift: ClassVar[LogicBinaryOpI32]


class LogicBinaryOpF32(VeOp):
    """``LogicBinaryOpF32`` (Logic cluster on IEEE bit patterns, L4816–4820)."""

    FAMILY = "LogicBinaryOpF32"
    BitAnd: ClassVar[LogicBinaryOpF32]
    BitOr: ClassVar[LogicBinaryOpF32]
    BitXor: ClassVar[LogicBinaryOpF32]


class FxpBinaryOp(VeOp):
    """``FxpBinaryOp`` (Fxp cluster, i32 only, L4821–4836)."""

    FAMILY = "FxpBinaryOp"
    AddFxp: ClassVar[FxpBinaryOp]
    AddFxpSat: ClassVar[FxpBinaryOp]
    SubFxp: ClassVar[FxpBinaryOp]
    SubFxpSat: ClassVar[FxpBinaryOp]
    LeftShift: ClassVar[FxpBinaryOp]
    LeftShiftSat: ClassVar[FxpBinaryOp]
    MulFxp: ClassVar[FxpBinaryOp]
    MulInt: ClassVar[FxpBinaryOp]
    LogicRightShift: ClassVar[FxpBinaryOp]
    ArithRightShift: ClassVar[FxpBinaryOp]
    ArithRightShiftRound: ClassVar[FxpBinaryOp]


class FpMulAlu:
    """``FpMulAlu``: which float multiplier a ``MulF``/``MaskMulF`` occupies (L4890–4893)."""

    __slots__ = ("name", "alu")
    Mul0: ClassVar[FpMulAlu]
    Mul1: ClassVar[FpMulAlu]
    Fma: ClassVar[FpMulAlu]

    def __init__(self, name: str, alu: str) -> None:
        self.name = name
        self.alu = alu

    def __repr__(self) -> str:
        return f"FpMulAlu.{self.name}"


FpMulAlu.Mul0 = FpMulAlu("Mul0", "FpMul0")
FpMulAlu.Mul1 = FpMulAlu("Mul1", "FpMul1")
FpMulAlu.Fma = FpMulAlu("Fma", "FpFma")


class FpUnaryOp(VeOp):
    """``FpUnaryOp`` (Float cluster, f32, Way4, L4878–4888)."""

    FAMILY = "FpUnaryOp"
    Exp: ClassVar[FpUnaryOp]
    NegExp: ClassVar[FpUnaryOp]
    Sqrt: ClassVar[FpUnaryOp]
    Tanh: ClassVar[FpUnaryOp]
    Sigmoid: ClassVar[FpUnaryOp]
    Erf: ClassVar[FpUnaryOp]
    Log: ClassVar[FpUnaryOp]
    Sin: ClassVar[FpUnaryOp]
    Cos: ClassVar[FpUnaryOp]


class FpBinaryOp(VeOp):
    """``FpBinaryOp`` (Float cluster, f32, Way4, L4889–4897); ``MulF``/``MaskMulF`` take an :class:`FpMulAlu`."""

    FAMILY = "FpBinaryOp"
    AddF: ClassVar[FpBinaryOp]
    SubF: ClassVar[FpBinaryOp]
    DivF: ClassVar[FpBinaryOp]

    @staticmethod
    def MulF(alu: FpMulAlu) -> FpBinaryOp:  # noqa: N802 - the manual's spelling
        """``FpBinaryOp::MulF(FpMulAlu::Mul0 | Mul1)``: a·b on that multiplier (L4892–4893)."""
        return FpBinaryOp(f"MulF({alu!r})", alu.alu, "f32")

    @staticmethod
    def MaskMulF(alu: FpMulAlu) -> FpBinaryOp:  # noqa: N802
        """``FpBinaryOp::MaskMulF(..)``: zero-masking multiply (semantics decided in docs/manual-notes.md)."""
        return FpBinaryOp(f"MaskMulF({alu!r})", alu.alu, "f32")


class FpTernaryOp(VeOp):
    """``FpTernaryOp`` (Float cluster, L4898–4902): ``FmaF`` (fused a·b+c) and ``MaskFmaF``."""

    FAMILY = "FpTernaryOp"
    FmaF: ClassVar[FpTernaryOp]
    MaskFmaF: ClassVar[FpTernaryOp]


class FpDivBinaryOp(VeOp):
    """``FpDivBinaryOp`` (FpDiv stage, L4914–4918): only ``DivF``."""

    FAMILY = "FpDivBinaryOp"
    DivF: ClassVar[FpDivBinaryOp]


class ClipBinaryOpI32(VeOp):
    """``ClipBinaryOpI32`` (Clip cluster, L4953–4963)."""

    FAMILY = "ClipBinaryOpI32"
    Min: ClassVar[ClipBinaryOpI32]
    Max: ClassVar[ClipBinaryOpI32]
    AbsMin: ClassVar[ClipBinaryOpI32]
    AbsMax: ClassVar[ClipBinaryOpI32]
    AddFxp: ClassVar[ClipBinaryOpI32]
    AddFxpSat: ClassVar[ClipBinaryOpI32]


class ClipBinaryOpF32(VeOp):
    """``ClipBinaryOpF32`` (Clip cluster, L4964–4972)."""

    FAMILY = "ClipBinaryOpF32"
    Min: ClassVar[ClipBinaryOpF32]
    Max: ClassVar[ClipBinaryOpF32]
    AbsMin: ClassVar[ClipBinaryOpF32]
    AbsMax: ClassVar[ClipBinaryOpF32]
    Add: ClassVar[ClipBinaryOpF32]


class IntraSliceReduceOpI32(VeOp):
    """``IntraSliceReduceOpI32`` (L5390–5396): ``AddSat``, ``Max``, ``Min``."""

    FAMILY = "IntraSliceReduceOpI32"
    AddSat: ClassVar[IntraSliceReduceOpI32]
    Max: ClassVar[IntraSliceReduceOpI32]
    Min: ClassVar[IntraSliceReduceOpI32]


class IntraSliceReduceOpF32(VeOp):
    """``IntraSliceReduceOpF32`` (L5397–5402): ``Add``, ``Max``, ``Min``."""

    FAMILY = "IntraSliceReduceOpF32"
    Add: ClassVar[IntraSliceReduceOpF32]
    Max: ClassVar[IntraSliceReduceOpF32]
    Min: ClassVar[IntraSliceReduceOpF32]


class InterSliceReduceOpI32(VeOp):
    """``InterSliceReduceOpI32`` (L6611–6618): ``Add`` (wrapping), ``AddSat``, ``Max``, ``Min``."""

    FAMILY = "InterSliceReduceOpI32"
    Add: ClassVar[InterSliceReduceOpI32]
    AddSat: ClassVar[InterSliceReduceOpI32]
    Max: ClassVar[InterSliceReduceOpI32]
    Min: ClassVar[InterSliceReduceOpI32]


class InterSliceReduceOpF32(VeOp):
    """``InterSliceReduceOpF32`` (L6619–6625): ``Add``, ``Max``, ``Min``, ``Mul``."""

    FAMILY = "InterSliceReduceOpF32"
    Add: ClassVar[InterSliceReduceOpF32]
    Max: ClassVar[InterSliceReduceOpF32]
    Min: ClassVar[InterSliceReduceOpF32]
    Mul: ClassVar[InterSliceReduceOpF32]


def _fill(cls: type[VeOp], dtype: str, arity: int, table: dict[str, str]) -> None:
    for name, alu in table.items():
        setattr(cls, name, cls(name, alu, dtype, arity))


_fill(LogicBinaryOpI32, "i32", 2, {"BitAnd": "LogicAnd", "BitOr": "LogicOr", "BitXor": "LogicXor",
                                   "LeftShift": "LogicLshift", "LogicRightShift": "LogicRshift",
                                   "ArithRightShift": "LogicRshift"})
_fill(LogicBinaryOpF32, "f32", 2, {"BitAnd": "LogicAnd", "BitOr": "LogicOr", "BitXor": "LogicXor"})
_fill(FxpBinaryOp, "i32", 2, {"AddFxp": "FxpAdd", "AddFxpSat": "FxpAdd", "SubFxp": "FxpAdd",
                              "SubFxpSat": "FxpAdd", "LeftShift": "FxpLshift", "LeftShiftSat": "FxpLshift",
                              "MulFxp": "FxpMul", "MulInt": "FxpMul", "LogicRightShift": "FxpRshift",
                              "ArithRightShift": "FxpRshift", "ArithRightShiftRound": "FxpRshift"})
_fill(FpUnaryOp, "f32", 1, {"Exp": "FpExp", "NegExp": "FpExp", "Sqrt": "FpFpu", "Tanh": "FpFpu",
                            "Sigmoid": "FpFpu", "Erf": "FpFpu", "Log": "FpFpu", "Sin": "FpFpu", "Cos": "FpFpu"})
_fill(FpBinaryOp, "f32", 2, {"AddF": "FpFma", "SubF": "FpFma", "DivF": "FpFpu"})
_fill(FpTernaryOp, "f32", 3, {"FmaF": "FpFma", "MaskFmaF": "FpFma"})
_fill(FpDivBinaryOp, "f32", 2, {"DivF": DIVIDE_RESOURCE})
_fill(ClipBinaryOpI32, "i32", 2, {"Min": "ClipMin", "Max": "ClipMax", "AbsMin": "ClipMin", "AbsMax": "ClipMax",
                                  "AddFxp": "ClipAdd", "AddFxpSat": "ClipAdd"})
_fill(ClipBinaryOpF32, "f32", 2, {"Min": "ClipMin", "Max": "ClipMax", "AbsMin": "ClipMin", "AbsMax": "ClipMax",
                                  "Add": "ClipAdd"})
_fill(IntraSliceReduceOpI32, "i32", 2, {"AddSat": REDUCE_RESOURCE, "Max": REDUCE_RESOURCE, "Min": REDUCE_RESOURCE})
_fill(IntraSliceReduceOpF32, "f32", 2, {"Add": REDUCE_RESOURCE, "Max": REDUCE_RESOURCE, "Min": REDUCE_RESOURCE})
_fill(InterSliceReduceOpI32, "i32", 2, {"Add": "InterSlice", "AddSat": "InterSlice", "Max": "InterSlice",
                                        "Min": "InterSlice"})
_fill(InterSliceReduceOpF32, "f32", 2, {"Add": "InterSlice", "Max": "InterSlice", "Min": "InterSlice",
                                        "Mul": "InterSlice"})


# ----------------------------------------------------------------------------------------------- branches


@dataclass(frozen=True)
class InputCmpI32:
    """One comparison of ``BranchMode::Comparison`` on i32 data (L4801; operators as in the reference crate).

    ``LessUnsigned``/``GreaterUnsigned`` compare the raw bits as u32; ``True_``/``False_`` always/never hold
    (``True``/``False`` are Python keywords).
    """

    name: str
    boundary: int = 0
    DTYPE: ClassVar[str] = "i32"

    @classmethod
    def Equal(cls, boundary: int) -> InputCmpI32:  # noqa: N802
        """Holds where the element equals ``boundary`` (L4801)."""
        return cls("Equal", boundary)

    @classmethod
    def Less(cls, boundary: int) -> InputCmpI32:  # noqa: N802
        """Holds where the element is less than ``boundary`` (L4801)."""
        return cls("Less", boundary)

    @classmethod
    def Greater(cls, boundary: int) -> InputCmpI32:  # noqa: N802
        """Holds where the element is greater than ``boundary`` (L4801)."""
        return cls("Greater", boundary)

    @classmethod
    def LessUnsigned(cls, boundary: int) -> InputCmpI32:  # noqa: N802
        """Holds where the element's bits, read as u32, are less than ``boundary``'s (L4801)."""
        return cls("LessUnsigned", boundary)

    @classmethod
    def GreaterUnsigned(cls, boundary: int) -> InputCmpI32:  # noqa: N802
        """Holds where the element's bits, read as u32, are greater than ``boundary``'s (L4801)."""
        return cls("GreaterUnsigned", boundary)

    @classmethod
    def True_(cls) -> InputCmpI32:  # noqa: N802
        """Always holds (``InputCmp::True``, L4801)."""
        return cls("True")

    @classmethod
    def False_(cls) -> InputCmpI32:  # noqa: N802
        """Never holds (``InputCmp::False``, L4801)."""
        return cls("False")


@dataclass(frozen=True)
class InputCmpF32:
    """One comparison of ``BranchMode::Comparison`` on f32 data (manual L4793–4802; IEEE comparisons: NaN
    compares false)."""

    name: str
    boundary: float = 0.0
    DTYPE: ClassVar[str] = "f32"

    @classmethod
    def Equal(cls, boundary: float) -> InputCmpF32:  # noqa: N802
        """Holds where the element equals ``boundary`` (L4801)."""
        return cls("Equal", boundary)

    @classmethod
    def Less(cls, boundary: float) -> InputCmpF32:  # noqa: N802
        """Holds where the element is less than ``boundary`` (L4801)."""
        return cls("Less", boundary)

    @classmethod
    def Greater(cls, boundary: float) -> InputCmpF32:  # noqa: N802
        """Holds where the element is greater than ``boundary`` (L4801)."""
        return cls("Greater", boundary)

    @classmethod
    def True_(cls) -> InputCmpF32:  # noqa: N802
        """Always holds (``InputCmp::True``, L4801)."""
        return cls("True")

    @classmethod
    def False_(cls) -> InputCmpF32:  # noqa: N802
        """Never holds (``InputCmp::False``, L4801)."""
        return cls("False")


class InputCmp:
    """``InputCmp``: ``InputCmp.I32.Less(0)``, ``InputCmp.F32.Greater(0.5)`` (L4801)."""

    I32 = InputCmpI32
    F32 = InputCmpF32


@dataclass(frozen=True)
class BranchMode:
    """``BranchMode`` (L4793–4802): how the Branch stage assigns each element its 4-bit ExecutionId.

    ``Unconditional`` gives 0; ``AxisToggle(axis)`` gives group ``index % 2`` (the group is bit 3);
    ``Comparison([c0, c1, c2, c3])`` sets bit i when comparison i holds; ``Vrf(ids)`` reads each element's
    ExecutionId from the i32 VRF tensor ``ids`` (the branch log, L4802, L8090–8099); ``ValidCount`` (the Valid
    Count Generator, L4800) puts the lanes that hold an element in group Zero and the padding lanes in group One.
    """

    name: str
    axis: str | None = None
    comparisons: tuple[InputCmpI32 | InputCmpF32, ...] = ()
    ids: Any = field(default=None, compare=False)
    Unconditional: ClassVar[BranchMode]
    ValidCount: ClassVar[BranchMode]

    @classmethod
    def AxisToggle(cls, axis: Any) -> BranchMode:  # noqa: N802
        """``BranchMode::AxisToggle { axis }``: group = the element's index along ``axis`` mod 2 (L4799)."""
        return cls("AxisToggle", axis=axis_name(axis, "BranchMode.AxisToggle"))

    @classmethod
    def Comparison(cls, comparisons: Sequence[InputCmpI32 | InputCmpF32]) -> BranchMode:  # noqa: N802
        """``BranchMode::Comparison([InputCmp; 4])`` (L4801)."""
        return cls("Comparison", comparisons=tuple(comparisons))

    @classmethod
    def Vrf(cls, ids: VrfOperand | VeRhs) -> BranchMode:  # noqa: N802
        """``BranchMode::Vrf``: each element's ExecutionId is the value of the i32 VRF tensor ``ids`` at the
        element's index — the branch log, written by an earlier pass (e.g. in the sub context) (L4802,
        L8090–8099).  ``ids`` is read as a VRF operand is (same slice, axes it lacks broadcast); every id read
        must be 0..15 (L4795).  ``VeRhs.vrf(t)`` is accepted for ``t``."""
        if isinstance(ids, VeRhs) and ids.kind == "vrf":
            ids = ids.value
        return cls("Vrf", ids=ids)

    def __repr__(self) -> str:
        if self.name == "AxisToggle":
            return f"BranchMode.AxisToggle({self.axis})"
        if self.name == "Comparison":
            return f"BranchMode.Comparison({list(self.comparisons)})"
        if self.name == "Vrf":
            return "BranchMode.Vrf(ids)"
        return f"BranchMode.{self.name}"


BranchMode.Unconditional = BranchMode("Unconditional")
BranchMode.ValidCount = BranchMode("ValidCount")


def axis_name(axis: Any, call: str) -> str:
    """The axis ``call`` names (``AxisToggle``, the unzip's ``I``, the reduce's ``R``): a string such as ``"R"`` or
    a one-axis mapping ``m["R"]`` (the manual writes the axis as a type, L4799, L5156, L5278)."""
    if isinstance(axis, str):
        return axis
    if isinstance(axis, Mapping) and len(axis.axes) == 1:
        return next(iter(axis.axes))
    several = axis.axes if isinstance(axis, Mapping) else frozenset()
    raise LayoutError(f"an axis is named by a string or a one-axis mapping, got {axis!r}", call=call,
                      mapping=repr(axis) if isinstance(axis, Mapping) else None,
                      axis=", ".join(sorted(several)) or None, fix='name one axis: "R" or m["R"]')


class GroupId:
    """``GroupId``: bit 3 of the ExecutionId (``Zero`` or ``One``; manual L4795–4799)."""

    __slots__ = ("value",)
    Zero: ClassVar[GroupId]
    One: ClassVar[GroupId]

    def __init__(self, value: int) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "GroupId.Zero" if self.value == 0 else "GroupId.One"


GroupId.Zero = GroupId(0)
GroupId.One = GroupId(1)


class VeOrder:
    """``VeOrder``: ``IntraFirst`` (intra-slice, then optionally inter) or ``InterFirst`` (L4625–4630).

    The classes are also the type arguments of the vector stage types, so mypy sees the order.
    """

    IntraFirst: ClassVar[type[IntraFirst]]
    InterFirst: ClassVar[type[InterFirst]]


class IntraFirst:
    """Marker: this pass runs its intra-slice block first (L4627)."""


class InterFirst:
    """Marker: this pass ran its inter-slice block first (L4628)."""


VeOrder.IntraFirst = IntraFirst
VeOrder.InterFirst = InterFirst


# --------------------------------------------------------------------------------------- argument modes


class _Mode:
    __slots__ = ("name", "args")
    FAMILY: ClassVar[str] = ""

    def __init__(self, name: str, args: tuple[int, ...]) -> None:
        self.name = name
        self.args = args

    def __repr__(self) -> str:
        return f"{self.FAMILY}.{self.name}"


class UnaryArgMode(_Mode):
    """``UnaryArgMode`` (L5088–5093): ``Mode0`` op(stream); ``Mode1`` op(operand) (refused: no operand)."""

    FAMILY = "UnaryArgMode"
    Mode0: ClassVar[UnaryArgMode]
    Mode1: ClassVar[UnaryArgMode]


class BinaryArgMode(_Mode):
    """``BinaryArgMode`` (L5094–5101): which of stream (0) and operand (1) feed each argument."""

    FAMILY = "BinaryArgMode"
    Mode00: ClassVar[BinaryArgMode]
    Mode01: ClassVar[BinaryArgMode]
    Mode10: ClassVar[BinaryArgMode]
    Mode11: ClassVar[BinaryArgMode]


class TernaryArgMode(_Mode):
    """``TernaryArgMode`` (L5102–5112): 0 = stream, 1 = operand0, 2 = operand1."""

    FAMILY = "TernaryArgMode"
    Mode012: ClassVar[TernaryArgMode]
    Mode002: ClassVar[TernaryArgMode]
    Mode102: ClassVar[TernaryArgMode]
    Mode112: ClassVar[TernaryArgMode]
    Mode020: ClassVar[TernaryArgMode]
    Mode021: ClassVar[TernaryArgMode]
    Mode120: ClassVar[TernaryArgMode]


UnaryArgMode.Mode0 = UnaryArgMode("Mode0", (0,))
UnaryArgMode.Mode1 = UnaryArgMode("Mode1", (1,))
for _n in ("00", "01", "10", "11"):
    setattr(BinaryArgMode, f"Mode{_n}", BinaryArgMode(f"Mode{_n}", tuple(int(c) for c in _n)))
for _n in ("012", "002", "102", "112", "020", "021", "120"):
    setattr(TernaryArgMode, f"Mode{_n}", TernaryArgMode(f"Mode{_n}", tuple(int(c) for c in _n)))


# -------------------------------------------------------------------------------------------- operands


class StashMarker:
    """``Stash``: the operand that reads the value saved by ``vector_stash()`` (L4977–5051)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Stash"


#: The stash operand (``Stash`` in the manual).
Stash = StashMarker()


@dataclass(frozen=True)
class VeRhs:
    """``VeRhs``: an explicit operand, ``VeRhs.constant(v)``, ``VeRhs.vrf(tensor)`` or ``VeRhs.stash()`` (L5058)."""

    kind: str
    value: Any = None

    @classmethod
    def constant(cls, value: int | float) -> VeRhs:
        """A scalar broadcast to every element."""
        return cls("constant", value)

    @classmethod
    def vrf(cls, tensor: VrfOperand) -> VeRhs:
        """A VRF tensor, re-laid out to the stream's mapping (axes it lacks are broadcast)."""
        return cls("vrf", tensor)

    @classmethod
    def stash(cls) -> VeRhs:
        """The stash."""
        return cls("stash")


@dataclass(frozen=True)
class VeBranchOperand:
    """``VeBranchOperand`` (L5061–5062): an operand applied to every element (``always``) or to one group."""

    operand: Any
    group_id: GroupId | None = None

    @classmethod
    def always(cls, operand: Any) -> VeBranchOperand:
        """``VeBranchOperand::Always(operand)``: the operand of every element (at most one per op, L5061)."""
        return cls(operand, None)

    @classmethod
    def group(cls, operand: Any, group_id: GroupId) -> VeBranchOperand:
        """``VeBranchOperand::Group(operand, group_id)``: the operand of the elements of one group (L5061–5062)."""
        return cls(operand, group_id)


@dataclass(frozen=True)
class TernaryOperand:
    """``TernaryOperand``: operand0 (constant, VRF or stash) and operand1 (an f32 constant) of ``FmaF`` (L5059)."""

    operand0: Any
    operand1: float


@dataclass(frozen=True)
class ValidBranchIds:
    """The ExecutionIds ``vector_filter`` keeps (the reference crate's ``ValidBranchIds``; L4973)."""

    ids: frozenset[int] = field(default_factory=frozenset)

    @classmethod
    def of(cls, *ids: int) -> ValidBranchIds:
        """These ExecutionIds (0..15, L4795)."""
        return cls(frozenset(int(i) for i in ids))

    @classmethod
    def group(cls, group_id: GroupId) -> ValidBranchIds:
        """Every ExecutionId whose group bit (bit 3) is ``group_id``."""
        return cls(frozenset(i for i in range(16) if (i >> 3) == group_id.value))


def _branch_set(given: tuple[int, ...], branch: Any, what: str) -> frozenset[int]:
    """The ExecutionIds of ``what(*given)`` or ``what(branch=…)`` (0..15, L4795), given one way only."""
    if branch is not None and given:
        raise LayoutError("give the ExecutionIds once: positionally or as branch=", call=what,
                          fix=f"{what}(branch=(1, 2))")
    branch = branch if branch is not None else given
    ids = (branch,) if isinstance(branch, int) else tuple(branch)
    bad = [b for b in ids if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b <= 15]
    if bad or not ids:
        raise LayoutError(f"{what} takes ExecutionIds 0..15, got {branch!r}", call=what, line=4795,
                          fix=f"{what}(branch=(1, 2)): one or more ExecutionIds of 0..15")
    return frozenset(ids)


@dataclass(frozen=True)
class OperandRead:
    """``OperandRead(branch = …)``: the carried operand as the operand of a binary op (cumsum, L8708–8721).

    Elements whose ExecutionId is in ``branch`` take the operand register's value (per lane: each slice and
    packet lane has its own register, carried from one time step to the next); the other elements pass
    through unchanged.  The register holds what ``.vector_write_operand(WriteOperand(...))`` stored.
    """

    branch: frozenset[int]

    def __init__(self, *ids: int, branch: int | Sequence[int] | None = None) -> None:
        """``OperandRead(branch=(1, 2))`` or ``OperandRead(1, 2)``: the ExecutionIds (0..15) it applies to."""
        object.__setattr__(self, "branch", _branch_set(ids, branch, "OperandRead"))

    def __repr__(self) -> str:
        return f"OperandRead(branch={tuple(sorted(self.branch))})"


@dataclass(frozen=True)
class WriteOperand:
    """``WriteOperand(branch = …)``: store the stream's running value into the operand register of each lane,
    for the elements whose ExecutionId is in ``branch`` (L8708–8721); ``.vector_write_operand(...)``."""

    branch: frozenset[int]

    def __init__(self, *ids: int, branch: int | Sequence[int] | None = None) -> None:
        """``WriteOperand(branch=(1, 2))`` or ``WriteOperand(1, 2)``: the ExecutionIds (0..15) it applies to."""
        object.__setattr__(self, "branch", _branch_set(ids, branch, "WriteOperand"))

    def __repr__(self) -> str:
        return f"WriteOperand(branch={tuple(sorted(self.branch))})"


#: What a binary operation accepts as its operand.
Operand = int | float | VeRhs | StashMarker | VrfOperand | VeBranchOperand | Sequence[VeBranchOperand] | OperandRead
