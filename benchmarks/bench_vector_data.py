"""Issue 13's data-dependent vector work over a full chip, against numpy doing the same (ratio, no assertion
on time): a cumsum with the carried operand (L8708–8721) and a filter with valid-count packing (L2324).

The stream is one chip: 2 clusters × 256 slices × 256 time steps × 8 lanes of i32 (2^20 elements).  The cumsum
runs over the 256 time steps of every lane, with the manual's static branch log (0, 1, …, 1, 2) in each
slice's VRF; the carried register makes the simulator step through time (a Python loop of 256 steps over
4096-lane slices), which numpy's ``cumsum`` does in one call.  The filter keeps the elements whose log id is
1, 3, 5 or 7 and packs them to the front of each packet (a stable sort per packet).
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import best_of, report
from visa import AxisSet, Context, i32
from visa.engines.common import StreamData, StreamLayout
from visa.engines.vector import BranchMode, FxpBinaryOp, OperandRead, ValidBranchIds, WriteOperand
from visa.stream.stages import CollectTensor
from visa.testing import hold, place_vrf

AX = AxisSet(C=2, S=256, T=256, L=8)
M = AX.m
LAYOUT = StreamLayout(i32, M["1"], M["C"], M["S"], M["T"], M["L"])
LEVELS = ("Chip", "Cluster", "Slice", "Time", "Packet")


def _cumsum(ctx: Context, values: np.ndarray, known: np.ndarray, log: object) -> np.ndarray:
    s = CollectTensor(ctx.main, LAYOUT, StreamData(values, known))
    out = (s.vector_init().vector_intra_slice_branch(BranchMode.Vrf(log))  # type: ignore[arg-type]
           .vector_fxp(FxpBinaryOp.AddFxp, OperandRead(1, 2)).vector_write_operand(WriteOperand(0, 1))
           .vector_final())
    result: np.ndarray = out.data.values
    return result


def _filter(ctx: Context, values: np.ndarray, known: np.ndarray, log: object) -> np.ndarray:
    s = CollectTensor(ctx.main, LAYOUT, StreamData(values, known))
    out = (s.vector_init().vector_intra_slice_branch(BranchMode.Vrf(log))  # type: ignore[arg-type]
           .vector_filter(ValidBranchIds.of(1, 3, 5, 7)).vector_final())
    result: np.ndarray = out.data.values
    return result


def _numpy_filter(x: np.ndarray, ids: np.ndarray) -> np.ndarray:
    kept = np.isin(ids, (1, 3, 5, 7))
    order = np.argsort(~kept, axis=-1, kind="stable")
    return np.take_along_axis(x, order, axis=-1), kept.sum(axis=-1)


def run() -> list[str]:
    ctx = Context.acquire()
    ctx.num_chips = 1
    rng = np.random.default_rng(0)
    x = rng.integers(-(2**20), 2**20, size=(2, 256, 256, 8)).astype(np.int32)
    values, known = hold(x, i32, [LAYOUT.level(n) for n in LEVELS], "C S T L")
    steps = np.ones(256, np.int32)
    steps[0], steps[-1] = 0, 2
    log = place_vrf(ctx, np.broadcast_to(steps, (2, 256, 256)), i32, M["1"], M["C"], M["S"], M["T"], 0,
                    axes="C S T")
    got = _cumsum(ctx, values, known, log)
    assert np.array_equal(got[0], np.cumsum(x.astype(np.int64), axis=2).astype(np.int32))
    ours = best_of(lambda: _cumsum(ctx, values, known, log), repeat=3)
    theirs = best_of(lambda: np.cumsum(x, axis=2), repeat=3)
    lines = [report("vector: cumsum, carried operand, 2^20 i32", ours, theirs, 50)]
    ids = rng.integers(0, 16, size=(2, 256, 256, 8)).astype(np.int32)
    ctx = Context.acquire()  # the log fills each slice's 8 KB VRF
    ctx.num_chips = 1
    flog = place_vrf(ctx, ids, i32, M["1"], M["C"], M["S"], M["T, L"], 0, axes="C S T L")
    got_f = _filter(ctx, values, known, flog)
    want, counts = _numpy_filter(x, ids)
    live = np.arange(8) < counts[..., None]
    assert np.array_equal(np.where(live, got_f[0], 0), np.where(live, want, 0))
    ours_f = best_of(lambda: _filter(ctx, values, known, flog), repeat=3)
    theirs_f = best_of(lambda: _numpy_filter(x, ids), repeat=3)
    lines.append(report("vector: filter + packing, 2^20 i32", ours_f, theirs_f, 10))
    return lines


if __name__ == "__main__":
    print("\n".join(run()))
