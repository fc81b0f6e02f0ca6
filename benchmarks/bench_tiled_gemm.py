"""Tiled bf16 GEMM 1024³, the kernel from HBM to the host, against numpy's float32 matmul (issue 15).

``C = A · B`` with A[1024 × 1024], B[1024 × 1024] bf16 in HBM; C in bf16 (float32 accumulation, then one
rounding, as examples/gemm.py).  One chip computes a 1024 × 512 tile of C per pass: ``Cluster = m["I / 512"]``,
``Slice = m["I % 512 / 32, J / 32"]`` (16 × 16 slices per cluster, a 32 × 32 tile each), A's tile moved to DM once
and B's two column tiles in turn (DM, then the TRF: 8 Rows × 4 × 1024 bf16, full), the activation tiled over
``J / 8 % 4`` by the Stream Adapter (L3934–3945), ``K / 32`` accumulated (Interleaved), cast to bf16 and
committed; the DMA moves each tile to HBM and PCIe brings C back to the host (manual L466–525, tiled).

numpy computes ``a @ b`` in float32 of the same bf16 values, in the same run.  The result is checked before
timing against float64 within half a bf16 ulp plus the float32 accumulation bound (as examples/gemm.py).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from benchmarks.common import best_of, report
from visa import AccumulationKind, AxisSet, Context, HbmTensor, HostTensor, TrfAddress, bf16, device, launch

N, TJ = 1024, 512
T = AxisSet(I=N, J=TJ, K=N)  # the axes of one pass (a 1024 × 512 tile of C)
F = AxisSet(I=N, J=N, K=N)


@device(chip=1)
def tiled_gemm(ctx: Context, a: HbmTensor[Any, Any, Any], b_tiles: list[HbmTensor[Any, Any, Any]],
               c_address: int) -> HbmTensor[Any, Any, Any]:
    """C = A · B, one pass per column tile of B (module docstring); C tile-major in HBM."""
    m = T.m
    cluster, slice_ = m["I / 512"], m["I % 512 / 32, J / 32"]
    a_dm = a.to_dm(cluster, slice_, m["I % 32, K"], ctx.tdma, 0)
    for jt, b in enumerate(b_tiles):
        b_dm = b.to_dm(cluster, slice_, m["J % 32, K"], ctx.tdma, 1 << 16)
        b_trf = (ctx.sub.begin(b_dm.view())
                 .fetch(bf16, m["J % 8, J / 8 % 4"], m["K"])
                 .collect(m["J % 8, J / 8 % 4, K / 16"], m["K % 16"])
                 .to_trf(m["J % 8"], m["J / 8 % 4, K"], TrfAddress.Full))
        c_dm = (ctx.main.begin(a_dm.view())
                .fetch(bf16, m["I % 32"], m["K"])
                .collect(m["I % 32, K / 16"], m["K % 16"])
                .align(m["I % 32, K / 32, J / 8 % 4"], m["K % 32"], b_trf)
                .contract(m["1"])
                .accumulate(m["I % 32, J / 8 % 4"], m["J % 8"], AccumulationKind.Interleaved)
                .cast(bf16, m["J % 8 # 16"])
                .commit(m["I % 32, J % 32"], 1 << 17))
        c_dm.to_hbm(m["I, J"], ctx.tdma, c_address + jt * N * TJ * 2)
        b_dm.free()
    return HbmTensor.from_addr(ctx, bf16, F.m["1"], F.m[f"J / {TJ}, I, J % {TJ}"], c_address)


def setup() -> tuple[Context, HbmTensor[Any, Any, Any], list[HbmTensor[Any, Any, Any]], np.ndarray, np.ndarray]:
    """A and B in HBM (B J-major, cut in column tiles), and their values as float32."""
    rng = np.random.default_rng(1)
    a = rng.uniform(-2, 2, size=(N, N)).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-2, 2, size=(N, N)).astype(ml_dtypes.bfloat16)
    ctx = Context.acquire()
    a_hbm = HostTensor.from_numpy(a, bf16, F.m["I, K"]).to_hbm(F.m["1"], F.m["I, K"], ctx.pdma, 0)
    HostTensor.from_numpy(b, bf16, F.m["J, K"], axes="K J").to_hbm(F.m["1"], F.m["J, K"], ctx.pdma, 1 << 28)
    b_tiles = [HbmTensor.from_addr(ctx, bf16, T.m["1"], T.m["J, K"], (1 << 28) + jt * TJ * N * 2)
               for jt in range(N // TJ)]
    a_tile = HbmTensor.from_addr(ctx, bf16, T.m["1"], T.m["I, K"], 0)
    del a_hbm
    return ctx, a_tile, b_tiles, a.astype(np.float32), b.astype(np.float32)


def kernel_to_host(ctx: Context, a: HbmTensor[Any, Any, Any], b_tiles: list[HbmTensor[Any, Any, Any]]) -> np.ndarray:
    """The kernel, then C back to the host as a numpy array."""
    c = launch(tiled_gemm, ctx, a, b_tiles, 2 << 28)
    out: np.ndarray = c.to_host(F.m["I, J"], ctx.pdma).numpy(axes="I J")
    return out


def run() -> list[str]:
    ctx, a, b_tiles, x, y = setup()
    got = kernel_to_host(ctx, a, b_tiles).astype(np.float64)
    want = x.astype(np.float64) @ y.astype(np.float64)
    bound = np.abs(want) * 2.0**-8 + N * 2.0**-23 * (np.abs(x).astype(np.float64) @ np.abs(y).astype(np.float64))
    assert np.all(np.abs(got - want) <= bound), "the tiled GEMM is outside its bound"
    theirs = best_of(lambda: x @ y, repeat=10)
    ours = best_of(lambda: kernel_to_host(ctx, a, b_tiles), repeat=5)
    theirs = min(theirs, best_of(lambda: x @ y, repeat=10))  # before and after (see bench_gemm)
    return [report("tiled bf16 GEMM 1024³, kernel HBM → host", ours, theirs, 10)]


if __name__ == "__main__":
    print("\n".join(run()))
