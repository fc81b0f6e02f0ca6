"""A Mixture-of-Experts block (manual "Mixture of Experts", L8432–8721) end to end on the simulator.

T = 16 tokens of D = 64 go through a router (E = 8 experts, top K = 2) and the blockwise expert computation of
"MoE Implementation on TCP" (L8527–8721), every stage on the device:

1. router ``scores = x · W_routerᵀ`` — :class:`~visa.kernels.Gemm` (L8474–8480);
2. branchless TopK — bit packing with the comparison trick, all-to-all ranking, ``vector_filter`` packing the
   ranks ``< K`` (FilterCompaction), unpacking (L8540–8589) — :class:`~visa.kernels.moe.MoeRouting`;
3. routing weights: softmax over the K selected scores (L8590–8594) — :class:`~visa.kernels.moe.TokenRows`;
4. expert mask, cumsum over the tokens with the carried operand (``OperandRead(1, 2)`` / ``WriteOperand(0, 1)``
   and the static branch logger, L8708–8721), Count, Num_Blocks, the cumsum over the experts, Expert_IDs and
   Scatter_Idx (L8621–8663) — :class:`~visa.kernels.moe.MoeRouting`;
5. dispatch: ``x_blocked[Scatter_Idx[t, k]] = x[t]`` by one scatter DMA (L8664–8672);
6. per block g of the worst-case grid G = 14 (L8617–8620): ``ctx.main.when(expert_ids, …)`` guards the block
   (an empty block costs only the guard, L8616); a live block gathers its expert's W_up and W_down by
   ``table.view().gather(m["E"], id)`` (L8676–8681) and runs ``up = x_g · W_up[e]ᵀ``, ``y_g = up · W_down[e]ᵀ``
   (L8682–8684) — two :class:`~visa.kernels.Gemm`;
7. combine: ``y_restored = gather(y_blocked, Scatter_Idx)`` (L8692–8695) into one token per slice, and
   ``moe_out = Σ_k w[t, k] · y_restored[t, k]`` (L8697–8705) — :class:`~visa.kernels.moe.TokenRows`.

Departures from the manual, with lines:

- **Scale**: T = 16, D = 64, F = 128, E = 8, K = 2, B = 4 rows per block (the manual: E typically 128, K of
  1/4/8, L8456–8460, B open).
- **Router padding**: the GEMM computes 32 columns (a slice's 8 Rows × 4, :class:`~visa.kernels.Gemm`) of which
  the first E are the scores; W_router is stored ``[32, D]`` with zero rows beyond E and transposed
  (``x · wᵀ``) — the routing reads the view ``m["T, E # 32"]``.
- **Expert_Mask** is ``rank < K`` over ``T × E`` (the one-hot of the TopK indices summed over K: the K indices of
  a token are distinct), and its cumsum runs over the tokens, not over ``(T, K)`` (L8627–8644): the Token_Rank
  gathered at ``TopK_Indices`` is the same number, and FilterCompaction with the TopK's branch log (the ranks)
  does the gather — it packs in expert order, as the TopK indices are packed.
- **Count** is the cumsum's last row (the histogram, L8631–8633, without a second reduction).
- **Expert_IDs** is ``#{e : End[e] ≤ g}`` (an all-to-all compare of the experts' block ends against
  Block_Range and a reduce), not ``filter_compaction(Grid)`` over ``E × G`` (L8648–8660): FilterCompaction
  packs within a packet (L2324, L8580–8584), and the Grid's rows are of data-dependent length across packets.
  Empty trailing blocks get id E; a block is live iff its id is below E, which is what the guard tests.
- **TopK_Scores** are ``packed & 0xffff0000`` read as f32 (the bf16 bits in the upper half are the f32 of the
  same value) rather than ``>> 16`` read as bf16 (L8588); the values are identical.
- **Routing weights** are f32 (the manual leaves their type open); the expert MLP is the manual's up/down
  projection without gate or activation (L8436–8444, L8682–8684); ``moe_out`` is f32 ``[T, D]``.
- **Per-block weight gather** under the guard (one expert's weights per live block), not ``W_gathered: G × D × F``
  for the whole grid at once (L8678–8680): a guarded block that is empty gathers nothing.

Check: every stage against numpy applied to that stage's inputs as the device produced them — exact for the
integer paths (routing, counts, cumsums, blocks, Expert_IDs, Scatter_Idx) and the data movement (dispatch,
combine gather), within the derived bound of :mod:`visa.kernels.bounds` for the float ones.  Run it with
``visa run examples/moe_block.py``.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, i32, launch
from visa.kernels import Arena, Gemm, bounds
from visa.kernels.moe import MoeRouting, TokenRows

T, D, F, E, K, BLOCK, R = 16, 64, 128, 8, 2, 4, 32
AX = AxisSet(T=T, D=D, F=F, E=E, K=K, Bt=BLOCK, R=R, One=1)
ROUTING = MoeRouting(AX, "T", "E", "K", "Bt", "G")  # declares G (the worst-case grid), G_r = G · Bt, E_i, E_j
G = ROUTING.grid
m = AX.m
ROUTER = Gemm(AX, "T", "R", "D")
UP, DOWN = Gemm(AX, "Bt", "F", "D"), Gemm(AX, "Bt", "D", "F")
TOKENS = TokenRows(AX, "T", "K", "D")
Hbm = HbmTensor[Any, Any, Any]
F64 = npt.NDArray[np.float64]
ARENA = Arena()


def block_rows(blocked: Hbm, g: int) -> Any:
    """Block g's B rows of a ``[G·B, D]`` tensor, seen as ``m["Bt, D"]``."""
    return blocked.view().tile(m["G_r"], BLOCK, m[f"G_r = {BLOCK}, D"], g * BLOCK).relabel(m["Bt, D"])


def expert_block(ctx: Context, arena: Arena, routing: Any, g: int, x_blocked: Hbm, y_blocked: Hbm, w_up: Hbm,
                 w_down: Hbm, out: dict[str, Any]) -> None:
    """Block g: guard on its expert id; if live, gather the expert's weights and run the two GEMMs, writing
    the block's rows of ``y_blocked`` in place."""
    eid = routing.expert_ids.view().tile(m["G"], 1, m["One, 1 # 2"], g).as_tensor()  # Expert_IDs[g]
    if not ctx.main.when(eid, lambda e: e < E):
        return  # an empty block: only the guard ran (L8616)
    wu = w_up.view().gather(m["E"], eid).to_hbm(m["1"], m["One, F, D"], ctx.tdma, arena.take_hbm(2 * F * D))
    wd = w_down.view().gather(m["E"], eid).to_hbm(m["1"], m["One, D, F"], ctx.tdma, arena.take_hbm(2 * F * D))
    rows = block_rows(x_blocked, g)
    up = out[f"up{g}"] = UP(ctx, arena, rows, wu.view().relabel(m["F, D"]))
    y = DOWN(ctx, arena, up, wd.view().relabel(m["D, F"]))
    y.to_hbm_view(block_rows(y_blocked, g), ctx.tdma)


@device(chip=1)
def moe(ctx: Context, x: Hbm, w_router: Hbm, w_up: Hbm, w_down: Hbm, x_blocked: Hbm, y_blocked: Hbm,
        index: Hbm, block_range: Hbm, log_t: Hbm, log_e: Hbm) -> dict[str, Any]:
    """The MoE block for the T tokens; returns every intermediate for the checks."""
    out: dict[str, Any] = {}
    with ARENA.scratch() as arena:  # on-chip memory is the launch's; HBM results persist
        scores = out["scores"] = ROUTER(ctx, arena, x, w_router)
        consts = {"index": index, "block_range": block_range, "log_t": log_t, "log_e": log_e}
        routing = out["routing"] = ROUTING(ctx, arena, scores.view().relabel(m[f"T, E # {R}"]), consts)
        weights = out["weights"] = TOKENS.softmax(ctx, arena, TOKENS.spread(ctx, arena, routing.scores))
        # dispatch (L8664–8672): x broadcast over K by the DMA, scattered to the rows Scatter_Idx[t, k]
        x_k = x.view().to_hbm(m["1"], m["T, K, D"], ctx.tdma, arena.take_hbm(2 * T * K * D))
        x_k.to_hbm_view(x_blocked.view().scatter(m["G_r"], routing.scatter_idx), ctx.tdma)
        out["guards"] = len(ctx.schedule.ops)
        for g in range(G):
            expert_block(ctx, arena, routing, g, x_blocked, y_blocked, w_up, w_down, out)
        out["blocks_end"] = len(ctx.schedule.ops)
        # combine (L8690–8705): gather each (t, k)'s row back, one token per slice; weighted sum over K
        y_restored = out["y_restored"] = y_blocked.view().gather(m["G_r"], routing.scatter_idx).to_dm(
            TOKENS.cluster, TOKENS.slice, m["K, D"], ctx.tdma, arena.take_dm(2 * K * D))
        summed = TOKENS.weighted_sum(ctx, arena, y_restored, TOKENS.to_vrf(ctx, arena, weights))
        out["moe_out"] = summed.to_hbm(m["T, D"], ctx.tdma, arena.take_hbm(4 * T * D))
    return out


def bf(array: npt.ArrayLike) -> F64:
    """``array`` rounded to bf16 (nearest even), as float64."""
    return np.asarray(np.asarray(array, np.float32).astype(ml_dtypes.bfloat16), dtype=np.float64)


def reference_routing(scores: F64, k: int, block: int, grid: int) -> dict[str, np.ndarray]:
    """numpy's routing in the manual's terms (L8540–8663), from the bf16 scores: exact integers."""
    t, e = scores.shape
    bits = scores.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.int16).astype(np.int64)
    packed = (((bits << 16) | np.arange(e)) + 2**31) % 2**32 - 2**31
    cmp = np.where(packed >= 0, packed, packed ^ 0x7FFF0000)
    rank = (cmp[:, None, :] > cmp[:, :, None]).sum(axis=-1)
    keep = rank < k
    indices = np.stack([np.flatnonzero(row) for row in keep])  # in expert order, as the filter packs them
    top = np.take_along_axis(scores, indices, axis=1)
    one_hot = np.zeros((t, k, e), np.int64)
    np.put_along_axis(one_hot, indices[:, :, None], 1, axis=2)
    count = one_hot.sum(axis=(0, 1))
    blocks = -(-count // block)
    start = np.cumsum(blocks) - blocks
    token_rank = np.take_along_axis(np.cumsum(one_hot.reshape(t * k, e), axis=0).reshape(t, k, e),
                                    indices[:, :, None], axis=2)[:, :, 0]
    ids = np.full(grid, e)
    ids[:blocks.sum()] = np.repeat(np.arange(e), blocks)
    return {"rank": rank, "indices": indices, "scores": top, "mask": keep.astype(np.int64),
            "cumsum": np.cumsum(keep, axis=0), "count": count, "blocks": blocks, "end": np.cumsum(blocks),
            "expert_ids": ids, "scatter_idx": start[indices] * block + token_rank - 1}


def check(name: str, got: F64, want: F64, bound: F64 | float, errors: dict[str, float]) -> None:
    """Assert ``|got − want| ≤ bound``; record the largest error under ``name``."""
    err = np.abs(np.asarray(got, np.float64) - want)
    assert np.all(err <= bound), (name, float(np.max(err - bound)))
    errors[name] = max(errors.get(name, 0.0), float(np.max(err)))


def run(seed: int = 5, skew: float = 0.0) -> dict[str, Any]:
    """Run the block on random inputs (``skew`` biases the router towards the first experts, emptying the
    others' blocks), check every stage; returns the errors, the live blocks and the schedule facts."""
    rng = np.random.default_rng(seed)
    x = bf(rng.standard_normal((T, D)))
    w_router = np.zeros((R, D))
    w_router[:E] = bf(rng.standard_normal((E, D)) / math.sqrt(D))
    w_router[:E] += bf(skew * np.linspace(1, -1, E)[:, None] * np.sign(x.mean(axis=0))[None, :] / math.sqrt(D))
    w_router = bf(w_router)
    w_up = bf(rng.standard_normal((E, F, D)) / math.sqrt(D))
    w_down = bf(rng.standard_normal((E, D, F)) / math.sqrt(F))
    ctx = Context.acquire()

    def put(name: str, array: npt.ArrayLike, dtype: type, text: str, address: int) -> Hbm:
        axes_ = " ".join(a.strip() for a in text.split(",") if not a.strip().startswith("1"))
        host = HostTensor.from_numpy(np.asarray(array, np.float32 if dtype is bf16 else np.int32), dtype, m[text],
                                     axes=axes_)
        return host.to_hbm(m["1"], m[text], ctx.pdma, address)

    consts = ROUTING.constants()
    text = ROUTING.constant_text()
    args = [put("x", x, bf16, "T, D", 0), put("w_router", w_router, bf16, "R, D", 1 << 24),
            put("w_up", w_up, bf16, "E, F, D", 2 << 24), put("w_down", w_down, bf16, "E, D, F", 3 << 24),
            put("x_blocked", np.zeros((G * BLOCK, D)), bf16, "G_r, D", 4 << 24),
            put("y_blocked", np.zeros((G * BLOCK, D)), bf16, "G_r, D", 5 << 24)]
    args += [put(n, consts[n], i32, text[n], (6 + j) << 24) for j, n in enumerate(consts)]
    first = len(ctx.schedule.ops)
    res = launch(moe, ctx, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8],
                 args[9])  # spelled out: the plugin checks each argument
    ops = [op for op in ctx.schedule.ops[first:] if op.track != "pdma"]
    cycles = max(op.end for op in ops) - min(op.start for op in ops)
    r = res["routing"]
    e: dict[str, float] = {}

    # 1. router (float): within the GEMM's bound
    scores = np.asarray(args[0].logical("T D"), np.float64)  # x as the device holds it
    got_scores = np.asarray(res["scores"].logical("T R"), np.float64)
    check("router", got_scores, x @ w_router.T, bounds.gemm(x, w_router, ROUTER.k_tiles), e)
    scores = got_scores[:, :E]
    # 2., 4. routing (integer): exact
    want = reference_routing(scores, K, BLOCK, G)
    assert np.array_equal(r.rank.logical("T E_i"), want["rank"])
    assert np.array_equal(r.indices.logical("T K"), want["indices"])
    assert np.array_equal(r.scores.logical("T K"), want["scores"])  # exact: the bf16 scores as f32
    assert np.array_equal(r.mask.logical("T E"), want["mask"])
    assert np.array_equal(r.cumsum.logical("T E"), want["cumsum"])
    assert np.array_equal(r.cumsum.logical("T E")[-1], want["count"])
    assert np.array_equal(r.blocks.logical("E"), want["blocks"])
    assert np.array_equal(r.end.logical("E"), want["end"])
    assert np.array_equal(r.expert_ids.logical("G"), want["expert_ids"])
    assert np.array_equal(r.scatter_idx.logical("T K"), want["scatter_idx"])
    # 3. routing weights (float, f32 out): softmax_rel of K terms (no bf16 rounding)
    top = want["scores"]
    ref_w = np.exp(top - top.max(axis=1, keepdims=True))
    ref_w /= ref_w.sum(axis=1, keepdims=True)
    w = np.asarray(res["weights"].logical("T K"), np.float64)
    spread = float(np.max(top.max(axis=1) - top.min(axis=1)))
    check("routing weights", w, ref_w, bounds.softmax_rel(K, spread) * ref_w + 2.0**-149, e)
    # 5. dispatch (data movement): exact
    xb = np.asarray(args[4].logical("G_r D"), np.float64)
    idx = want["scatter_idx"]
    for t in range(T):
        for k in range(K):
            assert np.array_equal(xb[idx[t, k]], x[t])
    untouched = np.setdiff1d(np.arange(G * BLOCK), idx.ravel())
    assert not xb[untouched].any()
    # 6. expert MLP per live block (float): each GEMM within its bound, on the device's inputs
    yb = np.asarray(args[5].logical("G_r D"), np.float64)
    ids = want["expert_ids"]
    live = [g for g in range(G) if ids[g] < E]
    for g in live:
        rows = xb[g * BLOCK:(g + 1) * BLOCK]
        up = np.asarray(res[f"up{g}"].logical("Bt F"), np.float64)
        check("expert up", up, rows @ w_up[ids[g]].T, bounds.gemm(rows, w_up[ids[g]], UP.k_tiles), e)
        check("expert down", yb[g * BLOCK:(g + 1) * BLOCK], up @ w_down[ids[g]].T,
              bounds.gemm(up, w_down[ids[g]], DOWN.k_tiles), e)
    assert not yb[G_live_rows(len(live)):].any()  # the skipped blocks were never written
    assert sorted(k for k in res if k.startswith("up")) == sorted(f"up{g}" for g in live)
    # 7. combine: the gather is exact; the weighted sum within γ_{K+1} Σ |w y|
    y_restored = np.asarray(res["y_restored"].logical("T K D"), np.float64)
    assert np.array_equal(y_restored, yb[idx])
    want_out = np.einsum("tkd,tk->td", y_restored, w)
    got = np.asarray(res["moe_out"].logical("T D"), np.float64)
    check("weighted sum", got, want_out, bounds.weighted_sum(y_restored, w), e)
    return {"errors": e, "cycles": cycles, "live": live, "ctx": ctx, "guards": res["guards"],
            "blocks_end": res["blocks_end"], "expert_ids": ids}


def G_live_rows(n_live: int) -> int:  # noqa: N802 — the manual's G
    """The first row after the live blocks (the live blocks are the first ones of the grid)."""
    return n_live * BLOCK


def main() -> None:
    """Run, check every stage against numpy, print the errors, the live blocks and the device cycles."""
    res = run()
    for name, value in res["errors"].items():
        print(f"    {name:<18}{value:>10.2e} max |error| (within its derived bound)")
    print(f"    routing, dispatch, combine gather: exact; {len(res['live'])} of {G} blocks live "
          f"(Expert_IDs {res['expert_ids'].tolist()})")
    print(f"    MoE block of {T} tokens: {res['cycles']} cycles on the device")


if __name__ == "__main__":
    main()
