"""A 16384³ i8 GEMM written with visa's constructs, end to end and exact (issue 15; the Rust reference skips its
16384 matmul as too slow for a regular run).

``C[I, J] = Σ_K A[I, K] · B[K, J]`` with A, B i8 and C i32, N = 16384 (``python -m benchmarks gemm16k``; ``N=2048``
in the environment runs the same kernel smaller).  One chip; per step the chip computes a 1024 × 256 tile of C
over the whole of K:

- **Slices**: ``Slice = m["I % 512 / 128, J / 32, K / KS"]`` (4 × 8 × 8 = 256 per cluster) and ``Cluster =
  m["I / 512"]``: each slice holds 128 rows of A (256 KiB of DM) and 32 columns of B over one eighth of K
  (``KS = N / 8`` = 2048 elements, its TRF full: 8 Rows × 4 × 2048 bytes, manual L139, L1089).
- **Tiles through DM and TRF**: the host writes A row-major and B J-major to HBM (PCIe); per row block of 1024
  rows the tensor DMA moves A's tile to DM once (L2375–2384, broadcast to the 8 column groups), per column block
  of 256 it moves B's tile to DM and the sub context loads it into the TRF (``to_trf``, L3792).
- **Contraction**: fetch A (Time ``I % 128``, 2 KB packets), collect 32-byte flits, align with the TRF tiling
  ``J / 8 % 4`` innermost (the Stream Adapter's time broadcast, L3934–3945: the activation is not repeated in
  DM or in the stream), contract 64 products per Row, accumulate ``K / 64`` (Interleaved, 8 Rows = 8 columns of
  J per packet, L4482–4548).
- **Partials reduced across tiles**: each slice holds the partial sum of its K tile; the Vector Engine's
  inter-slice reduce adds the 8 K tiles over the slice ring (``m["…, 1 # 8"]``, AddSat; L4608–4623, L6636–6653;
  |sum| ≤ 2^28, so it never saturates) — the sums land in the first slice of each group, the commit writes them
  and the tensor DMA moves the 1024 × 256 tile to HBM.  The two clusters hold different rows of I: a cluster
  reduces nothing across the other (the inter-slice ring is a cluster's, L6636).
- **Check**: after each row block the host reads it back (PCIe) and compares it with numpy's exact product of the
  same rows: float32 matrix products over K runs of 1024 (i8 products are at most 2^14 in magnitude, so every
  partial sum is an integer of at most 2^24: exact in float32), summed in int64.

Reported: the simulator's wall time (kernel and transfers), the check's, peak RSS (``getrusage``) against the
bytes the tensors occupy, and the simulated cycles (the schedule's makespan).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from typing import Any

import numpy as np

from visa import AccumulationKind, AxisSet, Context, HbmTensor, HostTensor, TrfAddress, device, i8, i32, launch
from visa.engines.contraction.blas import parallel_pieces
from visa.engines.vector import InterSliceReduceOpI32

TI, TJ = 1024, 256  # the chip's tile of C per step
RS = TI // 8  # rows of A per slice (4 groups of slices per cluster, 2 clusters)
GROUPS = 8  # K tiles per step, reduced over the slice ring


def _layout(n: int) -> tuple[AxisSet, int]:
    ks = n // GROUPS
    if n % 512 or ks % 64 or 4 * ks > 8192:
        raise ValueError(f"N = {n}: need a multiple of 512 with N / 8 a multiple of 64 and at most 2048")
    return AxisSet(I=TI, J=TJ, K=n), ks


def make_kernels(n: int) -> tuple[Any, Any]:
    """The row-block kernel for size ``n`` (tile axes I = 512, J = 256, K = n)."""
    ax, ks = _layout(n)
    m = ax.m
    cluster, slice_ = m[f"I / {TI // 2}"], m[f"I % {TI // 2} / {RS}, J / 32, K / {ks}"]
    a_elem, b_elem = m[f"I % {RS}, K % {ks}"], m[f"J % 32, K % {ks}"]

    @device(chip=1)
    def a_to_dm(ctx: Context, a: HbmTensor[Any, Any, Any]) -> Any:
        return a.to_dm(cluster, slice_, a_elem, ctx.tdma, 0)

    @device(chip=1)
    def tile(ctx: Context, a_dm: Any, b: HbmTensor[Any, Any, Any], out_address: int) -> HbmTensor[Any, Any, Any]:
        b_dm = b.to_dm(cluster, slice_, b_elem, ctx.tdma, RS * ks)
        b_trf = (ctx.sub.begin(b_dm.view())
                 .fetch(i8, m["J % 8, J / 8 % 4"], m[f"K % {ks}"])
                 .collect(m[f"J % 8, J / 8 % 4, K % {ks} / 32"], m["K % 32"])
                 .to_trf(m["J % 8"], m[f"J / 8 % 4, K % {ks}"], TrfAddress.Full))
        c_dm = (ctx.main.begin(a_dm.view())
                .fetch(i8, m[f"I % {RS}"], m[f"K % {ks}"])
                .collect(m[f"I % {RS}, K % {ks} / 32"], m["K % 32"])
                .align(m[f"I % {RS}, K % {ks} / 64, J / 8 % 4"], m["K % 64"], b_trf)
                .contract(m["1"])
                .accumulate(m[f"I % {RS}, J / 8 % 4"], m["J % 8"], AccumulationKind.Interleaved)
                .vector_init()
                .vector_inter_slice_reduce(m[f"I % {TI // 2} / {RS}, J / 32, 1 # 8"], m[f"I % {RS}, J / 8 % 4"],
                                           InterSliceReduceOpI32.AddSat)
                .vector_final()
                .commit(m[f"I % {RS}, J % 32"], RS * ks + 32 * ks))
        out: HbmTensor[Any, Any, Any] = c_dm.to_hbm(m["I, J"], ctx.tdma, out_address)
        return out

    return a_to_dm, tile


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
    """Run the n³ GEMM (only its first ``row_blocks`` row blocks of 512 if given, to time a part); returns the
    measurements (seconds, bytes, cycles)."""
    full = AxisSet(I=n, J=n, K=n)
    rb = AxisSet(I=TI, J=n)
    ax, _ = _layout(n)
    a_to_dm, tile = make_kernels(n)
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
    tile_bytes = TI * TJ * 4
    for it in range(n // TI if row_blocks is None else row_blocks):
        t0 = time.perf_counter()
        a_tile = HbmTensor.from_addr(ctx, i8, ax.m["1"], ax.m["I, K"], a_addr + it * TI * n)
        a_dm = launch(a_to_dm, ctx, a_tile)
        for jt in range(n // TJ):
            b_tile = HbmTensor.from_addr(ctx, i8, ax.m["1"], ax.m["J, K"], b_addr + jt * TJ * n)
            launch(tile, ctx, a_dm, b_tile, c_addr + (it * (n // TJ) + jt) * tile_bytes)
        a_dm.free()
        block = HbmTensor.from_addr(ctx, i32, rb.m["1"], rb.m[f"J / {TJ}, I, J % {TJ}"],
                                    c_addr + it * (n // TJ) * tile_bytes)
        got = block.to_host(rb.m["I, J"], ctx.pdma).numpy(axes="I J")
        t1 = time.perf_counter()
        sim += t1 - t0
        if check:
            want = reference_rows(x, y, slice(it * TI, (it + 1) * TI))
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)[0]
                raise AssertionError(f"row block {it}: C{tuple(bad)} = {got[tuple(bad)]}, numpy {want[tuple(bad)]}")
            chk += time.perf_counter() - t1
        if progress:
            done = (it + 1) / (n // TI)
            print(f"  row block {it + 1}/{n // TI}: simulator {sim:7.1f} s, check {chk:6.1f} s "
                  f"(about {sim / done - sim:5.0f} s of simulation left)", file=sys.stderr, flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"n": n, "simulator_s": sim, "check_s": chk, "cpu_s": time.process_time() - cpu0, "peak_rss": peak,
            "device_bytes": 2 * n * n + 4 * n * n, "host_bytes": 2 * n * n,
            "cycles": ctx.schedule.makespan, "ops": len(ctx.schedule.ops)}


def describe(r: dict[str, float]) -> str:
    """One report line."""
    n = int(r["n"])
    tensors = r["device_bytes"] + r["host_bytes"]
    return (f"i8 GEMM {n}³ (one chip, {TI} × {TJ} tiles, K over 8 slices): simulator {r['simulator_s']:.1f} s, "
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
