"""Two-group mode: ``vector_intra_slice_unzip`` → per-group and common stages → a ``_zip`` op (manual L5154–5249).

``vector_intra_slice_unzip::<I, TileTime, SplitTime>()`` splits the stream on the 2-way axis ``I`` of its Time
(from ``begin_interleaved``): group g is the data at ``I = g`` and both groups continue with Time ``SplitTime``.
*Common* stages (``vector_fxp_to_fp``, ``vector_split``, ``vector_trim_way4``, ``vector_concat``,
``vector_pad_way8``, ``vector_fp_to_fxp``) apply to both groups; *per-group* ops take one operand per group
(``()`` skips a group); a ``_zip`` op computes ``op(group0, group1)`` (``BinaryArgMode``: 0 = group 0,
1 = group 1) and resumes the single-stream chain at that op's stage, in the ``Zipped`` context (no stash, no
filter).  An ALU used by either group is consumed for the pair (L5205).  There is no exit from a pair but a zip.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from visa import dtypes as dt
from visa.engines.common import EngineReport, StreamData, StreamLayout
from visa.engines.vector import arith
from visa.engines.vector import fast_shared_pair as fast_shared
from visa.engines.vector.ops import (
    BinaryArgMode,
    ClipBinaryOpF32,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpDivBinaryOp,
    FpTernaryOp,
    FpUnaryOp,
    FxpBinaryOp,
    IntraFirst,
    LogicBinaryOpF32,
    LogicBinaryOpI32,
    TernaryArgMode,
    VeOp,
    axis_name,
)
from visa.engines.vector.plan import (
    LaneConfig,
    check_kind,
    check_op,
    digit_maps,
    dtype_name,
    plan_concat,
    plan_entry,
    plan_int_width,
    plan_pad,
    plan_split,
    plan_transition,
    plan_trim,
    plan_unzip,
)
from visa.mapping import Mapping
from visa.memory.known import copy_known, is_everywhere, known_everywhere
from visa.stream.vector.base import Chip, Cluster, D, Packet, Slice, Time, VeBase, VeState, describe_operand, op_fn
from visa.stream.vector.single import (
    VectorClipTensor,
    VectorFpTensor,
    VectorFxpTensor,
    VectorLogicTensor,
    check_mode,
)

if TYPE_CHECKING:
    from visa.stream.stages import Carried
    from visa.tensors.device import TuHandle
    from visa.tensors.handles import DeviceTensor

__all__ = [
    "VectorTensorPair", "VectorPairLogicTensor", "VectorPairFxpTensor", "VectorPairFxpToFpTensor",
    "VectorPairNarrowTensor", "VectorPairFpTensor", "VectorPairFpDivTensor", "VectorPairWidenTensor",
    "VectorPairFpToFxpTensor", "VectorPairClipTensor", "unzip",
]

P = TypeVar("P", bound="PairBase[Any, Any, Any, Any, Any, Any]")
V = TypeVar("V", bound=VeBase[Any, Any, Any, Any, Any, Any, Any])


def _skip(operand: Any) -> bool:
    return operand is None or (isinstance(operand, tuple) and len(operand) == 0)


class PairBase(VeBase[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]):
    """Two streams in lock-step: ``data`` is group 0, ``g1`` group 1 (same layout; manual "Two-Group Mode",
    L5154–5249)."""

    __slots__ = ("g1",)
    STAGE = "VectorTensorPair"

    def __init__(self, tu: TuHandle, layout: StreamLayout, data: StreamData,
                 reports: tuple[EngineReport, ...] = (), inputs: tuple[DeviceTensor, ...] = (),
                 carried: Carried | None = None, *, ve: VeState | None = None,
                 g1: StreamData | None = None) -> None:
        super().__init__(tu, layout, data, reports, inputs, carried, ve=ve)
        self.g1 = g1 if g1 is not None else data

    def pair(self, cls: type[P], layout: StreamLayout, g0: StreamData, g1: StreamData, ve: VeState,
             inputs: tuple[DeviceTensor, ...] = ()) -> P:
        """The next pair stage of this pass (both groups keep one layout, L5164)."""
        g0.check(layout)
        g1.check(layout)
        return cls(self.tu, layout, g0, self.reports, self.inputs + inputs, self.carried, ve=ve, g1=g1)

    def groups(self) -> tuple[StreamData, StreamData]:
        """Group 0 (``I = 0``) and group 1 (``I = 1``) (L5156)."""
        return self.data, self.g1

    # -- common stages ---------------------------------------------------------------------------------
    def _relane(self, cls: type[P], stage: str, cfg: LaneConfig, text: str) -> P:
        """A Narrow or Widen step of both groups."""
        a, b = (StreamData(cfg.apply(g.values), cfg.apply(g.known)) for g in self.groups())
        ve = self.ve.step(stage, text, cfg.time.size)
        return self.pair(cls, self.layout.with_(time=cfg.time, packet=cfg.packet), a, b, ve)

    def _convert(self, cls: type[P], stage: str, call: str, int_width: int) -> P:
        """``vector_fxp_to_fp`` / ``vector_fp_to_fxp`` of both groups."""
        self.enter(call, stage)
        fn, dtype = arith.CONVERSIONS[stage]
        iw = plan_int_width(int_width, call)
        a, b = (StreamData(fn(g.values, iw), copy_known(g.known)) for g in self.groups())
        ve = self.ve.step(stage, f"{call.removeprefix('vector_')}({iw})", self.layout.time.size)
        return self.pair(cls, self.layout.with_(dtype=dt.scalar(dtype)), a, b, ve)

    # -- per-group ops ---------------------------------------------------------------------------------
    def _pergroup(self, cls: type[P], stage: str, op: VeOp, args: tuple[int, ...], operands: tuple[Any, Any],
                  call: str, ternary: bool = False) -> P:
        self.enter(call, stage)
        dtype = dtype_name(self.dtype)
        if ternary:
            check_kind(op, (FpTernaryOp,), call)
        else:
            check_op(stage, op, dtype, call)
        ve = self.ve.use(op.alu, call) if not all(_skip(o) for o in operands) else self.ve
        out: list[StreamData] = []
        inputs: tuple[DeviceTensor, ...] = ()
        for g, operand in zip(self.groups(), operands, strict=True):
            if _skip(operand):
                out.append(g)
                continue
            result, ve, ins = self.operate(op, args, operand, call, ve, g, None)
            out.append(result)
            inputs += ins
        text = f"{op!r}, g0: {describe_operand(operands[0])}, g1: {describe_operand(operands[1])}"
        ve = ve.step(stage, text, self.layout.time.size)
        return self.pair(cls, self.layout, out[0], out[1], ve, inputs)

    def _zip(self, cls: type[V], stage: str, op: VeOp, args: tuple[int, ...], call: str) -> V:
        self.enter(call, stage)
        dtype = dtype_name(self.dtype)
        check_op(stage, op, dtype, call)
        ve = self.ve.use(op.alu, call)
        g0, g1 = self.groups()
        mode = "" if args == (0, 1) else f", Mode{''.join(map(str, args))}"
        shared = fast_shared.zip_groups(g0, g1, op_fn(op), args)
        if shared is not None:  # (rows shared by slices: each distinct row once)
            ve = ve.step(stage, f"zip {op!r}{mode}", self.layout.time.size, context="Zipped", exec_id=None)
            return self.advance(cls, self.layout, shared, ve)
        slots = [g0.values, g1.values]
        knowns = [g0.known, g1.known]
        values = np.asarray(op_fn(op)(slots[args[0]], slots[args[1]]), dtype=g0.values.dtype)
        a, b = knowns[args[0]], knowns[args[1]]
        known = known_everywhere(np.broadcast_shapes(a.shape, b.shape)) if is_everywhere(a) and is_everywhere(b) \
            else a & b
        ve = ve.step(stage, f"zip {op!r}{mode}", self.layout.time.size, context="Zipped", exec_id=None)
        data = StreamData(np.ascontiguousarray(np.broadcast_to(values, self.layout.shape)), known)
        return self.advance(cls, self.layout, data, ve)


def unzip(self: VeBase[Any, Any, Any, Any, Any, Any, Any], axis: Any, tile_time: Mapping, split_time: Mapping
          ) -> VectorTensorPair[Any, Any, Any, Any, Any, Any]:
    """``vector_intra_slice_unzip::<I, TileTime, SplitTime>()`` (only from VectorInitTensor, L4748)."""
    call = "vector_intra_slice_unzip"
    self.take(call)
    plan_transition(self.hw, self.ve.stage, "Branch")
    plan_entry(self.hw, self.dtype, self.layout.packet, call)
    cfg = plan_unzip(self.hw, axis_name(axis, call), self.layout.time, self.layout.packet, tile_time, split_time)
    kept, removed = digit_maps(self.layout.time, cfg.flags)
    perm = np.zeros((2, split_time.size), dtype=np.int64)
    perm[removed, kept] = np.arange(self.layout.time.size, dtype=np.int64)
    layout = self.layout.with_(time=split_time)
    shared = fast_shared.unzip(self.data, _time_steps, perm)
    g0: StreamData
    g1: StreamData
    if shared is not None:  # (rows shared by slices stay shared)
        g0, g1 = shared
    else:
        g0 = StreamData(_time_steps(self.data.values, perm[0]), _time_steps(self.data.known, perm[0]))
        g1 = StreamData(_time_steps(self.data.values, perm[1]), _time_steps(self.data.known, perm[1]))
    ve = self.ve.step("Branch", f"unzip({cfg.axis})", split_time.size, context="Paired")
    out: VectorTensorPair[Any, Any, Any, Any, Any, Any] = VectorTensorPair(
        self.tu, layout, g0, self.reports, self.inputs, self.carried, ve=ve, g1=g1)
    return out


def _time_steps(arr: Any, steps: Any) -> Any:
    """``arr[:, :, :, steps]`` (Time is axis 3 of ``(Chip, Cluster, Slice, Time, Packet)``): a read-only strided
    view when ``steps`` are equally spaced (a group of an unzip, the I digit outside or inside the rest of Time),
    else a gather by index; an all-known broadcast stays one (:mod:`visa.memory.known`)."""
    if is_everywhere(arr):
        return known_everywhere((*arr.shape[:3], steps.size, *arr.shape[4:]))
    first, last = int(steps[0]), int(steps[-1])
    step = int(steps[1]) - first if steps.size > 1 else 1
    if step > 0 and last - first == step * (steps.size - 1) and bool((np.diff(steps) == step).all()):
        view = arr[:, :, :, first:last + 1:step]
        view.flags.writeable = False  # (the stream's own memory: read, never written through)
        return view
    return np.ascontiguousarray(arr[:, :, :, steps])


class _PLogic(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_logic(self, op: LogicBinaryOpI32 | LogicBinaryOpF32, g0: Any, g1: Any
                     ) -> VectorPairLogicTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group Logic op; ``()`` skips a group (L5164–5200)."""
        return self._pergroup(VectorPairLogicTensor, "Logic", op, (0, 1), (g0, g1), "vector_logic")

    def vector_logic_with_mode(self, op: LogicBinaryOpI32 | LogicBinaryOpF32, mode: BinaryArgMode, g0: Any, g1: Any
                               ) -> VectorPairLogicTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group Logic op with a mode (0 = the group's stream, 1 = its operand; L5107–5112)."""
        args = check_mode(mode, BinaryArgMode, "vector_logic_with_mode")
        return self._pergroup(VectorPairLogicTensor, "Logic", op, args, (g0, g1), "vector_logic_with_mode")

    def vector_logic_zip(self, op: LogicBinaryOpI32 | LogicBinaryOpF32
                         ) -> VectorLogicTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """``op(group0, group1)``; the single-stream chain resumes at Logic (Zipped)."""
        return self._zip(VectorLogicTensor, "Logic", op, (0, 1), "vector_logic_zip")

    def vector_logic_zip_with_mode(self, op: LogicBinaryOpI32 | LogicBinaryOpF32, mode: BinaryArgMode
                                   ) -> VectorLogicTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """Zip with a mode: 0 = group 0, 1 = group 1 (L5113–5119)."""
        args = check_mode(mode, BinaryArgMode, "vector_logic_zip_with_mode")
        return self._zip(VectorLogicTensor, "Logic", op, args, "vector_logic_zip_with_mode")


class _PFxp(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_fxp(self, op: FxpBinaryOp, g0: Any, g1: Any) -> VectorPairFxpTensor[D, Chip, Cluster, Slice, Time,
                                                                                   Packet]:
        """Per-group Fxp op: ``vector_fxp(FxpBinaryOp.MulInt, 10, ())`` scales group 0 only (L5184–5200)."""
        return self._pergroup(VectorPairFxpTensor, "Fxp", op, (0, 1), (g0, g1), "vector_fxp")

    def vector_fxp_with_mode(self, op: FxpBinaryOp, mode: BinaryArgMode, g0: Any, g1: Any
                             ) -> VectorPairFxpTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group Fxp op with a mode."""
        args = check_mode(mode, BinaryArgMode, "vector_fxp_with_mode")
        return self._pergroup(VectorPairFxpTensor, "Fxp", op, args, (g0, g1), "vector_fxp_with_mode")

    def vector_fxp_zip(self, op: FxpBinaryOp) -> VectorFxpTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """``op(group0, group1)`` on the Fxp cluster."""
        return self._zip(VectorFxpTensor, "Fxp", op, (0, 1), "vector_fxp_zip")

    def vector_fxp_zip_with_mode(self, op: FxpBinaryOp, mode: BinaryArgMode
                                 ) -> VectorFxpTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """Zip on the Fxp cluster with a mode."""
        args = check_mode(mode, BinaryArgMode, "vector_fxp_zip_with_mode")
        return self._zip(VectorFxpTensor, "Fxp", op, args, "vector_fxp_zip_with_mode")


class _PFxpToFp(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_fxp_to_fp(self, int_width: int) -> VectorPairFxpToFpTensor[dt.f32, Chip, Cluster, Slice, Time, Packet]:
        """Common stage: both groups i32 → f32 (L4837–4841, L5164)."""
        return self._convert(VectorPairFxpToFpTensor, "FxpToFp", "vector_fxp_to_fp", int_width)


class _PFpToFxp(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_fp_to_fxp(self, int_width: int) -> VectorPairFpToFxpTensor[dt.i32, Chip, Cluster, Slice, Time, Packet]:
        """Common stage: both groups f32 → i32 (L4948–4952, L5164)."""
        return self._convert(VectorPairFpToFxpTensor, "FpToFxp", "vector_fp_to_fxp", int_width)


class _PNarrow(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_split(self, time: Mapping, packet: Mapping) -> VectorPairNarrowTensor[D, Chip, Cluster, Slice, Any,
                                                                                     Any]:
        """Common stage: both groups split to Way4 (L4842–4864)."""
        self.enter("vector_split", "Narrow")
        cfg = plan_split(self.hw, self.layout.time, self.layout.packet, time, packet)
        return self._relane(VectorPairNarrowTensor, "Narrow", cfg, f"split({time!r}, {packet!r})")

    def vector_trim_way4(self, packet: Mapping) -> VectorPairNarrowTensor[D, Chip, Cluster, Slice, Time, Any]:
        """Common stage: both groups trimmed to Way4 (L4866–4871)."""
        self.enter("vector_trim_way4", "Narrow")
        cfg = plan_trim(self.hw, self.layout.time, self.layout.packet, packet)
        return self._relane(VectorPairNarrowTensor, "Narrow", cfg, f"trim_way4({packet!r})")


class _PWiden(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_concat(self, time: Mapping, packet: Mapping) -> VectorPairWidenTensor[D, Chip, Cluster, Slice, Any,
                                                                                     Any]:
        """Common stage: both groups concatenated back to Way8 (L4919–4939)."""
        self.enter("vector_concat", "Widen")
        cfg = plan_concat(self.hw, self.layout.time, self.layout.packet, time, packet)
        return self._relane(VectorPairWidenTensor, "Widen", cfg, f"concat({time!r}, {packet!r})")

    def vector_pad_way8(self, packet: Mapping) -> VectorPairWidenTensor[D, Chip, Cluster, Slice, Time, Any]:
        """Common stage: both groups padded back to Way8 (L4940–4947)."""
        self.enter("vector_pad_way8", "Widen")
        cfg = plan_pad(self.hw, self.layout.time, self.layout.packet, packet)
        return self._relane(VectorPairWidenTensor, "Widen", cfg, f"pad_way8({packet!r})")


class _PFp(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_fp_unary(self, op: FpUnaryOp, g0: bool, g1: bool
                        ) -> VectorPairFpTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group unary: ``vector_fp_unary(FpUnaryOp.Exp, True, False)`` applies exp to group 0 (L5237–5246)."""
        call = "vector_fp_unary"
        self.enter(call, "Fp")
        check_kind(op, (FpUnaryOp,), call)
        ve = self.ve.use(op.alu, call) if (g0 or g1) else self.ve
        out: list[StreamData] = [StreamData(arith.fp_unary(op.name, g.values), copy_known(g.known)) if on else g
               for g, on in zip(self.groups(), (g0, g1), strict=True)]
        ve = ve.step("Fp", f"{op!r}, g0: {g0}, g1: {g1}", self.layout.time.size)
        return self.pair(VectorPairFpTensor, self.layout, out[0], out[1], ve)

    def vector_fp_binary(self, op: FpBinaryOp, g0: Any, g1: Any
                         ) -> VectorPairFpTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group float binary op."""
        return self._pergroup(VectorPairFpTensor, "Fp", op, (0, 1), (g0, g1), "vector_fp_binary")

    def vector_fp_binary_with_mode(self, op: FpBinaryOp, mode: BinaryArgMode, g0: Any, g1: Any
                                   ) -> VectorPairFpTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group float binary op with a mode."""
        args = check_mode(mode, BinaryArgMode, "vector_fp_binary_with_mode")
        return self._pergroup(VectorPairFpTensor, "Fp", op, args, (g0, g1), "vector_fp_binary_with_mode")

    def vector_fp_ternary(self, op: FpTernaryOp, g0: Any, g1: Any
                          ) -> VectorPairFpTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group ternary: ``vector_fp_ternary(FpTernaryOp.FmaF, (a, b), ())`` (L5164)."""
        return self._pergroup(VectorPairFpTensor, "Fp", op, (0, 1, 2), (g0, g1), "vector_fp_ternary", ternary=True)

    def vector_fp_ternary_with_mode(self, op: FpTernaryOp, mode: TernaryArgMode, g0: Any, g1: Any
                                    ) -> VectorPairFpTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group ternary with a mode."""
        args = check_mode(mode, TernaryArgMode, "vector_fp_ternary_with_mode")
        return self._pergroup(VectorPairFpTensor, "Fp", op, args, (g0, g1), "vector_fp_ternary_with_mode",
                              ternary=True)

    def vector_fp_zip(self, op: FpBinaryOp) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """``op(group0, group1)`` on the Float cluster, Way4 (L5207–5228)."""
        return self._zip(VectorFpTensor, "Fp", op, (0, 1), "vector_fp_zip")

    def vector_fp_zip_with_mode(self, op: FpBinaryOp, mode: BinaryArgMode
                                ) -> VectorFpTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """Float zip with a mode: ``Mode10`` computes ``op(group1, group0)`` (L5136–5152)."""
        args = check_mode(mode, BinaryArgMode, "vector_fp_zip_with_mode")
        return self._zip(VectorFpTensor, "Fp", op, args, "vector_fp_zip_with_mode")


class _PFpDiv(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_fp_div(self, op: FpDivBinaryOp, g0: Any, g1: Any
                      ) -> VectorPairFpDivTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group division on the FpDiv stage (L5164)."""
        return self._pergroup(VectorPairFpDivTensor, "FpDiv", op, (0, 1), (g0, g1), "vector_fp_div")

    def vector_fp_div_with_mode(self, op: FpDivBinaryOp, mode: BinaryArgMode, g0: Any, g1: Any
                                ) -> VectorPairFpDivTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group division with a mode."""
        args = check_mode(mode, BinaryArgMode, "vector_fp_div_with_mode")
        return self._pergroup(VectorPairFpDivTensor, "FpDiv", op, args, (g0, g1), "vector_fp_div_with_mode")


class _PClip(PairBase[D, Chip, Cluster, Slice, Time, Packet]):
    __slots__ = ()

    def vector_clip(self, op: ClipBinaryOpI32 | ClipBinaryOpF32, g0: Any, g1: Any
                    ) -> VectorPairClipTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group Clip op."""
        return self._pergroup(VectorPairClipTensor, "Clip", op, (0, 1), (g0, g1), "vector_clip")

    def vector_clip_with_mode(self, op: ClipBinaryOpI32 | ClipBinaryOpF32, mode: BinaryArgMode, g0: Any, g1: Any
                              ) -> VectorPairClipTensor[D, Chip, Cluster, Slice, Time, Packet]:
        """Per-group Clip op with a mode."""
        args = check_mode(mode, BinaryArgMode, "vector_clip_with_mode")
        return self._pergroup(VectorPairClipTensor, "Clip", op, args, (g0, g1), "vector_clip_with_mode")

    def vector_clip_zip(self, op: ClipBinaryOpI32 | ClipBinaryOpF32
                        ) -> VectorClipTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """``op(group0, group1)`` on the Clip cluster: ``vector_clip_zip(ClipBinaryOpI32.AddFxp)`` (L5168–5182)."""
        return self._zip(VectorClipTensor, "Clip", op, (0, 1), "vector_clip_zip")

    def vector_clip_zip_with_mode(self, op: ClipBinaryOpI32 | ClipBinaryOpF32, mode: BinaryArgMode
                                  ) -> VectorClipTensor[D, Chip, Cluster, Slice, Time, Packet, IntraFirst]:
        """Clip zip with a mode."""
        args = check_mode(mode, BinaryArgMode, "vector_clip_zip_with_mode")
        return self._zip(VectorClipTensor, "Clip", op, args, "vector_clip_zip_with_mode")


class VectorTensorPair(_PLogic[D, Chip, Cluster, Slice, Time, Packet],
                       _PFxp[D, Chip, Cluster, Slice, Time, Packet],
                       _PFxpToFp[D, Chip, Cluster, Slice, Time, Packet],
                       _PNarrow[D, Chip, Cluster, Slice, Time, Packet],
                       _PFpToFxp[D, Chip, Cluster, Slice, Time, Packet],
                       _PClip[D, Chip, Cluster, Slice, Time, Packet]):
    """``VectorTensorPair<…, stage::Branch, …>``: two groups after ``vector_intra_slice_unzip``
    (Way8; manual "Two-Group Mode", L4571–4588)."""

    __slots__ = ()
    STAGE = "VectorTensorPair"


class VectorPairLogicTensor(_PLogic[D, Chip, Cluster, Slice, Time, Packet],
                            _PFxp[D, Chip, Cluster, Slice, Time, Packet],
                            _PFxpToFp[D, Chip, Cluster, Slice, Time, Packet],
                            _PNarrow[D, Chip, Cluster, Slice, Time, Packet],
                            _PFpToFxp[D, Chip, Cluster, Slice, Time, Packet],
                            _PClip[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after a per-group Logic op (Way8; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (Logic)"


class VectorPairFxpTensor(_PFxp[D, Chip, Cluster, Slice, Time, Packet],
                          _PFxpToFp[D, Chip, Cluster, Slice, Time, Packet],
                          _PNarrow[D, Chip, Cluster, Slice, Time, Packet],
                          _PFpToFxp[D, Chip, Cluster, Slice, Time, Packet],
                          _PClip[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after a per-group Fxp op (Way8; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (Fxp)"


class VectorPairFxpToFpTensor(_PNarrow[D, Chip, Cluster, Slice, Time, Packet],
                              _PFpToFxp[D, Chip, Cluster, Slice, Time, Packet],
                              _PClip[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after ``vector_fxp_to_fp`` (f32, Way8; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (FxpToFp)"


class VectorPairNarrowTensor(_PFp[D, Chip, Cluster, Slice, Time, Packet],
                             _PFpDiv[D, Chip, Cluster, Slice, Time, Packet],
                             _PWiden[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after the Narrow step (Way4; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (Narrow)"


class VectorPairFpTensor(_PFp[D, Chip, Cluster, Slice, Time, Packet],
                         _PFpDiv[D, Chip, Cluster, Slice, Time, Packet],
                         _PWiden[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after a per-group Float op (Way4; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (Fp)"


class VectorPairFpDivTensor(_PWiden[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after a per-group division (Way4; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (FpDiv)"


class VectorPairWidenTensor(_PFpToFxp[D, Chip, Cluster, Slice, Time, Packet],
                            _PClip[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after the Widen step (Way8; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (Widen)"


class VectorPairFpToFxpTensor(_PClip[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after ``vector_fp_to_fxp`` (i32, Way8; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (FpToFxp)"


class VectorPairClipTensor(_PClip[D, Chip, Cluster, Slice, Time, Packet]):
    """A pair after a per-group Clip op (Way8; L5164)."""

    __slots__ = ()
    STAGE = "VectorTensorPair (Clip)"
