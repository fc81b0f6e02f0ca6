"""One run of the GEMM example's kernel (manual L466–525) on seeded data, for the tests that follow its memory."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.example_loader import load_example
from visa import Context, HostTensor, axes, bf16, launch, m

axes(I=512, J=512, K=1024)  # the GEMM example's


def run_gemm(seed: int) -> tuple[Context, np.ndarray[Any, Any]]:
    """A new context, the kernel launched in it on random bf16 A and B, and the output's bits (uint16)."""
    gemm = load_example("gemm")
    ctx = Context.acquire()
    rng = np.random.default_rng(seed)
    a = HostTensor.rand(bf16, m["I, K"], rng)
    b = HostTensor.rand(bf16, m["K, J"], rng)
    a_hbm = a.to_hbm(gemm.Chip, m["I, K"], ctx.pdma, 0)
    b_hbm = b.to_hbm(gemm.Chip, m["J, K"], ctx.pdma, 1 << 28)
    out = launch(gemm.kernel, ctx, a_hbm, b_hbm).to_host(m["I, J"], ctx.pdma)
    return ctx, np.asarray(out.numpy(axes="I J")).view(np.uint16).copy()
