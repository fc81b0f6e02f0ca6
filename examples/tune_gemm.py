"""Tuning :class:`visa.kernels.Gemm` with :func:`visa.tune.sweep`.

A bf16 GEMM ``out[M, N] = x[M, K] · w[N, K]ᵀ`` (manual "Tiling", L7090–7150) has choices that change its cycles
but not its result:

- ``k_tile``: the K tile each TRF load holds, 128 … 1024 bf16 per column (a TRF Row is 8 KiB, L1089; a half 4 KiB,
  L4151–4154).  Smaller tiles mean more contraction passes and more f32 partial adds (L7139–7143);
- ``m_block``: how many 32-row M tiles share one TRF load (w is loaded again for every block; the block's f32
  partials must fit the slice's DM, 512 KiB, L138);
- ``double_buffer``: the sub context loads the next K tile into the other TRF half while main contracts (needs
  ``k_tile`` ≤ 512: with a whole-Row tile no half is free, and the kernel refuses);
- ``w_tiles``: w stored K-tile-major in HBM (each tile one contiguous run) or row-major.

:func:`gemm` builds, runs and checks one choice (against numpy, within :func:`visa.kernels.bounds.gemm`) and
returns the report; ``main`` sweeps a small GEMM in this process and prints the table.  The 4096³ sweep of the
README runs from the command line, on two worker processes::

    visa tune examples/tune_gemm.py:gemm --grid size=4096 --grid k_tile=128,256,512,1024 \\
        --grid m_block=1,2,4,8 --grid double_buffer=true,false --grid w_tiles=true,false --workers 2
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, launch
from visa.kernels import Arena, Gemm, bounds
from visa.schedule.report import KernelReport
from visa.tune import sweep

F64 = npt.NDArray[np.float64]


@functools.lru_cache(maxsize=2)
def _operands(m: int, n: int, k: int) -> tuple[HostTensor[Any, Any], HostTensor[Any, Any], F64, F64]:
    """Random bf16 x and w for the shape, and numpy's product with its error bound (made once per worker and
    shape: every point of a sweep multiplies the same matrices)."""
    ax = AxisSet(M=m, N=n, K=k)
    rng = np.random.default_rng(7)
    x, w = HostTensor.rand(bf16, ax.m["M, K"], rng), HostTensor.rand(bf16, ax.m["N, K"], rng)
    xv = np.asarray(x.numpy(axes="M K"), dtype=np.float64)
    wv = np.asarray(w.numpy(axes="N K"), dtype=np.float64)
    return x, w, xv @ wv.T, bounds.gemm(xv, wv, k // 32)  # the bound for the most partials a K tile allows


def gemm(size: int = 1024, k_tile: int = 512, m_block: int | None = None, double_buffer: bool = True,
         w_tiles: bool = False, m: int | None = None, n: int | None = None, k: int | None = None) -> KernelReport:
    """One point: the GEMM of ``M = N = K = size`` (or the given ``m``, ``n``, ``k``) with these choices, checked
    against numpy; returns the context's report (its kernel roofline gives the cycles)."""
    m, n, k = m or size, n or size, k or size
    ax = AxisSet(M=m, N=n, K=k, P=2)
    kernel_gemm = Gemm(ax, "M", "N", "K", k_tile=k_tile, m_block=m_block, w_tiles=w_tiles)
    x, w, want, bound = _operands(m, n, k)
    ctx = Context.acquire()
    xh = x.to_hbm(ax.m["1"], ax.m["M, K"], ctx.pdma, 0)
    tiles = kernel_gemm.k_tiles > 1 and w_tiles
    layout = ax.m[f"K / {k_tile}, N, K % {k_tile}"] if tiles else ax.m["N, K"]
    wh = w.to_hbm(ax.m["1"], layout, ctx.pdma, 1 << 30)

    @device(chip=1)
    def kernel(ctx: Context, a: HbmTensor[Any, Any, Any], b: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
        return kernel_gemm(ctx, Arena(hbm=1 << 31), a, b, double_buffer=double_buffer)

    out = launch(kernel, ctx, xh, wh).to_host(ax.m["M, N"], ctx.pdma)
    got = np.asarray(out.numpy(axes="M N"), dtype=np.float64)
    assert np.all(np.abs(got - want) <= bound), f"largest excess {float(np.max(np.abs(got - want) - bound))}"
    return ctx.report()


def decode_layer(k_tile: int = 512, tiles: bool = True) -> dict[str, Any]:
    """One point of the Llama decode layer's tiles: ``examples/llama70b_decode_layer.py`` at its reduced size
    (D = 1024, F = 3584), its five weight projections with this K tile, the weights stored K-tile-major
    (``tiles``) or row-major; every stage checked against numpy by the example itself.  The cycles are the
    launch's; the utilisation is against the layer's memory bound (weights and cache ÷ HBM bandwidth)."""
    layer = _sibling("llama70b_decode_layer")
    result = layer.run(layer.REDUCED, k_tile=k_tile, tiles=tiles)
    return {"cycles": int(result["makespan"]), "utilisation": result["memory bound"] / result["makespan"],
            "bound": "HBM"}


def _sibling(name: str) -> Any:
    """An example beside this file, imported once (as ``visa run`` would run it, but without its ``main``)."""
    import importlib.util
    import sys
    from pathlib import Path

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


GRID: dict[str, list[Any]] = {"k_tile": [128, 256, 512, 1024], "double_buffer": [True, False], "m_block": [1, 2]}


def main() -> None:
    """Sweep a 64 × 256 × 2048 GEMM's tiles in this process and print the table, the best point and what it
    gains over Gemm's defaults (k_tile 512, double buffering, the largest block)."""
    result = sweep(small, GRID, workers=1, cache=False)
    print(result)
    best = result.best
    assert best is not None and best.cycles is not None
    # every point that ran computed the same product (each checked itself); the refused ones are the whole-Row
    # K tile with double buffering (no free TRF half, L4151–4154)
    refused = [r for r in result.rows if r.error]
    assert all(r.params["k_tile"] == 1024 and r.params["double_buffer"] for r in refused), refused
    assert len(refused) == 2
    exhaustive = min(r.cycles for r in result.rows if r.cycles is not None)
    assert best.cycles == exhaustive
    default = result.speedup({"k_tile": 512, "double_buffer": True, "m_block": 2})
    print(f"best: {best.params} at {best.cycles:,} cycles, {default:.2f}× faster than Gemm's defaults")


def small(k_tile: int, double_buffer: bool, m_block: int) -> KernelReport:
    """The point ``main`` sweeps: a 64 × 256 × 2048 GEMM (two M tiles)."""
    return gemm(k_tile=k_tile, double_buffer=double_buffer, m_block=m_block, m=64, n=256, k=2048)


if __name__ == "__main__":
    main()
