"""The device dequantisation of Q4_1 weights (:class:`visa.kernels.Q4Dequant`): bit for bit gguf's own
dequantisation rounded to bf16, and a GEMM over it equal to the GEMM over the host's bf16 weights."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from visa import dtypes as dt
from visa.context import Context, device, launch
from visa.kernels import Arena, Gemm, Q4Dequant
from visa.mapping import AxisSet
from visa.tensors.handles import HostTensor

gq = pytest.importorskip("gguf.quants")


def _run(n: int, k: int, k_tile: int, seed: int) -> tuple[Any, Any, Any, Any]:
    from gguf import GGMLQuantizationType

    from visa.models.loader import q4_1_split

    rng = np.random.default_rng(seed)
    raw = gq.quantize((rng.standard_normal((n, k)) * 0.05).astype(np.float32), GGMLQuantizationType.Q4_1)
    ref = gq.dequantize(raw, GGMLQuantizationType.Q4_1).astype(np.float32).astype(ml_dtypes.bfloat16)
    w = q4_1_split(raw, n, k)
    ctx = Context.acquire()
    ax = AxisSet(M=1, N=n, K=k)
    gemm = Gemm(ax, "M", "N", "K", k_tile=k_tile)
    deq = Q4Dequant(gemm)
    m, x = deq.ax.m, ax.m
    q_hbm, s_hbm = deq.upload(ctx, w, 0, 1 << 20)
    xs = rng.standard_normal(k).astype(np.float32)
    x_hbm = HostTensor.from_numpy(xs, dt.bf16, x["K"], axes="K").to_hbm(x["1"], x["K"], ctx.pdma, 2 << 20)
    got: dict[str, Any] = {}

    @device(chip=1)
    def kernel(ctx: Context, q: Any, s: Any, xv: Any) -> Any:
        arena = Arena()
        got["w"] = deq(ctx, arena, q, s)
        return gemm(ctx, arena, xv.view().relabel(x["M, K"]), got["w"], double_buffer=False)

    out = launch(kernel, ctx, q_hbm, s_hbm, x_hbm)
    del m
    return got["w"], ref, np.asarray(out.logical("N"), np.float32), xs


@pytest.mark.parametrize(("n", "k", "k_tile"), [(64, 576, 576), (32, 1536, 768)])
def test_device_dequant_is_gguf_bit_for_bit(n: int, k: int, k_tile: int) -> None:
    w_dm, ref, y, xs = _run(n, k, k_tile, seed=n + k)
    bits = np.asarray(w_dm.logical("N K")).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(bits, ref.view(np.uint16))
    # the GEMM over the device's weights: the same as over the host's bf16 weights (f32 sums, one bf16 rounding)
    yr = xs.astype(ml_dtypes.bfloat16).astype(np.float64) @ ref.astype(np.float64).T
    bound = np.abs(xs.astype(ml_dtypes.bfloat16).astype(np.float64)) @ np.abs(ref.astype(np.float64)).T
    assert np.all(np.abs(y - yr) <= 2.0 ** -8 * np.abs(yr) + 2.0 ** -20 * bound * k)


def test_split_matches_gguf() -> None:
    from gguf import GGMLQuantizationType

    from visa.models.loader import q4_1_split

    rng = np.random.default_rng(3)
    raw = gq.quantize(rng.standard_normal((8, 96)).astype(np.float32), GGMLQuantizationType.Q4_1)
    ref = gq.dequantize(raw, GGMLQuantizationType.Q4_1).astype(np.float32)
    assert np.array_equal(q4_1_split(raw, 8, 96).dequantize().view(np.uint32), ref.view(np.uint32))


def test_the_padding_slices_run_but_keep_their_dm() -> None:
    """The passes span both clusters' 256 slices (the fetch requires Cluster 2 and Slice 256, L1709–1710; N's 2
    slices of 32 rows padded, ``QS # 256``): only the occupied slices' DM is written, the other 510 slices' is
    never touched (the padding computes nothing a tensor holds)."""
    from visa.models.loader import Q4Weight

    n, k = 64, 576
    rng = np.random.default_rng(5)
    w = Q4Weight(rng.integers(0, 16, (n, k)).astype(np.int8), np.full((n, k // 32), 1 / 64, np.float16),
                 np.full((n, k // 32), -1 / 8, np.float16))
    deq = Q4Dequant(Gemm(AxisSet(M=1, N=n, K=k), "M", "N", "K", k_tile=k))
    ctx, w_dm = on_device(deq, w)
    assert deq.slice.size == 256 and deq.cluster.size == 2
    _, written = ctx.memory.chip(0).dm.read_view()
    slices = written.reshape(*written.shape[:2], -1).any(axis=-1)
    assert np.argwhere(slices).tolist() == [[0, 0], [0, 1]]
    assert np.array_equal(np.asarray(w_dm.logical("N K"), np.float32), w.dequantize())


def on_device(deq: Q4Dequant, w: Any, s_addr: int = 1 << 20) -> tuple[Context, Any]:
    """The Q4_1 weight ``w`` uploaded to a fresh device (nibbles at 0, scales at ``s_addr``) and dequantised there
    in one launch: the device and the bf16 DM tensor."""
    ctx = Context.acquire()
    q_hbm, s_hbm = deq.upload(ctx, w, 0, s_addr)
    got: dict[str, Any] = {}

    @device(chip=1)
    def kernel(ctx: Context, q: Any, s: Any) -> None:
        got["w"] = deq(ctx, Arena(), q, s)

    launch(kernel, ctx, q_hbm, s_hbm)
    return ctx, got["w"]
