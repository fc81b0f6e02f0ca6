"""A streamed GEMV the size of a 70B projection (issue 14): ``Gemm(stream=True)`` of x[1, 8192] · w[8192, 8192]ᵀ,
w in HBM moved through DM in 8192 × 512 tiles, against numpy's float32 ``w @ x`` of the same bf16 values.

Two lines: the launch (the simulation of the 16 tile DMAs, TRF loads, contractions and K-partial adds; the weight
is in HBM before the clock starts), and the tile-stride check of one 8192 × 512 tile view
(``memory.layout.tile_offset``: per axis) against the position-by-position check it replaced
(``check_every_position``, still the path of every refusal).  Before the per-axis check, the launch took about
2 minutes on this machine, almost all of it in that check.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks.common import best_of


def run() -> list[str]:
    from ml_dtypes import bfloat16

    from visa import AxisSet, Context, HostTensor, bf16, device, launch
    from visa.kernels import Arena, Gemm
    from visa.memory.layout import check_every_position, tile_offset

    n = k = 8192
    ax = AxisSet(M=1, N=n, K=k)
    gemm = Gemm(ax)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(k, dtype=np.float32).astype(bfloat16).astype(np.float32)
    w = (rng.random((n, k), dtype=np.float32) - 0.5).astype(bfloat16).astype(np.float32)
    theirs = best_of(lambda: w @ x, repeat=5)
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, bf16, ax.m["M, K"], axes="K").to_hbm(ax.m["1"], ax.m["M, K"], ctx.pdma, 0)
    wh = HostTensor.from_numpy(w, bf16, ax.m["N, K"], axes="N K").to_hbm(ax.m["1"], ax.m["N, K"], ctx.pdma, 1 << 28)

    @device(chip=1)
    def kernel(ctx: Context, a: Any, b: Any) -> Any:
        return gemm(ctx, Arena(), a, b, stream=True)

    start = time.perf_counter()
    launch(kernel, ctx, xh, wh)
    ours = time.perf_counter() - start
    element, dim, tile = ax.m["N, K"], ax.m["K"], ax.m["N, K = 512 # 8192"]
    per_axis = best_of(lambda: tile_offset(element, dim, 512, tile, 3 * 512, "tile"), repeat=5)
    every = best_of(lambda: check_every_position(element, dim, tile, {"K": 3 * 512}, 3 * 512, "tile"), repeat=2)
    return [
        f"{'streamed GEMV 8192×8192 bf16, launch':<48} visa {ours * 1e3:9.2f} ms   numpy {theirs * 1e3:9.2f} ms   "
        f"ratio {ours / theirs:8.1f}x",
        f"{'tile check of an 8192×512 tile view':<48} per axis {per_axis * 1e3:7.2f} ms   every position "
        f"{every * 1e3:9.2f} ms   ({every / per_axis:.0f}× faster)",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
