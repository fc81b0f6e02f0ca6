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
from visa.engines.vector import fast_carry
from visa.engines.vector.cache import cached
from visa.engines.vector.ops import (
    BranchMode,
    GroupId,
    InputCmpF32,
    InputCmpI32,
    OperandRead,
    StashMarker,
    TernaryOperand,
    VeBranchOperand,
    VeRhs,
    is_vrf_tensor,
)
from visa.engines.vector.plan import dtype_name
from visa.engines.vector.relayout import joint_eval
from visa.errors import DtypeError, LayoutError, TypestateError, UnsupportedFeatureError
from visa.hw import HardwareProfile
from visa.memory.known import is_everywhere, known_and

__all__ = ["branch_ids", "plan_branch", "operand_list", "Resolved", "apply", "check_constant", "vrf_branch_ids",
           "check_branch_log_dtype", "carry_scan", "carry_fill", "plan_operand_read", "id_mask"]

Arr = npt.NDArray[Any]
ExecIds = npt.NDArray[np.uint8]


def plan_branch(hw: HardwareProfile, mode: Any, dtype: str) -> None:
    """``vector_intra_slice_branch(mode)``'s rules (L4793–4802) on a ``dtype`` (``"i32"``/``"f32"``) stream: a
    :class:`BranchMode`; ``Comparison`` takes 1..``branch_comparators`` comparisons of the stream's dtype;
    ``Vrf`` takes an i32 VRF tensor (the branch log, L4802); ``ValidCount`` takes nothing (its ids come from the
    stream's own validity, L4800).  Pure (the stream and the mypy plugin call it)."""
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
    if mode.name == "Vrf":
        ids = mode.ids
        if not is_vrf_tensor(ids):
            raise TypestateError(f"BranchMode.Vrf takes the VRF tensor that holds the ExecutionIds, got "
                                 f"{type(ids).__name__}", call=call, line=4802,
                                 fix="write the ids with .to_vrf(Element, address) (e.g. in ctx.sub) and pass it")
        check_branch_log_dtype(dtype_name(ids.dtype), call, ids.mapping("Element"))
        return
    if mode.name == "ValidCount":
        return
    raise UnsupportedFeatureError(f"BranchMode.{mode.name} is not a branch mode of the Branch stage (L4796–4802)",
                                  call=call, line=4796, fix="use Unconditional, AxisToggle, ValidCount, Comparison "
                                                            "or Vrf(ids)")


def check_branch_log_dtype(ids_dtype: str, call: str = "vector_intra_slice_branch", element: Any = None) -> None:
    """The branch log is an i32 VRF tensor (one ExecutionId per 32-bit element, L4795, L4802); ``element`` is its
    Element mapping (named in the refusal)."""
    if ids_dtype != "i32":
        raise DtypeError(f"BranchMode.Vrf reads ExecutionIds from an i32 VRF tensor, got {ids_dtype}", call=call,
                         level="Element", mapping=None if element is None else repr(element),
                         axis=None if element is None else ", ".join(sorted(element.axes)) or None, line=4802,
                         fix="load the ids as i32 (one id 0..15 per element)")


def vrf_branch_ids(hw: HardwareProfile, values: Arr, known: npt.NDArray[np.bool_], used: npt.NDArray[np.bool_],
                   call: str = "vector_intra_slice_branch", element: Any = None) -> ExecIds:
    """ExecutionIds read from the branch log (``BranchMode.Vrf``, L4802): the i32 value at each stream
    position; an id outside ``0 .. 2**execution_id_bits - 1`` at a position the stream holds is refused,
    naming the position and the value (the log is data: the check runs when the pass runs)."""
    top = (1 << hw.vector.execution_id_bits) - 1
    v = np.asarray(values, dtype=np.int64)
    bad = used & known & ((v < 0) | (v > top))
    if bad.any():
        where = tuple(int(k[0]) for k in np.nonzero(bad))
        raise LayoutError(f"the branch log holds {int(v[where])} at chip {where[0]}, cluster {where[1]}, slice "
                          f"{where[2]}, time {where[3]}, lane {where[4]}; an ExecutionId is 0..{top}", call=call,
                          level="Element", mapping=None if element is None else repr(element),
                          axis=None if element is None else ", ".join(sorted(element.axes)) or None, line=4795,
                          fix=f"write ids 0..{top} into the branch log")
    return np.where(used & known, v, 0).astype(np.uint8)


def branch_ids(hw: HardwareProfile, mode: BranchMode, layout: StreamLayout, values: Arr) -> ExecIds | None:
    """ExecutionIds of ``vector_intra_slice_branch(mode)``; ``None`` means every element has ExecutionId 0."""
    plan_branch(hw, mode, dtype_name(layout.dtype))
    group_bit = hw.vector.execution_id_bits - 1
    if mode.name == "AxisToggle":
        return _toggle_ids((layout.chip, layout.cluster, layout.slice, layout.time, layout.packet), mode.axis or "",
                           group_bit)
    if mode.name == "ValidCount":
        return _valid_count_ids((layout.chip, layout.cluster, layout.slice, layout.time, layout.packet), group_bit)
    if mode.name == "Comparison":
        ids = np.zeros(values.shape, dtype=np.uint8)
        for bit, c in enumerate(mode.comparisons):
            hit = _compare(c, values).view(np.uint8)  # (a bool is the byte 0 or 1)
            np.bitwise_or(ids, hit if bit == 0 else np.left_shift(hit, bit), out=ids)
        return ids
    return None


@cached(8)
def _toggle_ids(maps: tuple[Any, ...], axis: str, group_bit: int) -> ExecIds | None:
    """The AxisToggle ExecutionIds of a stream layout (its group bit the parity of ``axis``, L4798): data-independent,
    so computed once per layout (read-only)."""
    coords, _valid = joint_eval(maps)
    if axis not in coords:
        return None
    ids: ExecIds = ((coords[axis] % 2).astype(np.uint8) << group_bit).astype(np.uint8)
    ids.flags.writeable = False
    return ids


@cached(8)
def _valid_count_ids(maps: tuple[Any, ...], group_bit: int) -> ExecIds:
    """The ValidCount ExecutionIds of a stream layout (L4800): the Valid Count Generator counts each packet's valid
    lanes, so a lane holding an element is in group Zero (id 0) and a padding lane in group One (the group bit,
    L4795): valid lanes and padding fall in different groups (design API.md §8).  Data-independent (read-only)."""
    _coords, valid = joint_eval(maps)
    ids: ExecIds = ((~np.asarray(valid, dtype=bool)).astype(np.uint8) << group_bit).astype(np.uint8)
    ids.flags.writeable = False
    return ids


def _compare(c: InputCmpI32 | InputCmpF32, x: Arr) -> Arr:
    if c.name == "True":
        return np.ones(x.shape, dtype=bool)
    if c.name == "False":
        return np.zeros(x.shape, dtype=bool)
    if isinstance(c, InputCmpI32):
        if c.name in ("LessUnsigned", "GreaterUnsigned"):
            u = np.asarray(x, np.int32).view(np.uint32)
            b = np.uint32(int(c.boundary) & 0xFFFFFFFF)
            return np.asarray(u < b if c.name == "LessUnsigned" else u > b)
        bound = int(c.boundary)
        # on the i32 values themselves when the boundary is an i32 (no int64 copy of the stream)
        fits = -(2**31) <= bound < 2**31
        xi: Arr = np.asarray(x, np.int32) if fits else np.asarray(x, np.int64)
        b2: Any = np.int32(bound) if fits else bound
    else:
        xi = np.asarray(x, np.float32)
        b2 = np.float32(c.boundary)
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
    if any(isinstance(o.operand, OperandRead) for o in items):
        raise LayoutError("OperandRead selects its elements by ExecutionId itself; it is not a VeBranchOperand",
                          call=call, line=8716, fix="pass OperandRead(branch=...) as the op's only operand")
    if len(items) > hw.vector.branch_operands_max:
        raise LayoutError(f"{len(items)} branch operands, at most {hw.vector.branch_operands_max}", call=call,
                          line=5061, fix=f"give at most {hw.vector.branch_operands_max} VeBranchOperands")
    if sum(1 for o in items if o.group_id is None) > 1:
        raise LayoutError("Multiple ValidAlways operands are not allowed", call=call, line=5061,
                          fix="give one VeBranchOperand.always and group the others")
    return [(o.operand, o.group_id) for o in items]


@dataclass
class Resolved:
    """An operand read at every stream position: values (broadcastable) and which of them are known.

    ``split``, when not None, is the stream's shape with each axis split into digits (a strided view of the
    operand's source, :func:`visa.engines.vector.relayout.gather_view`): ``values`` and ``known`` broadcast to
    it, and :func:`apply` computes in that shape (the stream reshaped, no copy); :meth:`expand` gives the
    stream-shaped arrays."""

    values: Arr
    known: npt.NDArray[np.bool_] | bool
    split: tuple[int, ...] | None = None

    def expand(self, shape: tuple[int, ...]) -> Resolved:
        """This operand with ``values``/``known`` broadcastable to the stream ``shape`` (a copy when split)."""
        if self.split is None:
            return self
        k = self.known if isinstance(self.known, bool) else np.broadcast_to(self.known, self.split).reshape(shape)
        return Resolved(np.broadcast_to(self.values, self.split).reshape(shape), k)


def kind_of(operand: Any) -> str:
    """``"constant"``, ``"vrf"``, ``"stash"`` or ``"ternary"``."""
    if isinstance(operand, VeRhs):
        return operand.kind
    if isinstance(operand, StashMarker):
        return "stash"
    if is_vrf_tensor(operand):
        return "vrf"
    if isinstance(operand, (TernaryOperand, tuple)):
        return "ternary"
    if isinstance(operand, OperandRead):
        return "carried"
    return "constant"


def apply(fn: Callable[..., Arr], args_mode: tuple[int, ...], stream: Arr, stream_known: npt.NDArray[np.bool_],
          operands: Sequence[tuple[Sequence[Resolved], GroupId | None]], exec_id: ExecIds | None,
          group_bit: int) -> tuple[Arr, npt.NDArray[np.bool_]]:
    """``fn`` over the stream with per-group operands (first match wins; unmatched elements pass through).

    Each operand entry holds the resolved operand(s) for argument slots 1 (and 2); ``args_mode`` names, per
    argument, slot 0 (stream), 1 or 2.
    """
    def run(ops: Sequence[Resolved], split: tuple[int, ...] | None = None) -> tuple[Arr, npt.NDArray[np.bool_]]:
        shape = stream.shape if split is None else split
        x, xk = (stream, stream_known) if split is None else (stream.reshape(split), stream_known.reshape(split))
        slots: list[Arr] = [x, *(o.values for o in ops)]
        knowns: list[npt.NDArray[np.bool_] | bool] = [xk, *(o.known for o in ops)]
        args = [slots[a] for a in args_mode]
        # known where every argument read is known; no pass where they all are (known.py)
        k = known_and([knowns[a] for a in sorted(set(args_mode))], shape)
        out = np.asarray(fn(*args))
        return np.broadcast_to(out, shape), k

    shape = stream.shape
    if len(operands) == 1 and operands[0][1] is None:
        ops = operands[0][0]
        splits = {o.split for o in ops if o.split is not None}
        if len(splits) == 1:  # the stream in the operands' split shape: a view of it, no copy
            v, k = run(ops, splits.pop())
            v = np.ascontiguousarray(v, dtype=stream.dtype)
            return v.reshape(shape), k.reshape(shape)
        v, k = run([o.expand(shape) for o in ops])
        return np.ascontiguousarray(v, dtype=stream.dtype), k
    operands = [([o.expand(shape) for o in ops], gid) for ops, gid in operands]
    # the group bit of each element's ExecutionId (uint8 scalars: numpy's Python-int path is 10x slower); None: every
    # element is in group 0
    group = None if exec_id is None else np.right_shift(exec_id, np.uint8(group_bit)) & np.uint8(1)
    merged = _constant_groups(fn, args_mode, stream, stream_known, operands, group)
    if merged is not None:
        return merged
    result = stream.copy()
    known: npt.NDArray[np.bool_] | None = None  # (stream_known until a result that is not known everywhere)
    free: npt.NDArray[np.bool_] | None = None  # the elements no operand took yet (None: all of them)
    for ops, gid in operands:
        if gid is None:
            sel = free
        elif group is None:
            if gid.value != 0:
                continue
            sel = free
        else:
            hit = group == np.uint8(gid.value)
            sel = hit if free is None else hit & free
        if sel is not None and not sel.any():
            continue
        v, k = run(ops)
        if known is None and not (is_everywhere(k) and is_everywhere(stream_known)):
            known = np.array(stream_known, dtype=bool)
        np.copyto(result, v, where=True if sel is None else sel)
        if known is not None:
            np.copyto(known, k, where=True if sel is None else sel)
        if sel is None:
            break  # every element taken
        free = ~sel if free is None else free & ~sel
    return result, stream_known if known is None else known


def _constant_groups(fn: Callable[..., Arr], args_mode: tuple[int, ...], stream: Arr,
                     stream_known: npt.NDArray[np.bool_],
                     operands: Sequence[tuple[Sequence[Resolved], GroupId | None]],
                     group: npt.NDArray[np.uint8] | None) -> tuple[Arr, npt.NDArray[np.bool_]] | None:
    """:func:`apply` when every operand is a constant (known): each element's operands picked from a table by its
    group (first match wins), ``fn`` run once over the stream, the elements no operand matches passed through
    (``fn`` is elementwise, so this is the per-group computation of the general path in one pass).  None when
    an operand is not a constant."""
    if any(np.ndim(o.values) or o.known is not True for ops, _ in operands for o in ops):
        return None
    present = [0] if group is None else [g for g in (0, 1) if bool((group == np.uint8(g)).any())]
    chosen: dict[int, Sequence[Resolved]] = {}
    for g in present:  # the first operand entry whose group matches (an always entry matches both)
        for ops, gid in operands:
            if gid is None or gid.value == g:
                chosen[g] = ops
                break
    if not chosen:
        return stream.copy(), stream_known
    n_slots = max(len(ops) for ops in chosen.values())
    if any(len(ops) != n_slots for ops in chosen.values()):
        return None
    first = next(iter(chosen.values()))
    slots: list[Arr] = [stream]
    for j in range(n_slots):
        vals = {g: np.asarray(ops[j].values) for g, ops in chosen.items()}
        ref = np.asarray(first[j].values)
        same = all(v.dtype == ref.dtype and v.tobytes() == ref.tobytes() for v in vals.values())  # (bits: ±0, NaN)
        if same or group is None:
            slots.append(np.asarray(first[j].values))
        else:
            v0, v1 = (vals.get(g, np.asarray(first[j].values)) for g in (0, 1))
            slots.append(np.where(group.view(np.bool_), v1, v0))  # (the group bit is the byte 0 or 1)
    out = np.asarray(fn(*(slots[a] for a in args_mode)))
    unmatched = [g for g in present if g not in chosen]
    if unmatched:  # (group is not None here: with no ExecutionIds group 0 is present and chosen or nothing is)
        assert group is not None
        if (out.shape != stream.shape or out.dtype != stream.dtype or not out.flags.writeable
                or np.may_share_memory(out, stream)):
            out = np.array(np.broadcast_to(out, stream.shape), dtype=stream.dtype)
        np.copyto(out, stream, where=group == np.uint8(unmatched[0]))
    else:
        out = np.ascontiguousarray(np.broadcast_to(out, stream.shape), dtype=stream.dtype)
    return out, stream_known  # a constant is known: each result is known where the stream was


# ------------------------------------------------------------------------------------- carried operand


def plan_operand_read(written: str | None, dtype: str, context: str, call: str) -> None:
    """An ``OperandRead`` operand (L8708–8721): single-stream passes only, and, when the pass already wrote the
    operand register (``written`` is the dtype it holds), of that dtype.  Pure (the plugin calls it too)."""
    if context != "Standalone":
        raise TypestateError("OperandRead is unavailable in two-group mode", call=call, line=8716,
                             fix="carry the operand in a single-stream pass (no unzip)")
    if written is not None and written != dtype:
        raise DtypeError(f"the operand register holds {written}, but this operation works on {dtype}", call=call,
                         line=8716, fix=f"write the operand where the stream is {dtype}")


def _fold(a: Arr, fold: int) -> Arr:
    """``(C, K, S, T, P)`` seen as Way8 flits: after a split (``fold = 2``) two consecutive Way4 time steps are the
    halves of one Way8 flit (L4864)."""
    return a if fold == 1 else a.reshape(*a.shape[:3], a.shape[3] // fold, a.shape[4] * fold)


def _unfold(a: Arr, shape: tuple[int, ...]) -> Arr:
    return a.reshape(shape)


def id_mask(ids: ExecIds, keep: frozenset[int] | set[int]) -> npt.NDArray[np.bool_]:
    """Where the ExecutionId (4 bits, L4795) is one of ``keep``: a table lookup (``vector.id-mask-compare``: one
    comparison per id kept, when there are at most two — numpy's lookup converts a million ids to indices first)."""
    if fast_carry.ID_COMPARE.on and len(keep) <= 2 and isinstance(ids, np.ndarray) and ids.dtype == np.uint8:
        return fast_carry.id_mask(ids, keep)
    table = np.zeros(256, dtype=bool)
    table[sorted(keep)] = True
    out: npt.NDArray[np.bool_] = table[ids]
    return out


#: One elementwise step of a pass, at one time step: ``(values, known, t) -> (values, known)`` over the
#: ``(Chip, Cluster, Slice, Packet)`` slice of time step ``t``.
Step = Callable[[Arr, npt.NDArray[np.bool_], int], tuple[Arr, npt.NDArray[np.bool_]]]


def carry_scan(fn: Callable[..., Arr], args_mode: tuple[int, ...], stream: Arr, known: npt.NDArray[np.bool_],
               exec_id: ExecIds | None, read: frozenset[int], write: frozenset[int], fold: int = 1,
               after: Sequence[Step] = (), initial: tuple[Arr, npt.NDArray[np.bool_]] | None = None
               ) -> tuple[Arr, npt.NDArray[np.bool_]]:
    """An op whose operand is the carried register, the elementwise ``after`` steps of the chain, then
    ``WriteOperand(write)`` (L8708–8721).

    Per lane, time step by time step in order: an element whose ExecutionId is in ``read`` computes ``fn`` with
    the register as its operand (``args_mode`` places stream 0 and operand 1), the others pass through; the
    ``after`` steps follow; then an element whose id is in ``write`` stores the result in the register.  The
    register starts unwritten: a read of it gives an unknown (poison) result.  A lane is a lane of the Way8
    flit: after a split (``fold = 2``) time steps 2t and 2t + 1 are the two halves of one flit, and each half
    keeps its own registers (L4864).  ``initial`` is the register a previous pass left (``(Chip, Cluster, Slice,
    Way8 lane)`` values and known, :func:`final_register`): it survives from one pass to the next.
    """
    ids = np.zeros(stream.shape, np.uint8) if exec_id is None else exec_id
    # time-major copies, so that each step reads and writes contiguous slices
    r_mask = np.ascontiguousarray(np.moveaxis(id_mask(ids, read), 3, 0))
    w_mask = np.ascontiguousarray(np.moveaxis(id_mask(ids, write), 3, 0))
    xs = np.ascontiguousarray(np.moveaxis(stream, 3, 0))
    xks = np.ascontiguousarray(np.moveaxis(known, 3, 0))
    c, k, sl, steps, lanes = stream.shape
    reg = np.zeros((c, k, sl, lanes * fold), dtype=stream.dtype)
    reg_k = np.zeros((c, k, sl, lanes * fold), dtype=bool)
    if initial is not None:
        reg[...], reg_k[...] = initial
    out: Arr | None = None
    out_k = np.zeros(xks.shape, dtype=bool)
    arg_set = sorted(set(args_mode))
    for t in range(steps):
        half = slice((t % fold) * lanes, (t % fold + 1) * lanes)
        x, xk = xs[t], xks[t]
        r, rk = (reg, reg_k) if fold == 1 else (reg[..., half], reg_k[..., half])
        slots = (x, r)
        y = np.asarray(fn(*(slots[a] for a in args_mode)), dtype=stream.dtype)
        yk = xk & rk if arg_set == [0, 1] else (rk if arg_set == [1] else xk)
        rm = r_mask[t]
        res, res_k = np.where(rm, y, x), np.where(rm, yk, xk)
        for step in after:
            res, res_k = step(res, res_k, t)
        if out is None:
            out = np.zeros((steps, *res.shape), dtype=res.dtype)
        out[t] = res
        out_k[t] = res_k
        wm = w_mask[t]
        if fold == 1:
            np.copyto(reg, res, where=wm)
            np.copyto(reg_k, res_k, where=wm)
        else:
            reg[..., half] = np.where(wm, res, r)
            reg_k[..., half] = np.where(wm, res_k, rk)
    assert out is not None
    return np.ascontiguousarray(np.moveaxis(out, 0, 3)), np.ascontiguousarray(np.moveaxis(out_k, 0, 3))


def carry_fill(values: Arr, known: npt.NDArray[np.bool_], exec_id: ExecIds | None, write: frozenset[int],
               fold: int = 1, initial: tuple[Arr, npt.NDArray[np.bool_]] | None = None
               ) -> tuple[Arr, npt.NDArray[np.bool_]]:
    """The register each element sees after ``WriteOperand(write)`` ran at its own time step (a read later
    in the pipeline, L8708–8721): per lane, the last value written at this or an earlier step (before the first
    write, what a previous pass left, ``initial``, else unknown); lanes are Way8 lanes (``fold`` as in
    :func:`carry_scan`)."""
    shape = values.shape
    values, known = _fold(values, fold), _fold(known, fold)
    ids = np.zeros(values.shape, np.uint8) if exec_id is None else _fold(exec_id, fold)
    w = id_mask(ids, write)
    sparse = fast_carry.seen_sparse(values, known, w, initial) if fast_carry.CARRY_FILL.on else None
    if sparse is not None:
        return _unfold(sparse[0], shape), _unfold(sparse[1], shape)
    t = np.arange(values.shape[3]).reshape(1, 1, 1, -1, 1)
    last = np.where(w, t, -1)
    last = np.maximum.accumulate(last, axis=3)
    idx = np.maximum(last, 0)
    got = np.take_along_axis(values, idx, axis=3)
    got_k = np.take_along_axis(known, idx, axis=3) & (last >= 0)
    if initial is not None:
        before = last < 0
        got = np.where(before, initial[0][:, :, :, None, :], got)
        got_k = np.where(before, initial[1][:, :, :, None, :], got_k)
    return _unfold(got, shape), _unfold(got_k, shape)


def final_register(seen: Arr, seen_known: npt.NDArray[np.bool_], fold: int = 1
                   ) -> tuple[Arr, npt.NDArray[np.bool_]]:
    """The register each Way8 lane holds when the pass ends (``(Chip, Cluster, Slice, lane)``): what
    :func:`carry_fill` says the last time step sees.  It survives into the next pass of the context (issue 27)."""
    v, k = _fold(seen, fold), _fold(seen_known, fold)
    return np.ascontiguousarray(v[:, :, :, -1, :]), np.ascontiguousarray(k[:, :, :, -1, :])
