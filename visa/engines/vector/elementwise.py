"""Elementwise execution: ExecutionIds, operands, argument modes and branch-conditioned operands
(manual L4793–4802, L5052–5153).

* :func:`branch_ids` assigns each element its 4-bit ExecutionId; the group is bit 3 (L4795–4801).
* :func:`operand_list` normalises what a binary op was given (a constant, ``VeRhs``, a VRF tensor,
  ``Stash``, or ``VeBranchOperand``\\ s) into a list of (operand, group) pairs.
* :func:`apply` computes ``op`` over the stream: each element takes the **first** operand whose group
  matches its group bit (an ``always`` operand matches every element); an element no operand matches
  passes through unchanged (decision, docs/manual-notes.md).  The argument mode picks, per argument, the
  stream (0) or the operand (1 / 2).  A result is known only where every argument it read is known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.engines.common import StreamLayout
from visa.engines.vector.ops import (
    BranchMode,
    GroupId,
    InputCmpF32,
    InputCmpI32,
    StashMarker,
    TernaryOperand,
    VeBranchOperand,
    VeRhs,
)
from visa.engines.vector.plan import dtype_name
from visa.engines.vector.relayout import joint_eval
from visa.errors import DtypeError, LayoutError, TypestateError, UnsupportedFeatureError
from visa.hw import HardwareProfile

__all__ = ["branch_ids", "plan_branch", "operand_list", "Resolved", "apply", "check_constant"]

Arr = npt.NDArray[Any]
ExecIds = npt.NDArray[np.uint8]


def plan_branch(hw: HardwareProfile, mode: Any, dtype: str) -> None:
    """``vector_intra_slice_branch(mode)``'s rules (L4793–4802) on a ``dtype`` (``"i32"``/``"f32"``) stream: a
    :class:`BranchMode`; ``Comparison`` takes 1..``branch_comparators`` comparisons of the stream's dtype;
    ``ValidCount``/``Vrf`` have no ExecutionIds the manual defines.  Pure (the stream and the mypy plugin call it)."""
    call = "vector_intra_slice_branch"
    if not isinstance(mode, BranchMode):
        raise TypestateError(f"parameter mode of vector_intra_slice_branch takes a BranchMode, got {mode!r}", call=call,
                             fix="pass BranchMode.Unconditional, BranchMode.AxisToggle(axis) or BranchMode.Comparison")
    if mode.name in ("Unconditional", "AxisToggle"):
        return
    if mode.name == "Comparison":
        cmps = mode.comparisons
        if not 1 <= len(cmps) <= hw.vector.branch_comparators:
            raise LayoutError(f"BranchMode.Comparison takes up to {hw.vector.branch_comparators} comparisons, got "
                              f"{len(cmps)}", call=call, line=4801,
                              fix=f"give 1 to {hw.vector.branch_comparators} comparisons (one ExecutionId bit each)")
        for bit, c in enumerate(cmps):
            if c.DTYPE != dtype:
                raise DtypeError(f"Type mismatch: comparison {bit} is an InputCmp.{c.DTYPE.upper()} but the stream is "
                                 f"{dtype}", call=call, fix=f"use InputCmp.{dtype.upper()}")
            number = (int, np.integer) if dtype == "i32" else (int, float, np.integer, np.floating)
            if isinstance(c.boundary, bool) or not isinstance(c.boundary, number):
                raise DtypeError(f"comparison {bit} ({c.name}) of an {dtype} stream compares with "
                                 f"{'an integer' if dtype == 'i32' else 'a number'}, got {c.boundary!r}", call=call,
                                 line=4801, fix=f"pass {'an int' if dtype == 'i32' else 'a float'} boundary")
        return
    raise UnsupportedFeatureError(f"BranchMode.{mode.name}: the manual defines no ExecutionIds for it (the Valid "
                                  "Count Generator's tags feed the reducer, and the Branch Logger that would "
                                  "write VRF ids has no API)", call=call, line=4800,
                                  fix="use Unconditional, AxisToggle or Comparison")


def branch_ids(hw: HardwareProfile, mode: BranchMode, layout: StreamLayout, values: Arr) -> ExecIds | None:
    """ExecutionIds of ``vector_intra_slice_branch(mode)``; ``None`` means every element has ExecutionId 0."""
    plan_branch(hw, mode, dtype_name(layout.dtype))
    group_bit = hw.vector.execution_id_bits - 1
    if mode.name == "AxisToggle":
        axis = mode.axis or ""
        maps = (layout.chip, layout.cluster, layout.slice, layout.time, layout.packet)
        coords, _valid = joint_eval(maps)
        if axis not in coords:
            return None
        return ((coords[axis] % 2).astype(np.uint8) << group_bit).astype(np.uint8)
    if mode.name == "Comparison":
        ids = np.zeros(values.shape, dtype=np.uint8)
        for bit, c in enumerate(mode.comparisons):
            ids |= (_compare(c, values).astype(np.uint8) << bit).astype(np.uint8)
        return ids
    return None


def _compare(c: InputCmpI32 | InputCmpF32, x: Arr) -> Arr:
    if c.name == "True":
        return np.ones(x.shape, dtype=bool)
    if c.name == "False":
        return np.zeros(x.shape, dtype=bool)
    if isinstance(c, InputCmpI32):
        if c.name in ("LessUnsigned", "GreaterUnsigned"):
            u = np.asarray(x, np.int32).view(np.uint32).astype(np.int64)
            b = int(c.boundary) & 0xFFFFFFFF
            return u < b if c.name == "LessUnsigned" else u > b
        xi = np.asarray(x, np.int64)
        b2 = int(c.boundary)
    else:
        xi = np.asarray(x, np.float32)
        b2 = np.float32(c.boundary)  # type: ignore[assignment]
    with np.errstate(invalid="ignore"):
        if c.name == "Equal":
            return np.asarray(xi == b2)
        if c.name == "Less":
            return np.asarray(xi < b2)
        if c.name == "Greater":
            return np.asarray(xi > b2)
    raise KeyError(c.name)


# -------------------------------------------------------------------------------------------- operands


def check_constant(value: Any, dtype: str, call: str) -> Arr:
    """A constant operand as a 0-d array of the op's dtype: an i32 op takes an int in range, an f32 op a number."""
    if dtype == "i32":
        if isinstance(value, (bool, float)) or not isinstance(value, (int, np.integer)):
            raise DtypeError(f"an i32 operation takes an integer constant, got {value!r}", call=call,
                             fix="pass an int (or convert the stream with vector_fxp_to_fp)")
        if not -(2**31) <= int(value) < 2**31:
            raise DtypeError(f"constant {value} does not fit i32", call=call, fix="pass a value in -2**31 .. 2**31 - 1")
        return np.asarray(int(value), dtype=np.int32)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DtypeError(f"an f32 operation takes a number, got {value!r}", call=call, fix="pass a float")
    return np.asarray(value, dtype=np.float32)


def operand_list(hw: HardwareProfile, operand: Any, call: str) -> list[tuple[Any, GroupId | None]]:
    """The (operand, group) pairs of an operand argument (L5052–5062; at most 5, at most one ``always``)."""
    if isinstance(operand, VeBranchOperand):
        items: list[VeBranchOperand] = [operand]
    elif isinstance(operand, (list, tuple)) and operand and all(isinstance(o, VeBranchOperand) for o in operand):
        items = list(operand)
    else:
        return [(operand, None)]
    if len(items) > hw.vector.branch_operands_max:
        raise LayoutError(f"{len(items)} branch operands, at most {hw.vector.branch_operands_max}", call=call,
                          line=5061, fix=f"give at most {hw.vector.branch_operands_max} VeBranchOperands")
    if sum(1 for o in items if o.group_id is None) > 1:
        raise LayoutError("Multiple ValidAlways operands are not allowed", call=call, line=5061,
                          fix="give one VeBranchOperand.always and group the others")
    return [(o.operand, o.group_id) for o in items]


@dataclass
class Resolved:
    """An operand read at every stream position: values (broadcastable) and which of them are known."""

    values: Arr
    known: npt.NDArray[np.bool_] | bool


def kind_of(operand: Any) -> str:
    """``"constant"``, ``"vrf"``, ``"stash"`` or ``"ternary"``."""
    from visa.memory.tensors import VrfTensor

    if isinstance(operand, VeRhs):
        return operand.kind
    if isinstance(operand, StashMarker):
        return "stash"
    if isinstance(operand, VrfTensor):
        return "vrf"
    if isinstance(operand, (TernaryOperand, tuple)):
        return "ternary"
    return "constant"


def apply(fn: Callable[..., Arr], args_mode: tuple[int, ...], stream: Arr, stream_known: npt.NDArray[np.bool_],
          operands: Sequence[tuple[Sequence[Resolved], GroupId | None]], exec_id: ExecIds | None,
          group_bit: int) -> tuple[Arr, npt.NDArray[np.bool_]]:
    """``fn`` over the stream with per-group operands (first match wins; unmatched elements pass through).

    Each operand entry holds the resolved operand(s) for argument slots 1 (and 2); ``args_mode`` names, per
    argument, slot 0 (stream), 1 or 2.
    """
    def run(ops: Sequence[Resolved]) -> tuple[Arr, npt.NDArray[np.bool_]]:
        slots: list[Arr] = [stream, *(o.values for o in ops)]
        knowns: list[npt.NDArray[np.bool_] | bool] = [stream_known, *(o.known for o in ops)]
        args = [slots[a] for a in args_mode]
        k: npt.NDArray[np.bool_] | bool = True
        for a in sorted(set(args_mode)):
            k = k & knowns[a]
        out = np.asarray(fn(*args))
        return np.broadcast_to(out, stream.shape), np.broadcast_to(np.asarray(k, dtype=bool), stream.shape)

    if len(operands) == 1 and operands[0][1] is None:
        v, k = run(operands[0][0])
        return np.ascontiguousarray(v, dtype=stream.dtype), np.ascontiguousarray(k)
    result = stream.copy()
    known = stream_known.copy()
    group = np.zeros(stream.shape, dtype=np.uint8) if exec_id is None else (exec_id >> group_bit) & 1
    taken = np.zeros(stream.shape, dtype=bool)
    for ops, gid in operands:
        sel = ~taken if gid is None else (~taken & (group == gid.value))
        if not sel.any():
            continue
        v, k = run(ops)
        result[sel] = v[sel]
        known[sel] = k[sel]
        taken |= sel
    return result, known
