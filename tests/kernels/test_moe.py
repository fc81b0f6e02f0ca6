"""The MoE block (examples/moe_block.py; manual L8432–8721) and its kernels (:mod:`visa.kernels.moe`).

The routing's integer paths — ranks, TopK indices and scores, the expert mask, both cumsums, Num_Blocks,
Expert_IDs, Scatter_Idx — are compared **exactly** with numpy's routing in the manual's terms, for several
shapes and for routers that leave experts empty; the float stages within the bounds of
:mod:`visa.kernels.bounds`; the schedule: a guarded block with no tokens costs only its guard.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.example_loader import load_example
from visa import AxisSet, Context, HostTensor, bf16, f32, i32
from visa.engines.guard import guard_cycles
from visa.errors import HardwareLimitError, LayoutError
from visa.kernels import Arena, bounds
from visa.kernels.moe import MoeBlock, MoeRouting, TokenRows, grid_size, logger

MOE = load_example("moe_block")


def _route(t: int, e: int, k: int, block: int, scores: np.ndarray) -> tuple[Any, Any, Context]:
    ax = AxisSet(T=t, E=e, K=k, Bt=block)
    routing = MoeRouting(ax)
    m = ax.m
    ctx = Context.acquire()
    ctx.num_chips = 1
    s = HostTensor.from_numpy(scores.astype(np.float32), bf16, m["T, E"], axes="T E").to_hbm(
        m["1"], m["T, E"], ctx.pdma, 0)
    consts = {name: HostTensor.from_numpy(arr, i32, m[routing.constant_text()[name]]).to_hbm(
        m["1"], m[routing.constant_text()[name]], ctx.pdma, (n + 1) << 20)
        for n, (name, arr) in enumerate(routing.constants().items())}
    return routing, routing(ctx, Arena(), s, consts), ctx


def _tk(tensor: Any, k: int) -> np.ndarray:
    """A ``[T, K]`` tensor's values (an axis of size 1 sets no index: K = 1 reads as ``[T]``)."""
    return tensor.logical("T K") if k > 1 else tensor.logical("T")[:, None]


def _assert_routing(routing: MoeRouting, r: Any, scores: np.ndarray) -> dict[str, np.ndarray]:
    k = routing.sk
    want = MOE.reference_routing(np.asarray(scores, np.float64), routing.sk, routing.sb, routing.grid)
    assert np.array_equal(r.rank.logical("T E_i"), want["rank"])
    assert np.array_equal(_tk(r.packed, k) & 0xFFFF, want["indices"])
    assert np.array_equal(_tk(r.indices, k), want["indices"])
    assert np.array_equal(_tk(r.scores, k), want["scores"])
    assert np.array_equal(r.mask.logical("T E"), want["mask"])
    assert np.array_equal(r.cumsum.logical("T E"), want["cumsum"])
    assert np.array_equal(r.blocks.logical("E"), want["blocks"])
    assert np.array_equal(r.end.logical("E"), want["end"])
    assert np.array_equal(r.expert_ids.logical("G"), want["expert_ids"])
    assert np.array_equal(r.block_count.logical("G"), want["block_count"])
    assert np.all((r.block_count.logical("G") > 0) == (want["expert_ids"] < routing.se))
    assert np.array_equal(_tk(r.scatter_idx, k), want["scatter_idx"])
    # the addresses are a permutation into [0, G·B): each block holds one expert's tokens, from its front
    idx = _tk(r.scatter_idx, k)
    assert len(np.unique(idx)) == idx.size and idx.max() < routing.grid * routing.sb
    return want


@pytest.mark.parametrize(("t", "e", "k", "block", "seed"), [
    (16, 8, 2, 4, 0), (8, 4, 1, 2, 1), (32, 8, 4, 8, 2), (12, 8, 3, 1, 3), (24, 4, 2, 16, 4)])
def test_routing_exact_against_numpy_l8540_l8663(t: int, e: int, k: int, block: int, seed: int) -> None:
    """Random bf16 scores (negatives included: the comparison trick, L8555): every integer stage exact."""
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal((t, e)) * 3).astype(ml_dtypes.bfloat16)
    routing, r, _ = _route(t, e, k, block, scores)
    want = _assert_routing(routing, r, scores)
    # the TopK is numpy's top-k by value (ties broken towards the higher index, by the packed index bits)
    order = np.argsort(-scores.astype(np.float64), axis=1, kind="stable")[:, :k]
    tied = np.sort(-scores.astype(np.float64), axis=1)
    if not np.any(tied[:, k - 1] == tied[:, min(k, e - 1)]) or k == e:
        assert np.array_equal(np.sort(order, axis=1), want["indices"])


def test_routing_with_empty_experts_and_ties() -> None:
    """Every token prefers experts 0 and 1 (the others get no token: Num_Blocks 0, no block, Expert_IDs skip
    them), with exact ties between experts 2..7: the packed index breaks them, never a duplicate."""
    t, e, k, block = 16, 8, 2, 4
    scores = np.full((t, e), -1.5, np.float32)
    scores[:, 0], scores[:, 1] = 2.0, np.linspace(0.5, 1.5, t)
    scores = scores.astype(ml_dtypes.bfloat16)
    routing, r, _ = _route(t, e, k, block, scores)
    want = _assert_routing(routing, r, scores)
    assert want["blocks"].tolist() == [4, 4, 0, 0, 0, 0, 0, 0]
    assert r.expert_ids.logical("G").tolist() == [0] * 4 + [1] * 4 + [e] * (routing.grid - 8)


def test_grid_size_is_the_worst_case_l8617() -> None:
    """The manual's bound (T·K − E)/B + E when every expert has a token; brute force over small histograms."""
    assert grid_size(16, 8, 2, 4) == (16 * 2 - 8) // 4 + 8
    rng = np.random.default_rng(0)
    for _ in range(200):
        t, e, k, b = int(rng.integers(1, 12)), int(rng.integers(1, 9)), 1, int(2 ** rng.integers(0, 4))
        k = int(rng.integers(1, e + 1))
        counts = np.bincount(rng.integers(0, e, t * k), minlength=e)
        assert int(np.sum(-(-counts // b))) <= grid_size(t, e, k, b)
    assert logger(1).tolist() == [0] and logger(4).tolist() == [0, 1, 1, 2]


def test_routing_refusals() -> None:
    with pytest.raises(LayoutError, match="four-lane packets") as err:
        MoeRouting(AxisSet(T=8, E=6, K=2, Bt=4))
    v = err.value
    assert v.call and v.level == "Packet" and v.axis == "E" and "4 or 8" in (v.fix or "")
    with pytest.raises(HardwareLimitError, match="power of two") as err2:
        MoeRouting(AxisSet(T=8, E=4, K=2, Bt=3))  # (E = 8 routes any B up to 32: the wide routing)
    assert err2.value.axis == "Bt" and err2.value.fix
    with pytest.raises(LayoutError, match="at least two tokens|one i32") as err4:
        MoeRouting(AxisSet(T=1, E=8, K=2, Bt=4))
    assert err4.value.axis == "T" and "two tokens" in (err4.value.fix or "")
    with pytest.raises(LayoutError, match="between 1 and"):
        MoeRouting(AxisSet(T=8, E=8, K=9, Bt=4))
    with pytest.raises(LayoutError, match="has size 3, the routing needs"):
        MoeRouting(AxisSet(T=8, E=8, K=2, Bt=4, G=3))
    for bad in (1, 3, 5):
        with pytest.raises(LayoutError, match="one Way4 packet") as err3:
            TokenRows(AxisSet(T=8, K=bad, D=32))
        assert err3.value.axis == "K" and err3.value.level == "Packet" and err3.value.fix


def test_token_rows_softmax_and_weighted_sum() -> None:
    """The routing weights (max-subtracted softmax over K, f32) and the weighted sum, one token per slice,
    against float64 numpy within bounds.softmax_rel and bounds.weighted_sum."""
    ax = AxisSet(T=8, K=4, D=32)
    m = ax.m
    rows = TokenRows(ax)
    ctx = Context.acquire()
    ctx.num_chips = 1
    rng = np.random.default_rng(9)
    s = (rng.standard_normal((8, 4)) * 4).astype(np.float32)
    y = rng.standard_normal((8, 4, 32)).astype(ml_dtypes.bfloat16).astype(np.float64)
    arena = Arena()
    s_dm = rows.spread(ctx, arena, HostTensor.from_numpy(s, f32, m["T, K"], axes="T K").to_hbm(
        m["1"], m["T, K"], ctx.pdma, 0))
    w = rows.softmax(ctx, arena, s_dm)
    got_w = w.logical("T K").astype(np.float64)
    want_w = np.exp(s - s.max(axis=1, keepdims=True)).astype(np.float64)
    want_w /= want_w.sum(axis=1, keepdims=True)
    spread = float(np.max(s.max(axis=1) - s.min(axis=1)))
    assert np.all(np.abs(got_w - want_w) <= bounds.softmax_rel(4, spread) * want_w + 2.0**-149)
    y_dm = HostTensor.from_numpy(y.astype(np.float32), bf16, m["T, K, D"], axes="T K D").to_hbm(
        m["1"], m["T, K, D"], ctx.pdma, 1 << 20).to_dm(rows.cluster, rows.slice, m["K, D"], ctx.tdma,
                                                         arena.take_dm(2 * 4 * 32))
    out = rows.weighted_sum(ctx, arena, y_dm, rows.to_vrf(ctx, arena, w))
    want = np.einsum("tkd,tk->td", y, got_w)
    assert np.all(np.abs(out.logical("T D") - want) <= bounds.weighted_sum(y, got_w))


def test_moe_block_every_stage_and_the_guard_cost_l8596_l8707() -> None:
    """The example, with a router skewed towards the first experts so that blocks of the grid stay empty: every
    stage is checked inside ``run``; here, the schedule — a skipped block records one operation, its guard,
    whose cycles are the guard's read of the block's 8-byte count (startup + one request, L2467–2469), and
    no gather or GEMM; a live block records the guard, the id-indexed weight gathers and the GEMMs."""
    res = MOE.run(seed=3, skew=6.0)
    ctx, ids = res["ctx"], res["expert_ids"]
    empty = [g for g in range(MOE.G) if ids[g] >= MOE.E]
    assert empty and res["live"] and len(res["live"]) + len(empty) == MOE.G
    ops = ctx.schedule.ops[res["guards"]:res["blocks_end"]]
    guards = [i for i, op in enumerate(ops) if op.name.startswith("ctx.main.when")]
    assert len(guards) == MOE.G
    spans = [ops[a:b] for a, b in zip(guards, [*guards[1:], len(ops)], strict=True)]
    for g, span in enumerate(spans):
        assert span[0].name.endswith("run" if g in res["live"] else "skip")
        if g in empty:
            assert len(span) == 1 and span[0].cycles == guard_cycles(ctx.hw, 8)
        else:
            assert any("gather" in op.name for op in span) and len(span) > 5
    # the empty blocks together cost their guards: back to back on the main track
    tail = [op for span in spans[len(res["live"]):] for op in span]
    assert sum(op.cycles for op in tail) == len(empty) * guard_cycles(ctx.hw, 8)


@pytest.mark.parametrize(("sizes", "skew"), [
    ({"T": 32, "D": 32, "F": 64, "E": 4, "K": 4, "Bt": 8}, 0.0),  # every expert selected by every token
    ({"T": 8, "D": 96, "F": 32, "E": 8, "K": 2, "Bt": 2}, 3.0),
])
def test_moe_block_other_shapes(sizes: dict[str, int], skew: float) -> None:
    """The same block built by :class:`MoeBlock` for other sizes: every stage checked by the example's ``run``."""
    block = MoeBlock(AxisSet(**sizes))
    res = MOE.run(seed=11, skew=skew, block=block)
    assert res["live"] and set(res["errors"]) >= {"router", "routing weights", "weighted sum"}
    if sizes["K"] == sizes["E"]:  # each expert gets all T tokens: T / B full blocks each, the rest skipped
        assert len(res["live"]) == sizes["E"] * sizes["T"] // sizes["Bt"] < block.routing.grid


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=st.integers(2, 12), e=st.sampled_from([4, 8]), data=st.data(), block=st.sampled_from([1, 2, 4, 8]))
def test_routing_property_against_brute_force(t: int, e: int, data: Any, block: int) -> None:
    """Any T, E of 4 or 8, any K ≤ E, any power-of-two B, scores drawn from a few bf16 values (many ties,
    negatives, ±0): the device's routing equals numpy's, exactly."""
    k = data.draw(st.integers(1, e))
    values = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0]
    scores = np.array(data.draw(st.lists(st.sampled_from(values), min_size=t * e, max_size=t * e)), np.float32)
    scores = scores.reshape(t, e).astype(ml_dtypes.bfloat16)
    routing, r, _ = _route(t, e, k, block, scores)
    _assert_routing(routing, r, scores)


# ----------------------------------------------------------------------------------------- the manual's sizes


@pytest.mark.parametrize(("t", "e", "k", "block", "seed"), [(16, 16, 1, 3, 6), (12, 16, 4, 5, 7), (8, 8, 2, 6, 8)])
def test_wide_routing_exact_against_numpy_l8459(t: int, e: int, k: int, block: int, seed: int) -> None:
    """The routing over several packets per token (E > 8) or a block that is no power of two (issue 27 item 4):
    TopK and FilterCompaction across packets, Expert_IDs by compacting the manual's Grid(e, i), blocks by
    compare: every integer stage exact against numpy."""
    rng = np.random.default_rng(seed)
    scores = (rng.standard_normal((t, e)) * 3).astype(ml_dtypes.bfloat16)
    routing, r, _ = _route(t, e, k, block, scores)
    assert routing.wide is not None
    _assert_routing(routing, r, scores)


def test_routing_at_e_128_k_8_l8459_l8460() -> None:
    """E = 128 experts ("typically 128", L8459), K = 8 (qwen3, L8460), B = 12 rows per block (no power of two):
    every stage exact against numpy (K = 1 and 4 at E = 128: benchmarks/bench_moe128.py, run once)."""
    rng = np.random.default_rng(27)
    scores = (rng.standard_normal((16, 128)) * 3).astype(ml_dtypes.bfloat16)
    routing, r, ctx = _route(16, 128, 8, 12, scores)
    _assert_routing(routing, r, scores)
    ranks = [op for op in ctx.schedule.ops if op.track == "main" and "vector" in op.name]
    assert ranks  # the routing ran as Tensor Unit passes, one token per slice for the per-token stages
