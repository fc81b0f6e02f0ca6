"""``visa.kernels.all_reduce`` (manual "Chip/Cluster Reduce", L7382–7610) and the kernels' ``chip`` mapping.

i32 sums are exact (wrapping AddFxp, L4826) on 2 and 4 chips by both algorithms; the cycles follow the schedule
the data dependences imply: a butterfly round's shuffle reads the previous round's sum, so rounds run back to
back (shuffle, add, shuffle, add …); a ring's shuffles read only x, so they run back to back on the tensor DMA
and each add waits for its shuffle.  A float AllReduce is within :func:`visa.kernels.bounds.all_reduce` and the
butterfly's result is bitwise equal on every chip.  A Gemm with ``chip="C"`` contracts each chip's shard.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from visa import RNGD, AxisSet, Context, HostTensor, bf16, device, f32, i32, launch
from visa.errors import DtypeError, LayoutError
from visa.kernels import Arena, Gemm, all_reduce, bounds
from visa.kernels.collectives import rounds


def _run(n: int, algorithm: str, x: Any, dtype: Any) -> tuple[Any, list[Any]]:
    ax = AxisSet(C=n, S=16, D=128)
    m = ax.m
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, dtype, m["C, S, D"], axes="C S D").to_hbm(m["C"], m["S, D"], ctx.pdma, 0)

    @device(chip=n)
    def kernel(ctx: Context, xh: Any) -> Any:
        arena = Arena()
        xd = xh.to_dm(m["1 # 2"], m["S # 256"], m["D"], ctx.tdma, arena.take_dm(4 * 128))
        return all_reduce(ctx, ax, arena, xd, algorithm=algorithm)

    first = len(ctx.schedule.ops)
    out = launch(kernel, ctx, xh)
    return out, [op for op in ctx.schedule.ops[first:] if op.track != "pdma"]


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("algorithm", ["butterfly", "ring"])
def test_all_reduce_i32_exact_and_cycles_follow_the_dependences(n: int, algorithm: str) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(-(1 << 30), 1 << 30, size=(n, 16, 128)).astype(np.int32)  # sums wrap: AddFxp, L4826
    out, ops = _run(n, algorithm, x, i32)
    want = x.astype(np.int64).sum(axis=0).astype(np.int32)
    assert np.array_equal(out.logical(axes="C S D"), np.broadcast_to(want, (n, 16, 128)))
    load, rest = ops[0], ops[1:]
    shuffles = [op for op in rest if op.track == "tdma"]
    adds = [op for op in rest if op.track == "main"]
    r = rounds(n, algorithm)
    assert len(shuffles) == len(adds) == r == (n.bit_length() - 1 if algorithm == "butterfly" else n - 1)
    sh, ad = shuffles[0].end - shuffles[0].start, adds[0].end - adds[0].start
    assert all(op.end - op.start == sh for op in shuffles) and all(op.end - op.start == ad for op in adds)
    assert shuffles[0].start == load.end  # the first shuffle reads the loaded x
    h = RNGD.timing.context_handoff_cycles  # each wait on the other context (DMA ↔ main) adds the hand-off
    for k in range(r):
        assert adds[k].start == max(shuffles[k].end + h, adds[k - 1].end if k else 0)  # an add needs its shuffle
    if algorithm == "butterfly":  # round k + 1 shuffles round k's sum: strictly serial
        assert all(shuffles[k + 1].start == adds[k].end + h for k in range(r - 1))
        assert adds[-1].end - load.end == r * (sh + ad) + (2 * r - 1) * h
    else:  # the ring's shuffles read x only: each issues as soon as the add written before it issues (in-order
        # issue, L7046–7055) and its engine is free
        assert all(shuffles[k + 1].start == max(shuffles[k].end, adds[k].start) for k in range(r - 1))
        if sh + h >= ad:
            assert adds[-1].end - load.end == r * (sh + h) + ad


@pytest.mark.parametrize("n", [2, 4])
def test_all_reduce_bf16_butterfly_within_bound_and_equal_on_every_chip(n: int) -> None:
    rng = np.random.default_rng(10 + n)
    x = rng.standard_normal((n, 16, 128)).astype(ml_dtypes.bfloat16).astype(np.float32)
    out, _ = _run(n, "butterfly", x, bf16)
    got = np.asarray(out.logical(axes="C S D"), np.float64)
    want, bound = bounds.all_reduce(x.astype(np.float64), rounds(n))
    assert np.all(np.abs(got - want) <= bound)
    assert all(np.array_equal(got[0], got[c]) for c in range(n))  # a + b = b + a: replicas stay equal


def test_all_reduce_f32_ring_within_its_deeper_bound() -> None:
    n = 4
    x = np.random.default_rng(20).standard_normal((n, 16, 128)).astype(np.float32)
    out, _ = _run(n, "ring", x, f32)
    assert out.dtype is f32
    got = np.asarray(out.logical(axes="C S D"), np.float64)
    want, bound = bounds.all_reduce(x.astype(np.float64), rounds(n, "ring"), cast=False)  # γ_{n−1}, no bf16
    assert np.all(np.abs(got - want) <= bound)


def test_all_reduce_refusals_name_the_fix() -> None:
    x = np.zeros((2, 16, 128), np.float32)
    with pytest.raises(DtypeError, match='algorithm="butterfly"'):
        _run(2, "ring", x, bf16)
    with pytest.raises(LayoutError, match="power of two"):
        _run(3, "butterfly", np.zeros((3, 16, 128), np.int32), i32)
    with pytest.raises(LayoutError, match="unknown AllReduce"):
        _run(2, "tree", np.zeros((2, 16, 128), np.int32), i32)


def test_gemm_with_a_chip_axis_contracts_each_chips_shard_in_one_launch() -> None:
    n = 2
    ax = AxisSet(C=n, M=2, N=64, K=64)
    m = ax.m
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, 2, 64)).astype(ml_dtypes.bfloat16).astype(np.float32)
    w = rng.standard_normal((n, 64, 64)).astype(ml_dtypes.bfloat16).astype(np.float32)
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, bf16, m["C, M, K"], axes="C M K").to_hbm(m["C"], m["M, K"], ctx.pdma, 0)
    wh = HostTensor.from_numpy(w, bf16, m["C, N, K"], axes="C N K").to_hbm(m["C"], m["N, K"], ctx.pdma, 1 << 20)
    gemm = Gemm(ax, chip="C")

    @device(chip=n)
    def kernel(ctx: Context, xh: Any, wh: Any) -> Any:
        return gemm(ctx, Arena(), xh, wh)

    out = launch(kernel, ctx, xh, wh)
    assert out.levels["Chip"] == m["C"]
    got = np.asarray(out.logical(axes="C M N"), np.float64)
    for c in range(n):
        xc, wc = x[c].astype(np.float64), w[c].astype(np.float64)
        assert np.all(np.abs(got[c] - xc @ wc.T) <= bounds.gemm(xc, wc, 1))
    assert not np.allclose(got[0], got[1])  # each chip used its own shard
