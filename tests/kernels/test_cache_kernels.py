"""``visa.kernels.cache`` against numpy: the embedding gather (L7994–8005, L8241), the KV-cache append by
in-place DMA (L8286–8297), the causal mask by the branch log in the softmax and in attention (L8090–8100).

Integer and copy paths are exact (a gather and a DMA move bytes); float paths use the derived bounds of
:mod:`visa.kernels.bounds`.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, i32, launch
from visa.kernels import Arena, Attention, CausalMask, Embedding, KvCache, Rows, bounds
from visa.kernels.rows import MASKED_ID

F64 = npt.NDArray[np.float64]
RNG = np.random.default_rng(1414)
Hbm = HbmTensor[Any, Any, Any]


def put(ctx: Context, ax: AxisSet, array: Any, dtype: Any, text: str, address: int) -> Hbm:
    names = [a.strip() for a in text.split(",") if a.strip() != "1" and ax.size(a.strip()) > 1]
    host = HostTensor.from_numpy(np.asarray(array), dtype, ax.m[text], axes=" ".join(names))
    return host.to_hbm(ax.m["1"], ax.m[text], ctx.pdma, address)


def bf(array: Any) -> F64:
    """``array`` rounded to bf16 (nearest even), as float64."""
    return np.asarray(np.asarray(array, np.float32).astype(ml_dtypes.bfloat16), np.float64)


@pytest.mark.parametrize("tokens", [1, 8])
def test_embedding_gather_into_rows_and_hbm_exact_L7994_L8005(tokens: int) -> None:
    """``x_0 = gather(input, w_emb)`` by TensorDMA: row t of DM slice t (the Rows layout) and an HBM copy; both
    equal ``w_emb[ids]`` exactly; then RMSNorm reads the gathered rows directly (within its bound).  The gather
    is one tensor DMA whose IndirectLoop has one iteration per token."""
    ax = AxisSet(T=tokens, V=512, D=64)
    table = RNG.standard_normal((512, 64)).astype(np.float32)
    ids = RNG.integers(0, 512, tokens).astype(np.int32)
    emb = Embedding(ax, "V", "D", rows="T")
    rows = Rows(ax, "T", "D")
    ctx = Context.acquire()
    w = put(ctx, ax, table, bf16, "V, D", 0)
    idx = put(ctx, ax, ids if tokens > 1 else ids[0], i32, "T" if tokens > 1 else "1", 1 << 20)
    gain = put(ctx, ax, np.ones(64, np.float32), bf16, "D", 2 << 20)

    @device(chip=1)
    def kernel(ctx: Context, w: Hbm, idx: Hbm, gain: Hbm) -> tuple[Any, Hbm, Hbm]:
        arena = Arena()
        x = emb(ctx, arena, w, idx)
        h = rows.store(ctx, arena, rows.rms_norm(ctx, arena, x, rows.load_broadcast(ctx, arena, gain), eps=1e-5))
        return x, emb.to_hbm(ctx, arena, w, idx), h

    x, x_hbm, h = launch(kernel, ctx, w, idx, gain)
    want = bf(table)[ids]
    axes = "T D" if tokens > 1 else "D"
    assert np.array_equal(np.asarray(x.logical(axes), np.float64).reshape(tokens, 64), want)
    assert np.array_equal(np.asarray(x_hbm.logical(axes), np.float64).reshape(tokens, 64), want)
    ref = want / np.sqrt((want**2).mean(-1, keepdims=True) + 1e-5)
    got = np.asarray(h.logical(axes), np.float64).reshape(tokens, 64)
    assert np.all(np.abs(got - ref) <= bounds.rms_norm(ref, 64))
    gathers = [op for op in ctx.schedule.ops if op.name.startswith("gather")]
    assert len(gathers) == 2 and all(op.track == "tdma" for op in gathers)


@pytest.mark.parametrize("position", [0, 5, 31])
def test_kv_cache_append_in_place_exact_L8286_L8297(position: int) -> None:
    """``kv_cache_K[s − 1] = K_rope``, ``kv_cache_V[s − 1] = V_new``: a row of the K cache ``m["S, Dk"]`` and a
    column of the transposed V cache ``m["Dv, S"]``, each by one in-place DMA; every other byte is unchanged
    (exact), and an attention launched after it reads the new row (it waits for both appends)."""
    ax = AxisSet(T=1, S=32, Dk=32, Dv=32, Q=4)
    k0 = bf(RNG.standard_normal((32, 32)))
    v0 = bf(RNG.standard_normal((32, 32)))  # [S, Dv]
    k_new, v_new = bf(RNG.standard_normal(32)), bf(RNG.standard_normal(32))
    q = bf(RNG.standard_normal((4, 32)))
    ctx = Context.acquire()
    kc = put(ctx, ax, k0, bf16, "S, Dk", 0)
    vc = put(ctx, ax, v0.T, bf16, "Dv, S", 1 << 20)
    kn = put(ctx, ax, k_new, bf16, "T, Dk", 2 << 20)
    vn = put(ctx, ax, v_new, bf16, "T, Dv", 3 << 20)
    qh = put(ctx, ax, q, bf16, "Q, Dk", 4 << 20)
    att = Attention(ax, q="Q", s="S", dk="Dk", dv="Dv")

    @device(chip=1)
    def kernel(ctx: Context, kc: Hbm, vc: Hbm, kn: Hbm, vn: Hbm, qh: Hbm) -> Hbm:
        cache = KvCache(ax, kc, vc)
        k, v_t = cache.append(ctx, kn, vn, position)
        assert k is kc and v_t is vc  # in place: the same live tensors
        return att(ctx, Arena(), qh, k, v_t)

    out = launch(kernel, ctx, kc, vc, kn, vn, qh)
    k_want, v_want = k0.copy(), v0.copy()
    k_want[position], v_want[position] = k_new, v_new
    assert np.array_equal(np.asarray(kc.logical("S Dk"), np.float64), k_want)
    assert np.array_equal(np.asarray(vc.logical("Dv S"), np.float64), v_want.T)
    want, bound = bounds.attention(q, k_want, v_want, 1 / math.sqrt(32))
    assert np.all(np.abs(np.asarray(out.logical("Q Dv"), np.float64) - want) <= bound)
    k_app, v_app = [op for op in ctx.schedule.ops if op.name.startswith("to_hbm_view")]
    loads = [op for op in ctx.schedule.ops if op.name.startswith("hbm.to_dm")]
    k_load = next(op for op in loads if "S % 32, Dk" in op.name)  # the scores GEMM's w: the K cache
    v_load = next(op for op in loads if "Dv" in op.name)  # the second GEMM's w: the V cache
    assert k_load.start >= k_app.end and v_load.start >= v_app.end  # each read waits for its append
    assert v_app.end - v_app.start > k_app.end - k_app.start  # a column: 32 two-byte writes, a row: 64 bytes


def test_causal_softmax_by_the_branch_log_L8090_L8100() -> None:
    """Rows.softmax with a branch log from :class:`CausalMask` (32 × 32): masked positions are exactly 0 and the
    rest is numpy's softmax over ``j ≤ i`` within :func:`bounds.softmax`; the mask adds no pass."""
    ax = AxisSet(T=32, S=32, P=32)
    scores = bf(2 * RNG.standard_normal((32, 32)))
    mask = CausalMask(ax, "T", "S")
    rows = mask.rows
    ctx = Context.acquire()
    s_h = put(ctx, ax, scores, bf16, "T, S", 0)
    t_h = put(ctx, ax, CausalMask.table(32, 32), i32, "T, S", 1 << 20)

    @device(chip=1)
    def kernel(ctx: Context, s_h: Hbm, t_h: Hbm) -> tuple[Hbm, Hbm]:
        arena = Arena()
        log = mask.prefill_log(ctx, arena, t_h)
        x = rows.load(ctx, arena, s_h)
        return rows.store(ctx, arena, rows.softmax(ctx, arena, x, log=log)), rows.store(
            ctx, arena, rows.softmax(ctx, arena, x))

    masked, plain = launch(kernel, ctx, s_h, t_h)
    got = np.asarray(masked.logical("T S"), np.float64)
    keep = np.tril(np.ones((32, 32), bool))
    assert np.all(got[~keep] == 0.0)
    for i in range(32):
        z = scores[i, :i + 1]
        e = np.exp(z - z.max())
        want = e / e.sum()
        assert np.all(np.abs(got[i, :i + 1] - want) <= bounds.softmax(want, 32, float(z.max() - z.min())))
    # the same three passes with and without the log (the sum's reciprocal on the FpDiv stage of the sum's own
    # pass, L4704–4708): reading it costs nothing (one VRF word per element, as an operand, L5270); the two Logic
    # ALUs add their fill latency (hw.vector.alu_latency_cycles each) to each of the passes, which all read the scores
    main = [op for op in ctx.schedule.ops if op.track == "main"]
    assert len(main) == 6
    alu = 2 * ctx.hw.vector.alu_latency_cycles
    assert [a.cycles - b.cycles for a, b in zip(main[:3], main[3:], strict=True)] == [alu, alu, alu]
    assert np.any(np.asarray(plain.logical("T S"), np.float64)[~keep] > 0)  # without the log nothing is masked


def test_decode_log_masks_the_unwritten_cache_positions() -> None:
    """The decode row of the mask table, gathered by an on-device position index and broadcast to the G = 4
    query rows: attention over a cache of 32 whose positions > ``position`` hold huge keys equals numpy's over
    the filled part (the huge keys would dominate if the log leaked)."""
    ax = AxisSet(G=4, S=32, P=32, Dk=32, Dv=32)
    position = 9
    keys = bf(RNG.standard_normal((32, 32)))
    keys[position + 1:] = 1000.0
    v = bf(RNG.standard_normal((32, 32)))
    q = bf(RNG.standard_normal((4, 32)))
    mask = CausalMask(ax, "G", "S", positions="P")
    att = Attention(ax, q="G", s="S", dk="Dk", dv="Dv")
    ctx = Context.acquire()
    args = (put(ctx, ax, q, bf16, "G, Dk", 0), put(ctx, ax, keys, bf16, "S, Dk", 1 << 20),
            put(ctx, ax, v.T, bf16, "Dv, S", 2 << 20), put(ctx, ax, CausalMask.table(32, 32), i32, "P, S", 3 << 20),
            put(ctx, ax, np.int32(position), i32, "1", 4 << 20))

    @device(chip=1)
    def kernel(ctx: Context, qh: Hbm, kh: Hbm, vh: Hbm, th: Hbm, pos: Hbm) -> Hbm:
        arena = Arena()
        return att(ctx, arena, qh, kh, vh, log=mask.decode_log(ctx, arena, th, pos))

    out = launch(kernel, ctx, *args)
    want, bound = bounds.attention(q, keys[:position + 1], v[:position + 1], 1 / math.sqrt(32))
    assert np.all(np.abs(np.asarray(out.logical("G Dv"), np.float64) - want) <= bound)
    assert MASKED_ID == 8  # group One (bit 3), the group the Logic ops select


@pytest.mark.parametrize("position", [32, -1])
def test_kv_cache_append_outside_the_cache_is_refused_before_writing(position: int) -> None:
    """A position outside the cache is the tile's ``LayoutError`` (axis S, a fix naming the last position);
    both tiles are checked before either DMA, so neither cache is written."""
    from visa import LayoutError

    ax = AxisSet(T=1, S=32, Dk=32, Dv=32)
    ctx = Context.acquire()
    kc = put(ctx, ax, np.zeros((32, 32)), bf16, "S, Dk", 0)
    vc = put(ctx, ax, np.zeros((32, 32)), bf16, "Dv, S", 1 << 20)
    kn, vn = put(ctx, ax, np.ones(32), bf16, "T, Dk", 2 << 20), put(ctx, ax, np.ones(32), bf16, "T, Dv", 3 << 20)
    with pytest.raises(LayoutError) as err:
        KvCache(ax, kc, vc).append(ctx, kn, vn, position)
    assert "axis S" in str(err.value) and "at most 31" in str(err.value)
    assert not np.asarray(kc.logical("S Dk"), np.float64).any()
    assert not np.asarray(vc.logical("Dv S"), np.float64).any()
    assert not [op for op in ctx.schedule.ops if op.name.startswith("to_hbm_view")]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(s=st.sampled_from([4, 8, 16]), dk=st.sampled_from([4, 8, 32]), dv=st.sampled_from([4, 16]),
       data=st.data())
def test_kv_cache_append_agrees_with_numpy(s: int, dk: int, dv: int, data: st.DataObject) -> None:
    """Property (small sizes): after appends at distinct positions in any order, both caches equal numpy's with
    those rows (K) and columns (V) replaced, byte for byte (i32 values, exact)."""
    ax = AxisSet(T=1, S=s, Dk=dk, Dv=dv)
    positions = data.draw(st.lists(st.integers(0, s - 1), min_size=1, max_size=3, unique=True))
    ctx = Context.acquire()
    k0 = RNG.integers(-999, 999, (s, dk)).astype(np.int32)
    v0 = RNG.integers(-999, 999, (s, dv)).astype(np.int32)
    cache = KvCache(ax, put(ctx, ax, k0, i32, "S, Dk", 0), put(ctx, ax, v0.T.copy(), i32, "Dv, S", 1 << 20))
    for n, p in enumerate(positions):
        kr = RNG.integers(-999, 999, dk).astype(np.int32)
        vr = RNG.integers(-999, 999, dv).astype(np.int32)
        cache.append(ctx, put(ctx, ax, kr, i32, "T, Dk", (2 + 2 * n) << 20),
                     put(ctx, ax, vr, i32, "T, Dv", (3 + 2 * n) << 20), p)
        k0[p], v0[p] = kr, vr
    assert np.array_equal(cache.k.logical("S Dk"), k0)
    assert np.array_equal(cache.v_t.logical("Dv S"), v0.T)
