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
6. per block g of the worst-case grid G = 14 (L8617–8620): ``ctx.main.when(count, lambda n: n > 0)`` on the
   block's token count guards it (an empty block costs only the guard, L8616); a live block gathers its
   expert's W_up and W_down by ``table.view().gather(m["E"], Expert_IDs[g])`` (L8676–8681) and runs
   ``up = x_g · W_up[e]ᵀ``, ``y_g = up · W_down[e]ᵀ`` (L8682–8684) — two :class:`~visa.kernels.Gemm`;
7. combine: ``y_restored = gather(y_blocked, Scatter_Idx)`` (L8692–8695) into one token per slice, and
   ``moe_out = Σ_k w[t, k] · y_restored[t, k]`` (L8697–8705) — :class:`~visa.kernels.moe.TokenRows`.

The block is :class:`~visa.kernels.moe.MoeBlock`, built for the sizes of an ``AxisSet``; ``run(block=...)``
checks it at other sizes too (``tests/kernels/test_moe.py``).

Departures from the manual, with lines:

- **Scale**: T = 16, D = 64, F = 128, E = 8, K = 2, B = 4 rows per block (the manual: E typically 128, K of
  1/4/8, L8456–8460, B open).
- **E is 4 or 8** (the manual's E is typically 128, L8458): a token's scores are one 32-byte packet of i32, and
  FilterCompaction packs within a packet (L2324, L3544); a larger E needs a hierarchical TopK over groups of 8.
- **Dispatch source**: ``x`` is broadcast over K by a DMA (``[T, D]`` → ``[T, K, D]``) so one scatter DMA places
  all T·K rows (L8668–8671 scatter ``x_norm`` by the ``T × K`` Scatter_Idx).
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
  Empty trailing blocks get id E.
- **Block counts** (the guard's count; the manual only says "skip execution for empty Grids", L8616):
  ``#{(t, e) kept : (Start[e]·B + Token_Rank − 1) >> log2 B = g}`` by an XOR with Block_Range and a reduce.
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
from visa.kernels import Arena, bounds
from visa.kernels.bounds import bf16_round as bf
from visa.kernels.bounds import check
from visa.kernels.moe import MoeBlock

T, D, F, E, K, BLOCK = 16, 64, 128, 8, 2, 4
AX = AxisSet(T=T, D=D, F=F, E=E, K=K, Bt=BLOCK)
MOE = MoeBlock(AX)  # declares G (the worst-case grid), G_r = G · Bt, E_i, E_j, E_r (router columns), One_
G = MOE.routing.grid
Hbm = HbmTensor[Any, Any, Any]
F64 = npt.NDArray[np.float64]
ARENA = Arena()


def kernel(block: MoeBlock) -> Any:
    """The ``@device`` kernel running ``block`` (the MoE block of :mod:`visa.kernels.moe`) on HBM inputs."""

    @device(chip=1)
    def moe(ctx: Context, x: Hbm, w_router: Hbm, w_up: Hbm, w_down: Hbm, x_blocked: Hbm, y_blocked: Hbm,
            index: Hbm, block_range: Hbm, log_t: Hbm, log_e: Hbm) -> dict[str, Any]:
        """The MoE block for the T tokens; returns every intermediate for the checks."""
        consts = {"index": index, "block_range": block_range, "log_t": log_t, "log_e": log_e}
        with ARENA.scratch() as arena:  # on-chip memory is the launch's; HBM results persist
            return block(ctx, arena, x, w_router, w_up, w_down, x_blocked, y_blocked, consts)

    return moe



def reference_routing(scores: F64, k: int, block: int, grid: int) -> dict[str, npt.NDArray[Any]]:
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
    scatter_idx = start[indices] * block + token_rank - 1
    return {"rank": rank, "indices": indices, "scores": top, "mask": keep.astype(np.int64),
            "block_count": np.bincount(scatter_idx.ravel() // block, minlength=grid),
            "cumsum": np.cumsum(keep, axis=0), "count": count, "blocks": blocks, "end": np.cumsum(blocks),
            "expert_ids": ids, "scatter_idx": scatter_idx}



def run(seed: int = 5, skew: float = 0.0, block: MoeBlock = MOE) -> dict[str, Any]:
    """Run ``block`` on random inputs (``skew`` biases the router towards the first experts, emptying the
    others' blocks), check every stage; returns the errors, the live blocks and the schedule facts."""
    t, d, f, e, k, nb = (block.sizes[n] for n in (block.t, block.d, block.f, block.e, block.k, block.b))
    grid, r, mm = block.routing.grid, block.ax.size(block.r), block.ax.m
    rng = np.random.default_rng(seed)
    x = bf(rng.standard_normal((t, d)))
    w_router = np.zeros((r, d))
    w_router[:e] = rng.standard_normal((e, d)) / math.sqrt(d)
    w_router[:e] += skew * np.linspace(1, -1, e)[:, None] * np.sign(x.mean(axis=0))[None, :] / math.sqrt(d)
    w_router = bf(w_router)
    w_up = bf(rng.standard_normal((e, f, d)) / math.sqrt(d))
    w_down = bf(rng.standard_normal((e, d, f)) / math.sqrt(f))
    ctx = Context.acquire()
    consts = block.routing.constants()
    host = {"x": x, "w_router": w_router, "w_up": w_up, "w_down": w_down, "x_blocked": np.zeros((grid * nb, d)),
            "y_blocked": np.zeros((grid * nb, d)), **consts}
    args = []
    for j, (name, text) in enumerate(block.inputs_text().items()):
        dtype = i32 if name in consts else bf16
        names = " ".join(p.split("#")[0].strip() for p in text.split(","))
        arr = np.asarray(host[name], np.int32 if dtype is i32 else np.float32)
        args.append(HostTensor.from_numpy(arr, dtype, mm[text], axes=names).to_hbm(mm["1"], mm[text], ctx.pdma,
                                                                                    j << 24))
    first = len(ctx.schedule.ops)
    res = launch(kernel(block), ctx, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7],
                 args[8], args[9])  # spelled out: the plugin checks each argument
    ops = [op for op in ctx.schedule.ops[first:] if op.track != "pdma"]
    cycles = max(op.end for op in ops) - min(op.start for op in ops)
    rt = res["routing"]
    errors: dict[str, float] = {}

    def tk(tensor: Any) -> npt.NDArray[Any]:  # an axis of size 1 sets no index: K = 1 reads as [T]
        return np.asarray(tensor.logical(f"{block.t} {block.k}") if k > 1 else tensor.logical(block.t)[:, None])

    # 1. router (float): within the GEMM's bound
    got_scores = np.asarray(res["scores"].logical(f"{block.t} {block.r}"), np.float64)
    check("router", got_scores, x @ w_router.T, bounds.gemm(x, w_router, block.router.k_tiles), errors)
    # 2., 4. routing (integer): exact, from the device's scores
    want = reference_routing(got_scores[:, :e], k, nb, grid)
    assert np.array_equal(rt.rank.logical(f"{block.t} {block.routing.ei}"), want["rank"])
    assert np.array_equal(tk(rt.indices), want["indices"])
    assert np.array_equal(tk(rt.scores), want["scores"])  # exact: the bf16 scores as f32
    assert np.array_equal(rt.mask.logical(f"{block.t} {block.e}"), want["mask"])
    assert np.array_equal(rt.cumsum.logical(f"{block.t} {block.e}"), want["cumsum"])
    assert np.array_equal(rt.cumsum.logical(f"{block.t} {block.e}")[-1], want["count"])
    assert np.array_equal(rt.blocks.logical(block.e), want["blocks"])
    assert np.array_equal(rt.end.logical(block.e), want["end"])
    assert np.array_equal(rt.expert_ids.logical(block.g), want["expert_ids"])
    idx = want["scatter_idx"]
    assert np.array_equal(tk(rt.scatter_idx), idx)
    assert np.array_equal(rt.block_count.logical(block.g), want["block_count"])
    # 3. routing weights (float, f32 out): softmax_rel of K terms (no bf16 rounding)
    top = want["scores"]
    ref_w = np.exp(top - top.max(axis=1, keepdims=True))
    ref_w /= ref_w.sum(axis=1, keepdims=True)
    w = tk(res["weights"]).astype(np.float64)
    spread = float(np.max(top.max(axis=1) - top.min(axis=1)))
    check("routing weights", w, ref_w, bounds.softmax_rel(k, spread) * ref_w + 2.0**-149, errors)
    # 5. dispatch (data movement): exact; the rows no token fills stay zero
    xb = np.asarray(args[4].logical(f"{block.gr} {block.d}"), np.float64)
    assert np.array_equal(xb[idx], np.broadcast_to(x[:, None, :], (t, k, d)))
    assert not np.delete(xb, idx.ravel(), axis=0).any()
    # 6. expert MLP per live block (float): each GEMM within its bound, on the device's inputs
    yb = np.asarray(args[5].logical(f"{block.gr} {block.d}"), np.float64)
    ids = want["expert_ids"]
    live = [g for g in range(grid) if ids[g] < e]
    for g in live:
        rows = xb[g * nb:(g + 1) * nb]
        up = np.asarray(res[f"up{g}"].logical(f"{block.b} {block.f}"), np.float64)
        check("expert up", up, rows @ w_up[ids[g]].T, bounds.gemm(rows, w_up[ids[g]], block.up.k_tiles), errors)
        check("expert down", yb[g * nb:(g + 1) * nb], up @ w_down[ids[g]].T,
              bounds.gemm(up, w_down[ids[g]], block.down.k_tiles), errors)
    assert live == list(range(len(live)))  # the live blocks are the first ones of the grid
    assert not yb[len(live) * nb:].any()  # the skipped blocks were never written
    assert sorted(n for n in res if n.startswith("up")) == sorted(f"up{g}" for g in live)
    # 7. combine: the gather is exact; the weighted sum within γ_{K+1} Σ |w y|
    y_restored = np.asarray(res["y_restored"].logical(f"{block.t} {block.k} {block.d}"), np.float64)
    assert np.array_equal(y_restored, yb[idx])
    got = np.asarray(res["moe_out"].logical(f"{block.t} {block.d}"), np.float64)
    check("weighted sum", got, np.einsum("tkd,tk->td", y_restored, w), bounds.weighted_sum(y_restored, w), errors)
    return {"errors": errors, "cycles": cycles, "live": live, "ctx": ctx, "guards": res["guards"],
            "blocks_end": res["blocks_end"], "expert_ids": ids}


def main() -> None:
    """Run, check every stage against numpy, print the errors, the live blocks and the device cycles."""
    res = run()
    for name, value in res["errors"].items():
        print(f"    {name:<18}{value:>10.2e} max |error| (within its derived bound)")
    print(f"    routing, dispatch, combine gather: exact; {len(res['live'])} of {G} blocks live "
          f"(Expert_IDs {res['expert_ids'].tolist()})")
    ops = res["ctx"].schedule.ops[res["guards"]:res["blocks_end"]]
    skipped = [op for op in ops if op.name.endswith("skip")]
    print(f"    {len(skipped)} empty blocks cost their guards only: {sum(op.cycles for op in skipped)} cycles "
          f"({', '.join(str(op.cycles) for op in skipped)})")
    print(f"    MoE block of {T} tokens: {res['cycles']} cycles on the device")


if __name__ == "__main__":
    main()
