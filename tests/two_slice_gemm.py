"""The operands of a small GEMM on two slices, shaped as examples/gemm.py's (shared by the tests of its fast
paths): A[64 × K] in DM over ``Slice = m["I / 32, 1 # 128"]``, B[K × 32] loaded J-major into the TRF with
``Row = m["J % 8"]`` and ``J / 8`` in the TRF Element."""

from __future__ import annotations

from typing import Any

import numpy as np

from visa import AxisSet, Context, HostTensor, TrfAddress, i8


def operands(ctx: Context, ax: AxisSet, x: np.ndarray, y: np.ndarray, dtype: Any) -> tuple[Any, Any, int, int]:
    """``(a_dm, trf, n, flit)``: A in DM, B in the TRF, the elements of a 64-byte computation packet and of a
    32-byte flit (axes ``I = 64``, ``J = 32``, ``K`` of ``ax``)."""
    m = ax.m
    a = HostTensor.from_numpy(x, dtype, m["I, K"]).to_hbm(m["1"], m["I, K"], ctx.pdma, 0)
    b = HostTensor.from_numpy(y, dtype, m["J, K"], axes="K J").to_hbm(m["1"], m["J, K"], ctx.pdma, 1 << 24)
    slice_ = m["I / 32, 1 # 128"]
    n = 64 if dtype is i8 else 32  # elements of a 64-byte computation packet
    flit = n // 2
    a_dm = a.to_dm(m["1 # 2"], slice_, m["I % 32, K"], ctx.tdma, 0)
    b_dm = b.to_dm(m["1 # 2"], slice_, m["J, K"], ctx.tdma, 1 << 17)
    trf = (ctx.sub.begin(b_dm.view()).fetch(dtype, m["J % 8, J / 8"], m["K"])
           .collect(m[f"J % 8, J / 8, K / {flit}"], m[f"K % {flit}"])
           .to_trf(m["J % 8"], m["J / 8, K"], TrfAddress.Full))
    return a_dm, trf, n, flit
