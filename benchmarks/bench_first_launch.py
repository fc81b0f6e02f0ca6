"""First launches of kernels the suite has not seen, each in a fresh process (issue 15: "the speed will also be
measured on held-out kernels the suite has not seen"; a kernel writer runs a new kernel once).

A first launch plans every engine (sequencers, DMA plans and costs, the Vector Engine's gathers, the commit's
address checks) before it moves a byte; a repeat finds the plans cached.  Each kernel below runs in a fresh
Python process (``python -m benchmarks.bench_first_launch KERNEL``: nothing planned, nothing imported lazily
yet), once, and the time of that one ``launch`` is set against numpy doing the same mathematics (best of 5) in
the same process.  Every result is checked exactly against numpy.

- **ReLU over 4M f32** (16 MiB, 512 slices): ``vector_clip(Max, 0.0)`` against ``np.maximum(x, 0)``.
- **Row max of 512 × 4096 i32** (8 MiB, a row per slice): the intra-slice reducer against ``x.max(axis=1)``.
- **Row bias, 512 × 4096 i32** (8 MiB): ``x - b[row]`` with ``b`` in the VRF, broadcast over the row (the Vector
  Engine's gather from the VRF), against numpy's wrapping ``x - b[:, None]``.
- **Ring sum of 4 × 262144 i32** (4 MiB): the four rows sit in four neighbouring slices and the inter-slice
  reducer adds them over the slice ring (``AddSat``; the values are small, so nothing saturates), against
  numpy's ``x.sum(axis=0)``.

What is timed: the one ``launch(kernel, ctx, x_hbm)`` call — every plan (sequencers, DMA plans and their cost
model, the Vector Engine's and the commit's plans), the HBM → DM move, the engines, the DM → HBM move of the
result and the schedule's recording — in a process that has imported visa and numpy (module imports are not
timed; anything visa imports lazily during the launch is) and has put the input in HBM (the host → HBM upload is
not timed, nor is the result's download and check).  Each line gives the launch's wall time (the ratio) and its
CPU time (``time.process_time``: user and system time of the process, the first touch of new memory included),
which a loaded machine inflates less than the wall time.

What they found is in docs/manual-notes.md, "First-launch planning cost (issue 15)" (the row bias located its
VRF operand at every one of 2M positions; the row max materialised every coordinate to find the padding; the
ring sum's plan spent most of its time in numpy's hash-based ``unique`` over a million group ids).
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import numpy as np

from benchmarks.common import best_of, first_call, line, moved_once, same_movement
from visa import (
    AxisSet,
    BranchMode,
    ClipBinaryOpF32,
    Context,
    FxpBinaryOp,
    HbmTensor,
    HostTensor,
    InterSliceReduceOpI32,
    IntraSliceReduceOpI32,
    device,
    f32,
    i32,
    launch,
)

RELU_N = 1 << 22
RELU = AxisSet(A=RELU_N)
ROWS, COLS = 512, 4096
GRID = AxisSet(R=ROWS, C=COLS)
RING_N = 1 << 18
RING = AxisSet(R=4, A=RING_N)


@device(chip=1)
def relu(ctx: Context, x: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """max(x, 0) over 4M f32, 8192 per slice."""
    m = RELU.m
    per = RELU_N // 512
    dm = x.to_dm(m[f"A / {RELU_N // 2}"], m[f"A % {RELU_N // 2} / {per}"], m[f"A % {per}"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view()).fetch(f32, m[f"A % {per} / 8"], m["A % 8"])
           .collect(m[f"A % {per} / 8"], m["A % 8"])
           .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_clip(ClipBinaryOpF32.Max, 0.0)
           .vector_final().commit(m[f"A % {per}"], 1 << 16))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["A"], ctx.tdma, 1 << 28)
    return res


@device(chip=1)
def row_max(ctx: Context, x: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """The max of every row of a 512 × 4096 i32 matrix, one row per slice."""
    m = GRID.m
    dm = x.to_dm(m["R / 256"], m["R % 256"], m["C"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view()).fetch(i32, m["C / 4"], m["C % 4 # 8"])
           .collect(m["C / 4"], m["C % 4 # 8"])
           .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_trim_way4(m["C % 4"])  # the reducer takes Way4 packets (L4733)
           .vector_intra_slice_reduce("C", m["1"], m["1 # 4"], IntraSliceReduceOpI32.Max)
           .vector_pad_way8(m["1 # 8"]).vector_final().commit(m["1 # 8"], 1 << 16))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["R"], ctx.tdma, 1 << 28)
    return res


@device(chip=1)
def row_bias(ctx: Context, x: HbmTensor[Any, Any, Any], b: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """x - b[row] over a 512 × 4096 i32 matrix: b in each slice's VRF, broadcast over the row's Time."""
    m = GRID.m
    x_dm = x.to_dm(m["R / 256"], m["R % 256"], m["C"], ctx.tdma, 0)
    b_dm = b.to_dm(m["R / 256"], m["R % 256"], m["1 # 8"], ctx.tdma, 1 << 15)
    b_vrf = (ctx.sub.begin(b_dm.view()).fetch(i32, m["1"], m["1 # 8"])
             .collect(m["1"], m["1 # 8"]).to_vrf(m["1 # 8"], 0))
    out = (ctx.main.begin(x_dm.view()).fetch(i32, m["C / 8"], m["C % 8"])
           .collect(m["C / 8"], m["C % 8"])
           .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.SubFxp, b_vrf)
           .vector_final().commit(m["C"], 1 << 16))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["R, C"], ctx.tdma, 1 << 28)
    return res


@device(chip=1)
def ring_sum(ctx: Context, x: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """Σ over R of a 4 × 262144 i32 matrix: each group of four slices holds the four rows of 8 columns per time
    step, and the inter-slice reducer adds them over the ring into the group's first slice."""
    m = RING.m
    dm = x.to_dm(m["1 # 2"], m["A % 512 / 8, R"], m["A / 512, A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view()).fetch(i32, m["A / 512"], m["A % 8"])
           .collect(m["A / 512"], m["A % 8"])
           .vector_init()
           .vector_inter_slice_reduce(m["A % 512 / 8, 1 # 4"], m["A / 512"], InterSliceReduceOpI32.AddSat)
           .vector_final().commit(m["A / 512, A % 8"], 1 << 16))
    res: HbmTensor[Any, Any, Any] = out.to_hbm(m["A"], ctx.tdma, 1 << 28)
    return res



_CPU: list[float] = []  # the launch's CPU time (process_time), for the line


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    cpu, start = time.process_time(), time.perf_counter()
    out = launch(fn, *args)
    wall = time.perf_counter() - start
    _CPU.append(time.process_time() - cpu)
    return out, wall


def _with_cpu(text: str, theirs: float, ours: float, moved: tuple[float, float, object]) -> str:
    """``text`` (a :func:`line`) with the launch's CPU time and its ratio to numpy's time, then numpy's first call
    doing the same data movement in this process (``moved``, :func:`benchmarks.common.moved_once`) and the
    launch's ratio to that."""
    text = f"{text}   cpu {_CPU[-1] * 1e3:.1f} ms ({_CPU[-1] / theirs:.0f}x)" if _CPU else text
    return same_movement(text, ours, moved, _CPU[-1] if _CPU else None)


def one(name: str) -> str:
    """Launch kernel ``name`` once (in this process, which should be fresh), check it, and return its line."""
    rng = np.random.default_rng(0)
    ctx = Context.acquire()
    if name == "relu":
        v = rng.standard_normal(RELU_N).astype(np.float32)
        v_hbm = HostTensor.from_numpy(v, f32, RELU.m["A"]).to_hbm(RELU.m["1"], RELU.m["A"], ctx.pdma, 0)
        out, ours = _timed(relu, ctx, v_hbm)
        got = out.to_host(RELU.m["A"], ctx.pdma).numpy()
        want = np.maximum(v, np.float32(0))
        assert np.array_equal(got, want), "ReLU differs from numpy"
        moved = first_call(lambda: moved_once([v], lambda a, out: np.maximum(a, np.float32(0), out=out), v.shape,
                                              v.dtype))
        assert np.array_equal(moved[2], want), "numpy's same movement differs"
        theirs = best_of(lambda: np.maximum(v, np.float32(0)), 5)
        return _with_cpu(line("ReLU 4M f32 (16 MiB), first launch", ours, theirs), theirs, ours, moved)
    if name == "ring_sum":
        r = RING.m
        y = rng.integers(-2**20, 2**20, size=(4, RING_N), dtype=np.int32)  # sums far from saturating
        y_hbm = HostTensor.from_numpy(y, i32, r["R, A"]).to_hbm(r["1"], r["R, A"], ctx.pdma, 0)
        out, ours = _timed(ring_sum, ctx, y_hbm)
        got = out.to_host(r["A"], ctx.pdma).numpy()
        assert np.array_equal(got, y.sum(axis=0, dtype=np.int32)), "ring sum differs from numpy"
        moved = first_call(lambda: moved_once([y], lambda a, out: a.sum(axis=0, dtype=np.int32, out=out), (RING_N,),
                                              np.int32))
        assert np.array_equal(moved[2], got), "numpy's same movement differs"
        theirs = best_of(lambda: y.sum(axis=0, dtype=np.int32), 5)
        return _with_cpu(line("ring sum 4×262144 i32 (4 MiB), first launch", ours, theirs, aim=20), theirs,  # issue 24
                         ours, moved)
    m = GRID.m
    x = rng.integers(-2**31, 2**31 - 1, size=(ROWS, COLS), dtype=np.int32)
    x_hbm = HostTensor.from_numpy(x, i32, m["R, C"]).to_hbm(m["1"], m["R, C"], ctx.pdma, 0)
    if name == "row_max":
        out, ours = _timed(row_max, ctx, x_hbm)
        got = out.to_host(m["R"], ctx.pdma).numpy()
        assert np.array_equal(got, x.max(axis=1)), "row max differs from numpy"
        moved = first_call(lambda: moved_once([x], lambda a, out: a.max(axis=1, out=out), (ROWS,), np.int32))
        assert np.array_equal(moved[2], got), "numpy's same movement differs"
        theirs = best_of(lambda: x.max(axis=1), 5)
        return _with_cpu(line("row max 512×4096 i32 (8 MiB), first launch", ours, theirs, aim=20), theirs,  # issue 24
                         ours, moved)
    if name == "row_bias":
        b = rng.integers(-2**31, 2**31 - 1, size=ROWS, dtype=np.int32)
        b_hbm = HostTensor.from_numpy(b, i32, m["R"]).to_hbm(m["1"], m["R, 1 # 8"], ctx.pdma, 1 << 27)
        out, ours = _timed(row_bias, ctx, x_hbm, b_hbm)
        got = out.to_host(m["R, C"], ctx.pdma).numpy()
        want = x - b[:, None]  # int32 arithmetic wraps, as SubFxp does
        assert np.array_equal(got, want), "row bias differs from numpy"
        moved = first_call(lambda: moved_once([x, b], lambda a, c, out: np.subtract(a, c[:, None], out=out),
                                              (ROWS, COLS), np.int32))
        assert np.array_equal(moved[2], want), "numpy's same movement differs"
        theirs = best_of(lambda: x - b[:, None], 5)
        return _with_cpu(line("row bias x - b[row] 512×4096 i32 (8 MiB), first launch", ours, theirs), theirs, ours,
                         moved)
    raise SystemExit(f"unknown kernel {name!r}")


KERNELS = ("relu", "row_max", "row_bias", "ring_sum")


def run() -> list[str]:
    """Each kernel's first launch, each in a fresh process."""
    lines = []
    for name in KERNELS:
        done = subprocess.run([sys.executable, "-m", "benchmarks.bench_first_launch", name], check=True,
                              capture_output=True, text=True)
        lines.append(done.stdout.strip())
    return lines


if __name__ == "__main__":
    print("\n".join(run()) if len(sys.argv) < 2 else one(sys.argv[1]))
