"""``Gemm`` with x in DM and its output kept in DM (``out_dm``; issue 25's decode step): the same bits as the
HBM round trip (x stored to HBM and loaded back, the output stored and loaded into rows), by one DMA DM → DM
each way (L2659–2681) instead of two; the refusals of a streamed GEMM and of one in N parts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import RNGD, AxisSet, Context, HbmTensor, HostTensor, LayoutError, bf16, device, launch
from visa.kernels import Arena, Gemm, Rows


@pytest.mark.parametrize(("n", "k"), [(96, 64), (576, 576), (64, 1536)])
def test_gemm_in_and_out_of_dm_is_the_hbm_round_trip(n: int, k: int) -> None:
    ax = AxisSet(T=1, N=n, K=k)
    m = ax.m
    rng = np.random.default_rng(n + k)
    xs = HostTensor.from_numpy(rng.standard_normal(k).astype(np.float32), bf16, m["T, K"], axes="K")
    ws = HostTensor.from_numpy(rng.standard_normal((n, k)).astype(np.float32) / 8, bf16, m["N, K"], axes="N K")
    gemm = Gemm(ax, "T", "N", "K", k_tile=k if k <= 1024 else 768)
    rows_k, rows_n = Rows(ax, "T", "K"), Rows(ax, "T", "N")

    def run(dm: bool) -> tuple[np.ndarray, int]:
        ctx = Context(RNGD)
        xh = xs.to_hbm(m["1"], m["T, K"], ctx.pdma, 0)
        wh = ws.to_hbm(m["1"], m["N, K"], ctx.pdma, 1 << 28)

        @device(chip=1)
        def kernel(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any]) -> Any:
            arena = Arena()
            rows = rows_k.load(ctx, arena, x)  # x as a row-wise kernel leaves it: one row on slice 0
            if dm:
                out = gemm(ctx, arena, rows, w, double_buffer=False, out_dm=True)
            else:
                out = gemm(ctx, arena, rows_k.store(ctx, arena, rows), w, double_buffer=False)
            return rows_n.store(ctx, arena, rows_n.load(ctx, arena, out))

        got = launch(kernel, ctx, xh, wh).to_host(m["T, N"], ctx.pdma).numpy(axes="N")
        return np.asarray(got, np.float32), sum(op.name.startswith(("dm.to_", "hbm.to_")) for op in ctx.schedule.ops)

    (dm_v, dm_dmas), (hbm_v, hbm_dmas) = run(True), run(False)
    assert np.array_equal(dm_v.view(np.uint32), hbm_v.view(np.uint32))
    assert dm_dmas == hbm_dmas - 2  # (x: one DM → DM for a store and a load; the output: the same)


def _operands(ax: AxisSet) -> tuple[Context, Any, Any]:
    """A context with x (T, K) and w (N, K) of ones in HBM (the refusals' operands)."""
    m = ax.m
    ctx = Context(RNGD)
    x = HostTensor.from_numpy(np.ones(64, np.float32), bf16, m["T, K"], axes="K").to_hbm(m["1"], m["T, K"], ctx.pdma, 0)
    w = HostTensor.from_numpy(np.ones((96, 64), np.float32), bf16, m["N, K"], axes="N K").to_hbm(
        m["1"], m["N, K"], ctx.pdma, 1 << 28)
    return ctx, x, w


def test_gemm_in_dm_refuses_the_streamed_mode_and_n_parts() -> None:
    ax = AxisSet(T=1, N=96, K=64, V=8192 + 32)
    ctx, x, w = _operands(ax)

    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any]) -> Any:
        Gemm(ax, "T", "N", "K")(ctx, Arena(), x, w, stream=True, out_dm=True)

    with pytest.raises(LayoutError, match="runs resident") as streamed:
        launch(kernel, ctx, x, w)
    # the refusal names the call, the level, the mapping and the axis (the output's: x is in HBM), and the fix
    err = streamed.value
    assert (err.call, err.level, err.mapping, err.axis) == ("visa.kernels.Gemm('T', 'N', 'K')", "DM", 'm["T, N"]', "N")
    assert "the output is in DM" in str(err) and 'm["T, N"]' in str(err) and "stream=False" in str(err)

    @device(chip=1)
    def parts(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any]) -> Any:
        Gemm(ax, "T", "V", "K")(ctx, Arena(), x, w, out_dm=True)

    with pytest.raises(LayoutError, match="in N parts") as in_parts:
        launch(parts, ctx, x, w)
    err = in_parts.value
    assert (err.call, err.level, err.mapping, err.axis) == ("visa.kernels.Gemm('T', 'V', 'K')", "DM", 'm["T, V"]', "V")
    assert "V = 8224 is not a whole number of N tiles" in str(err) and "out_dm=False" in str(err)


@pytest.mark.parametrize("case", ["streamed", "parts"])
def test_gemm_refuses_a_view_of_a_dm_tensor_as_it_refuses_the_tensor(case: str) -> None:
    """A view of a DM tensor is x in DM too: refused before any DMA, not failing mid-run in the streamed mode."""
    ax = AxisSet(T=1, N=96, K=64, V=8192 + 32)
    ctx, x, w = _operands(ax)
    seen: list[int] = []

    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any]) -> Any:
        arena = Arena()
        view = Rows(ax, "T", "K").load(ctx, arena, x).view()
        seen.append(len(ctx.schedule.ops))
        if case == "streamed":
            Gemm(ax, "T", "N", "K")(ctx, arena, view, w, stream=True)
        else:
            Gemm(ax, "T", "V", "K")(ctx, arena, view, w)

    with pytest.raises(LayoutError, match="runs resident" if case == "streamed" else "in N parts") as refused:
        launch(kernel, ctx, x, w)
    assert seen and len(ctx.schedule.ops) == seen[0]  # (refused before the GEMM scheduled anything)
    assert (refused.value.mapping, refused.value.axis) == ('m["T, K"]', "K")  # x's: it is the one in DM
    assert "x is in DM" in str(refused.value)


def test_gemm_out_dm_gives_back_its_output_dm_when_the_run_is_refused() -> None:
    """``out_dm=True`` takes the output's DM before the run; a refusal inside the run leaves the arena as it was."""
    ax = AxisSet(T=1, N=96, K=64, M=128)
    ctx, x, w = _operands(ax)
    marks: list[tuple[int, int]] = []

    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any]) -> Any:
        arena = Arena()
        arena.take_dm(64)
        before = arena.dm
        try:  # a w of 96 rows where the GEMM's N is 128: its DMA to DM refuses, inside the run
            Gemm(ax, "T", "M", "K")(ctx, arena, x, w, double_buffer=False, out_dm=True)
        finally:
            marks.append((before, arena.dm))

    with pytest.raises(LayoutError, match="does not use axis N"):
        launch(kernel, ctx, x, w)
    assert marks and marks[0][0] == marks[0][1]
