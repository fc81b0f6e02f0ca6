"""i8 GEMV 4096 × 4096 — the Rust reference's matmul_4096 shape — as a whole kernel, against numpy (issue 15).

``y[I] = Σ_J A[I, J] · x[J]`` with A, x i8 and y i32, I = J = 4096, on one chip: ``Cluster = m["I / 2048"]``,
``Slice = m["I % 2048 / 8"]`` (8 rows of A per slice, 32 KiB of DM), the vector broadcast to every slice's DM by
the tensor DMA and loaded into its TRF (one Row, 4 KiB); the main context fetches the 8 rows (2 KiB packets),
collects 32-byte flits, aligns 64-byte computation packets, contracts them and accumulates ``J / 64`` per row
(manual GEMV L378–465, scaled to i8 and 4096 rows).  The kernel runs from HBM to HBM (the DMAs, the TRF load,
the pass and the DMA back); numpy computes ``A @ x`` exactly on int32 copies made beforehand (int32 sums of
the i8 products: at most 4096 · 2^14 = 2^26 in magnitude).  The result is checked equal before timing.

Peak RSS: measured in a fresh process (``getrusage``) running the kernel once, against the bytes the tensors
occupy (A and x on the host and in HBM, their DM copies, the TRF and y).
"""

from __future__ import annotations

import gc
import subprocess
import sys
from typing import Any

import numpy as np

from benchmarks.common import best_of, report
from visa import AccumulationKind, AxisSet, Context, HbmTensor, HostTensor, TrfAddress, device, i8, launch

AX = AxisSet(I=4096, J=4096)
M = AX.m


@device(chip=1)
def gemv(ctx: Context, a: HbmTensor[Any, Any, Any], x: HbmTensor[Any, Any, Any]) -> HbmTensor[Any, Any, Any]:
    """y = A x (module docstring)."""
    m = M
    cluster, slice_ = m["I / 2048"], m["I % 2048 / 8"]
    a_dm = a.to_dm(cluster, slice_, m["I % 8, J"], ctx.tdma, 0)
    x_dm = x.to_dm(cluster, slice_, m["J"], ctx.tdma, 1 << 15)
    x_trf = (ctx.sub.begin(x_dm.view())
             .fetch(i8, m["J / 2048"], m["J % 2048"])
             .collect(m["J / 32"], m["J % 32"])
             .to_trf(m["1"], m["J"], TrfAddress.Full))
    y = (ctx.main.begin(a_dm.view())
         .fetch(i8, m["I % 8, J / 2048"], m["J % 2048"])
         .collect(m["I % 8, J / 32"], m["J % 32"])
         .align(m["I % 8, J / 64"], m["J % 64"], x_trf)
         .contract(m["1"])
         .accumulate(m["I % 8"], m["1 # 8"], AccumulationKind.Interleaved)
         .commit(m["I % 8, 1 # 8"], 1 << 16))
    out: HbmTensor[Any, Any, Any] = y.to_hbm(m["I"], ctx.tdma, 1 << 28)
    return out


def setup(rng: np.random.Generator) -> tuple[Context, HbmTensor[Any, Any, Any], HbmTensor[Any, Any, Any],
                                             np.ndarray, np.ndarray]:
    """The context and the operands in HBM (and as numpy arrays)."""
    a = np.frombuffer(rng.bytes(4096 * 4096), dtype=np.int8).reshape(4096, 4096)  # uniform i8, no wider temporary
    x = np.frombuffer(rng.bytes(4096), dtype=np.int8)
    ctx = Context.acquire()
    a_hbm = HostTensor.from_numpy(a, i8, M["I, J"]).to_hbm(M["1"], M["I, J"], ctx.pdma, 0)
    x_hbm = HostTensor.from_numpy(x, i8, M["J"]).to_hbm(M["1"], M["J"], ctx.pdma, 1 << 27)
    return ctx, a_hbm, x_hbm, a, x


def peak_rss() -> str:
    """Peak RSS of one kernel run in a fresh process, against the bytes its tensors occupy."""
    # the child's own high-water mark (VmHWM: getrusage's ru_maxrss also counts the parent's RSS at the fork)
    code = ("import numpy as np\nfrom benchmarks.bench_gemv4096 import setup, gemv\nfrom visa import launch\n"
            "def hwm():\n"
            "    return [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')][0]\n"
            "base = hwm()\nctx, a, x, _, _ = setup(np.random.default_rng(0))\nlaunch(gemv, ctx, a, x)\n"
            "print(base, hwm())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    base, peak = (int(v) * 1024 for v in out.stdout.split())
    # A and x on the host and in HBM; A and x in every slice's DM; x in the TRF; y in DM (8 × 32 B per slice) and
    # in HBM
    tensors = 2 * (4096 * 4096 + 4096) + 4096 * 4096 + 512 * 4096 + 512 * 4096 + 512 * 256 + 4 * 4096
    return (f"  peak RSS of one GEMV run (fresh process): {peak / 2**20:.0f} MiB, {(peak - base) / 2**20:.0f} MiB over "
            f"the imports; the tensors occupy {tensors / 2**20:.0f} MiB: "
            f"{(peak - base) / tensors:.2f}× (aim ≤ 2×)")


def run() -> list[str]:
    rng = np.random.default_rng(0)
    ctx, a_hbm, x_hbm, a, x = setup(rng)
    first = len(ctx.schedule.ops)
    out = launch(gemv, ctx, a_hbm, x_hbm)
    ops = ctx.schedule.ops[first:]
    cycles = max(op.end for op in ops) - min(op.start for op in ops)
    y = out.to_host(M["I"], ctx.pdma).numpy()
    a32, x32 = a.astype(np.int32), x.astype(np.int32)
    assert np.array_equal(y, a32 @ x32), "GEMV differs from numpy"
    gc.collect()
    ours = best_of(lambda: launch(gemv, ctx, a_hbm, x_hbm), repeat=5)
    theirs = best_of(lambda: a32 @ x32, repeat=5)
    return [report(f"i8 GEMV 4096×4096 kernel HBM→HBM ({cycles} cycles)", ours, theirs, 5), peak_rss()]


if __name__ == "__main__":
    print("\n".join(run()))
