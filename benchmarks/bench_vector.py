"""A 16-operation Vector Engine chain over a full chip's flits, against numpy doing the same arithmetic (issue 6).

The stream is one chip: 2 clusters × 256 slices × 256 flits × 8 lanes of i32 (2^20 elements).  The chain uses
16 ALU operations, each ALU once (L4750): three Logic, four Fxp, the conversion to f32, a split to Way4, four
Float, a concat back to Way8, the conversion back to i32, and three Clip.  numpy computes the same exact
arithmetic (wrapping and saturating i32, binary32 floats, round-half-away conversion) on a flat array; the
results are checked equal before timing.
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import best_of, report
from visa import AxisSet, Context, i32
from visa.engines.common import StreamData, StreamLayout
from visa.engines.vector import (
    BranchMode,
    ClipBinaryOpI32,
    FpBinaryOp,
    FpMulAlu,
    FxpBinaryOp,
    LogicBinaryOpI32,
)
from visa.stream.stages import CollectTensor
from visa.testing import hold

AX = AxisSet(C=2, S=256, T=256, L=8)
M = AX.m
LAYOUT = StreamLayout(i32, M["1"], M["C"], M["S"], M["T"], M["L"])
I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def data() -> np.ndarray:
    return np.random.default_rng(0).integers(I32_MIN, I32_MAX, size=(2, 256, 256, 8), endpoint=True).astype(np.int32)


def visa_chain(ctx: Context, values: np.ndarray, known: np.ndarray) -> np.ndarray:
    s = CollectTensor(ctx.main, LAYOUT, StreamData(values, known))
    out = (s.vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_logic(LogicBinaryOpI32.BitAnd, 0x7FFFFFFF)
           .vector_logic(LogicBinaryOpI32.BitXor, 0x5555)
           .vector_logic(LogicBinaryOpI32.LogicRightShift, 3)
           .vector_fxp(FxpBinaryOp.AddFxp, 12345)
           .vector_fxp(FxpBinaryOp.MulInt, 3)
           .vector_fxp(FxpBinaryOp.ArithRightShift, 2)
           .vector_fxp(FxpBinaryOp.LeftShiftSat, 1)
           .vector_fxp_to_fp(31)
           .vector_split(M["T, L / 4"], M["L % 4"])
           .vector_fp_binary(FpBinaryOp.AddF, 1.0)
           .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul0), 0.5)
           .vector_fp_binary(FpBinaryOp.MulF(FpMulAlu.Mul1), 2.0)
           .vector_fp_binary(FpBinaryOp.DivF, 3.0)
           .vector_concat(M["T"], M["L"])
           .vector_fp_to_fxp(31)
           .vector_clip(ClipBinaryOpI32.Max, 0)
           .vector_clip(ClipBinaryOpI32.Min, 1_000_000)
           .vector_clip(ClipBinaryOpI32.AddFxpSat, 7)
           .vector_final())
    result: np.ndarray = out.data.values
    return result


def numpy_chain(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.int64)
    v = v & 0x7FFFFFFF
    v = v ^ 0x5555
    v = (v & 0xFFFFFFFF) >> 3
    v = (v + 12345).astype(np.int32).astype(np.int64)
    v = (v * 3).astype(np.int32).astype(np.int64)
    v = v >> 2
    v = np.clip(v << 1, I32_MIN, I32_MAX)
    f = v.astype(np.int32).astype(np.float32)
    f = f + np.float32(1.0)
    f = f * np.float32(0.5)
    f = f * np.float32(2.0)
    f = f / np.float32(3.0)
    d = f.astype(np.float64)
    r = np.trunc(d)
    r = r + np.where(np.abs(d - r) >= 0.5, np.sign(d), 0.0)
    i = np.clip(r, I32_MIN, I32_MAX).astype(np.int64)
    i = np.maximum(i, 0)
    i = np.minimum(i, 1_000_000)
    return np.clip(i + 7, I32_MIN, I32_MAX).astype(np.int32)


def run() -> list[str]:
    ctx = Context.acquire()
    x = data()
    values, known = hold(x, i32, [LAYOUT.level(n) for n in ("Chip", "Cluster", "Slice", "Time", "Packet")],
                         "C S T L")
    got = visa_chain(ctx, values, known)
    assert np.array_equal(got.reshape(-1), numpy_chain(x).reshape(-1))
    ours = best_of(lambda: visa_chain(ctx, values, known), repeat=5)
    theirs = best_of(lambda: numpy_chain(x), repeat=5)
    return [report("vector: 16-op chain, 2^20 i32 elements (1 chip)", ours, theirs, 5)]


if __name__ == "__main__":
    print("\n".join(run()))
