"""A 16384³ i8 GEMM written with visa's constructs, end to end and exact (issue 15; the Rust reference skips its
16384 matmul as too slow for a regular run).

``C[I, J] = Σ_K A[I, K] · B[K, J]`` with A, B i8 and C i32, N = 16384 (``python -m benchmarks gemm16k``; ``N=2048``
in the environment runs the same kernel smaller).  The kernels are :func:`visa.kernels.gemm_i8.i8_gemm_kernels`
(its docstring has the layout and the manual lines); one chip, per step a 1024 × 256 tile of C over the whole of
K, with K split over the slices *and* the two clusters:

- **Clusters**: ``Cluster = m["H"]``, K read as (H, K): each cluster holds one half of K for the same 1024 rows.
- **Slices**: ``Slice = m["I / 128, J / 32, K / KS"]`` (8 × 8 × 4 = 256 per cluster, ``KS = N / 8`` = 2048):
  each slice holds 128 rows of A (256 KiB of DM) and 32 columns of B over one K tile, its TRF full.
- **Tiles through DM and TRF**: the host writes A row-major and B J-major to HBM (PCIe); per row block the tensor
  DMA moves A's tile to DM once, per column block B's tile, which the sub context loads into the TRF.
- **Partials reduced across tiles**: the Vector Engine's inter-slice reduce adds a cluster's 4 K tiles over the
  slice ring (AddSat, ``1 # 4``; L6636–6653); the commit writes each cluster's partial.
- **Partials reduced across clusters**: ``visa.kernels.cluster_all_reduce`` — a cluster swap (one DM → DM tensor
  DMA between the clusters' DMs, L2386–2388) and an interleaved fetch + ``AddFxp`` pass (L7610; "DMA + Vector"
  for the Cluster level, L7073–7076); the tensor DMA moves cluster 0's sum to HBM, C laid out by column block
  (``m["J / 32, I, J % 32"]``: each slice's block one contiguous run, no 128-byte read-modify-writes, L2985).  Both
  are operations of the
  schedule with their own cycles (2,548 for the swap, 1,025 for the add per tile at N ≥ 2048), ordered by the
  hazards of what they read and write.
- **Check**: after each row block the host reads it back (PCIe) and compares it with numpy's exact product of the
  same rows: float32 matrix products over K runs of 1024 (i8 products are at most 2^14 in magnitude, so every
  partial sum is an integer of at most 2^24: exact in float32), summed in int64.

Reported: the simulator's wall time (kernel and transfers), the check's, peak RSS (``getrusage``) against the
bytes the tensors occupy, the simulated cycles (the schedule's makespan) and the cross-cluster step's cycles.
"""

from __future__ import annotations

import os
import resource
import sys
import time

import numpy as np

from visa import AxisSet, Context, HbmTensor, HostTensor, i8, i32, launch
from visa.engines.contraction.blas import parallel_pieces
from visa.kernels.gemm_i8 import i8_gemm_kernels

ROWS = 128  # rows of A per slice: a step computes a 1024 × 256 tile of C


def reference_rows(x: np.ndarray, y: np.ndarray, rows: slice) -> np.ndarray:
    """``x[rows] @ y`` exactly (int64): float32 products over K runs of 1024, each exact (module docstring);
    the columns are split between worker threads with one BLAS thread each (as the simulator's products)."""
    out = np.zeros((rows.stop - rows.start, y.shape[1]), dtype=np.int64)
    xr = x[rows].astype(np.float32)

    def cols(lo: int, hi: int) -> None:
        for k0 in range(0, x.shape[1], 1024):
            yk = y[k0: k0 + 1024, lo:hi].astype(np.float32)
            out[:, lo:hi] += (xr[:, k0: k0 + 1024] @ yk).astype(np.int64)

    parallel_pieces(y.shape[1], 2048, cols)
    return out


def gemm(n: int, check: bool = True, progress: bool = False, row_blocks: int | None = None) -> dict[str, float]:
    """Run the n³ GEMM (only its first ``row_blocks`` row blocks of 1024 rows if given, to time a part); returns the
    measurements (seconds, bytes, cycles)."""
    full = AxisSet(I=n, J=n, K=n)
    kern = i8_gemm_kernels(n, ROWS)
    ti, tj = kern.tile_i, kern.tile_j
    rb = AxisSet(I=ti, J=n)
    ax = kern.ax
    a_to_dm, tile = kern.a_to_dm, kern.tile
    rng = np.random.default_rng(15)
    x = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
    y = rng.integers(-128, 128, size=(n, n), dtype=np.int8)
    a_addr, b_addr, c_addr = 0, n * n, 2 * n * n
    ctx = Context.acquire()
    sim = chk = 0.0
    cpu0 = time.process_time()
    start = time.perf_counter()
    a_hbm = HostTensor.from_numpy(x, i8, full.m["I, K"]).to_hbm(full.m["1"], full.m["I, K"], ctx.pdma, a_addr)
    b_hbm = HostTensor.from_numpy(y, i8, full.m["J, K"], axes="K J").to_hbm(full.m["1"], full.m["J, K"], ctx.pdma,
                                                                           b_addr)
    del a_hbm, b_hbm  # the kernel reads the tiles through handles at their addresses
    sim += time.perf_counter() - start
    tile_bytes = ti * tj * 4
    for it in range(n // ti if row_blocks is None else row_blocks):
        t0 = time.perf_counter()
        a_tile = HbmTensor.from_addr(ctx, i8, ax.m["1"], kern.a_layout, a_addr + it * ti * n)
        a_dm = launch(a_to_dm, ctx, a_tile)
        for jt in range(n // tj):
            b_tile = HbmTensor.from_addr(ctx, i8, ax.m["1"], kern.b_layout, b_addr + jt * tj * n)
            launch(tile, ctx, a_dm, b_tile, c_addr + (it * (n // tj) + jt) * tile_bytes)
        a_dm.free()
        block = HbmTensor.from_addr(ctx, i32, rb.m["1"], rb.m["J / 32, I, J % 32"],
                                    c_addr + it * (n // tj) * tile_bytes)
        got = block.to_host(rb.m["I, J"], ctx.pdma).numpy(axes="I J")
        t1 = time.perf_counter()
        sim += t1 - t0
        if check:
            want = reference_rows(x, y, slice(it * ti, (it + 1) * ti))
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)[0]
                raise AssertionError(f"row block {it}: C{tuple(bad)} = {got[tuple(bad)]}, numpy {want[tuple(bad)]}")
            chk += time.perf_counter() - t1
        if progress:
            done = (it + 1) / (n // ti)
            print(f"  row block {it + 1}/{n // ti}: simulator {sim:7.1f} s, check {chk:6.1f} s "
                  f"(about {sim / done - sim:5.0f} s of simulation left)", file=sys.stderr, flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ops = ctx.schedule.ops
    swaps = [k for k, op in enumerate(ops) if op.name.startswith("cluster_swap.")]
    adds = [ops[k + 1] for k in swaps]  # cluster_all_reduce records its add right after its swap
    assert all(op.track == "main" and any(d.op == ops[k].index for d in op.deps)
               for k, op in zip(swaps, adds, strict=True))
    return {"n": n, "tile_i": ti, "tile_j": tj, "tiles": len(swaps),
            "swap_cycles": sum(ops[k].cycles for k in swaps), "add_cycles": sum(op.cycles for op in adds),
            "simulator_s": sim, "check_s": chk, "cpu_s": time.process_time() - cpu0, "peak_rss": peak,
            "device_bytes": 2 * n * n + 4 * n * n, "host_bytes": 2 * n * n,
            "cycles": ctx.schedule.makespan, "ops": len(ctx.schedule.ops)}


def describe(r: dict[str, float]) -> str:
    """One report line."""
    n = int(r["n"])
    tensors = r["device_bytes"] + r["host_bytes"]
    tiles = max(1, int(r["tiles"]))
    return (f"i8 GEMM {n}³ (one chip, {int(r['tile_i'])} × {int(r['tile_j'])} tiles, K over 4 slices × 2 "
            f"clusters): cross-cluster step per tile {int(r['swap_cycles']) // tiles:,} cycles of cluster swap + "
            f"{int(r['add_cycles']) // tiles:,} of add; simulator {r['simulator_s']:.1f} s, "
            f"exact check {r['check_s']:.1f} s (wall; {r['cpu_s']:.0f} s of CPU in all); "
            f"peak RSS {r['peak_rss'] / 2**30:.2f} GiB = "
            f"{r['peak_rss'] / tensors:.2f}× the tensors' {tensors / 2**30:.2f} GiB (A, B on the host and in HBM, C "
            f"in HBM); {int(r['cycles']):,} simulated cycles ({r['cycles'] / 1e9:.3f} s at 1 GHz) over "
            f"{int(r['ops']):,} operations")


def run() -> list[str]:
    n = int(os.environ.get("N", "16384"))
    rows = int(os.environ["ROW_BLOCKS"]) if os.environ.get("ROW_BLOCKS") else None
    return [describe(gemm(n, progress=sys.stderr.isatty() or bool(os.environ.get("PROGRESS")), row_blocks=rows))]


if __name__ == "__main__":
    print("\n".join(run()))
