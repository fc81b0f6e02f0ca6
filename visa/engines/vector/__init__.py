"""The Vector Engine (manual "Vector Engine", L4549–6755): elementwise work, intra- and inter-slice reduction.

A package: ``ops`` (the manual's enums and operands), ``arith`` (exact arithmetic), ``plan`` (stage order,
lanes, dtypes, ALUs, Narrow/Widen, unzip), ``elementwise`` (ExecutionIds, operands, argument modes),
``relayout`` (VRF and stash reads), ``intra`` (intra-slice reducer), ``vcg`` (Valid Count Generator), ``inter``
(inter-slice reducer), ``cost``.  The stream classes that users chain are in :mod:`visa.stream.vector`.

>>> from visa.engines.vector import BranchMode, FxpBinaryOp
>>> FxpBinaryOp.AddFxp.alu
'FxpAdd'
"""

from visa.engines.vector.ops import (
    DIVIDE_RESOURCE,
    REDUCE_RESOURCE,
    BinaryArgMode,
    BranchMode,
    ClipBinaryOpF32,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpDivBinaryOp,
    FpMulAlu,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    GroupId,
    InputCmp,
    InputCmpF32,
    InputCmpI32,
    InterFirst,
    InterSliceReduceOpF32,
    InterSliceReduceOpI32,
    IntraFirst,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    OperandRead,
    Stash,
    StashMarker,
    TernaryArgMode,
    TernaryOperand,
    UnaryArgMode,
    ValidBranchIds,
    VeBranchOperand,
    VeOp,
    VeOrder,
    VeRhs,
    WriteOperand,
)

__all__ = [
    "BinaryArgMode", "BranchMode", "ClipBinaryOpF32", "ClipBinaryOpI32", "FpBinaryOp", "FpDivBinaryOp", "FpMulAlu",
    "FpTernaryOp", "FpUnaryOp", "FxpBinaryOp", "GroupId", "InputCmp", "InputCmpF32", "InputCmpI32", "InterFirst",
    "InterSliceReduceOpF32", "InterSliceReduceOpI32", "IntraFirst", "IntraSliceReduceOpF32", "IntraSliceReduceOpI32",
    "LogicBinaryOpF32", "LogicBinaryOpI32", "Stash", "StashMarker", "TernaryArgMode", "TernaryOperand",
    "UnaryArgMode", "ValidBranchIds", "VeBranchOperand", "VeOp", "VeOrder", "VeRhs", "REDUCE_RESOURCE",
    "DIVIDE_RESOURCE", "OperandRead", "WriteOperand",
]
