"""MoE routing at the manual's sizes (L8459–8460): E = 128 experts, K = 1 (llama4), 4 (gpt-oss), 8 (qwen3), T = 32
tokens, B = 12 rows per block (no power of two), checked exactly against numpy's routing (the manual's terms,
examples/moe_block.py ``reference_routing``); the device cycles and the wall time of each (issue 27 item 4).
Runs only when named (``python -m benchmarks moe128``): about a minute.
"""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np

from benchmarks.common import load_example
from visa import AxisSet, Context, HostTensor, bf16, i32
from visa.kernels import Arena
from visa.kernels.moe import MoeRouting

T, E, B = 32, 128, 12


def run() -> list[str]:
    """Route random bf16 scores for each K; every stage exact."""
    reference = load_example("moe_block").reference_routing
    lines = []
    for k in (1, 4, 8):
        ax = AxisSet(T=T, E=E, K=k, Bt=B)
        routing = MoeRouting(ax)
        m = ax.m
        ctx = Context.acquire()
        scores = (np.random.default_rng(k).standard_normal((T, E)) * 3).astype(ml_dtypes.bfloat16)
        s = HostTensor.from_numpy(scores.astype(np.float32), bf16, m["T, E"], axes="T E").to_hbm(
            m["1"], m["T, E"], ctx.pdma, 0)
        text = routing.constant_text()
        consts = {name: HostTensor.from_numpy(arr, i32, m[text[name]]).to_hbm(m["1"], m[text[name]], ctx.pdma,
                                                                              (n + 1) << 20)
                  for n, (name, arr) in enumerate(routing.constants().items())}
        first = len(ctx.schedule.ops)
        t0 = time.perf_counter()
        r = routing(ctx, Arena(), s, consts)
        wall = time.perf_counter() - t0
        want = reference(np.asarray(scores, np.float64), k, B, routing.grid)
        got_idx = r.indices.logical("T K") if k > 1 else r.indices.logical("T")[:, None]
        got_sc = r.scatter_idx.logical("T K") if k > 1 else r.scatter_idx.logical("T")[:, None]
        assert np.array_equal(got_idx, want["indices"]) and np.array_equal(got_sc, want["scatter_idx"])
        assert np.array_equal(r.expert_ids.logical("G"), want["expert_ids"])
        assert np.array_equal(r.block_count.logical("G"), want["block_count"])
        ops = ctx.schedule.ops[first:]
        cycles = max(op.end for op in ops) - min(op.start for op in ops)
        lines.append(f"MoE routing T = {T}, E = {E}, K = {k}, B = {B} (G = {routing.grid}): {cycles:,} cycles, "
                     f"{len(ops)} operations, {wall:.1f} s; exact against numpy")
    return lines
