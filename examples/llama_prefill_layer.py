"""One Llama 3 decoder layer, prefill (manual "Prefill Phase", L7982–8224), at a small scale, with visa.kernels.

All T = 32 prompt tokens go through the layer together (the manual's 2.1–2.3.3, L8006–8190):

1. ``h = RMSNorm(x)`` over the 32 rows — :meth:`Rows.rms_norm`;
2. per query head g, ``q_g = h · w_q[g]`` (w_q's rows of head g are a tile of the weight, L813–832); ``k = h · w_k``;
   ``vᵀ = w_v · hᵀ`` (the same :class:`Gemm` with the operands swapped gives V transposed, the layout the
   attention's second GEMM reads) — :class:`Gemm` with M = 32 tokens;
3. RoPE, each token at its own position (L8035–8063): ``q' = q ∘ C + (q · Pᵀ) ∘ S`` with the pair swap P (a
   :class:`Gemm` by a permutation, exact) and the per-position tables C (cos) and S (∓ sin) —
   :meth:`Rows.mul`, :meth:`Rows.add`;
4. per head, ``softmax(masked(q' k'ᵀ / √d_k)) v`` with the causal mask written to the branch log (L8090–8100) —
   :class:`CausalMask`: the ``[T, S]`` ``attention_mask`` as ExecutionIds (0 where j ≤ i, 8 where j > i) loaded
   into the VRF once by the sub context, then each softmax pass reads it (``BranchMode.Vrf``) and its group-One
   elements become −inf by two Logic ops (bits AND 0, OR −inf's bits) — :class:`Attention` with ``log=``;
5. ``Σ_g o_g · w_o[g]`` (the output projection split by head, summed by :meth:`Rows.add`), residual, RMSNorm,
   SwiGLU FFN, residual.

Departures from the manual, with lines:

- **Scale**: T = 32 tokens, D = 256, one KV head shared by G = 4 query heads (GQA, h_kv = 1; 70B: h_q = 64,
  h_kv = 8, L7990), d_k = 64, F = 512; one layer, no embedding, LM head or sampling.
- **The branched operation is "mask to −inf"** (L8100 names no operation): ``scores_masked(i, j) = −inf`` where
  j > i (L8097) is what the group-One elements get, in each of the softmax's three passes (row max, Σ exp, the
  normalised row), so ``exp(−inf) = 0`` exactly; the 1/√d_k scaling pass before them does not read the log.
- **RoPE**: ``t_rope = gather(index: position, table: w_rope)`` (L8035–8040) is done on the device with
  ``position(i) = i`` (an i32 index tensor from the host), but the table is stored as two ``[s_max, d_k]`` tables
  C (cos) and S (∓ sin) instead of ``[s_max, d_k', 2, 2]``, and the rotation is elementwise (two products and a
  sum, each rounded to bf16) rather than the manual's einsum over the pair axis.
- **w_o is stored split by head** (``[G][D, Dv]``), so the output projection is a sum of per-head GEMMs (three
  more bf16 roundings, within their bounds) instead of one GEMM over the concatenated heads.
- The KV cache write of prefill (L8064–8076) is not done as a separate step: K_rope and Vᵀ leave the layer in HBM
  in the cache layouts the decode reads (``m["S, Dk"]``, ``m["Dv, S"]``), which is the manual's "Stores einsum
  computation results from DM to HBM" (L8076).

Check: every stage against numpy applied to that stage's inputs as the device produced them, within the
stage's derived bound (:mod:`visa.kernels.bounds`).  Run it with ``visa run examples/llama_prefill_layer.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, i32, launch
from visa.kernels import Arena, Attention, CausalMask, Embedding, Gemm, Rows, bounds
from visa.kernels.bounds import bf16_round as bf
from visa.kernels.bounds import check

AX = AxisSet(T=32, S=32, P=128, D=256, G=4, Dk=64, Dp=64, Dv=64, F=512)  # Dp: the pair swap's output axis
m = AX.m
EPS, HEADS = 1e-5, 4
ROWS_D, ROWS_K, ROWS_F = Rows(AX, "T", "D"), Rows(AX, "T", "Dk"), Rows(AX, "T", "F")
PROJ = Gemm(AX, "T", "Dk", "D")  # q_g and k (Dk = Dv)
V_T = Gemm(AX, "Dv", "T", "D")  # vᵀ = w_v · hᵀ
SWAP = Gemm(AX, "T", "Dp", "Dk")  # the pair swap q · Pᵀ
ATTENTION = Attention(AX, q="T", s="S", dk="Dk", dv="Dv")
MASK = CausalMask(AX, q="T", s="S")
ROPE_ROWS = Embedding(AX, "P", "Dk", rows="T")  # t_rope = gather(position, table) (L8035–8040)
O_PROJ = Gemm(AX, "T", "D", "Dv")
GATE, DOWN = Gemm(AX, "T", "F", "D"), Gemm(AX, "T", "D", "F")
Hbm = HbmTensor[Any, Any, Any]
F64 = npt.NDArray[np.float64]
ARENA = Arena()


def rope(ctx: Context, arena: Arena, q: Hbm, swap: Hbm, cos: Hbm, sin: Hbm) -> tuple[Hbm, Hbm]:
    """``q ∘ C + (q Pᵀ) ∘ S`` row by row; returns (q Pᵀ, the rotated q) in HBM."""
    swapped = SWAP(ctx, arena, q, swap)
    a = ROWS_K.mul(ctx, arena, ROWS_K.load(ctx, arena, q), ROWS_K.load(ctx, arena, cos))
    b = ROWS_K.mul(ctx, arena, ROWS_K.load(ctx, arena, swapped.view().relabel(m["T, Dk"])),
                   ROWS_K.load(ctx, arena, sin))
    return swapped, ROWS_K.store(ctx, arena, ROWS_K.add(ctx, arena, a, b))


@device(chip=1)
def prefill(ctx: Context, x: Hbm, g_attn: Hbm, w_q: Hbm, w_k: Hbm, w_v: Hbm, w_o: Hbm, g_ffn: Hbm, w_gate: Hbm,
            w_up: Hbm, w_down: Hbm, swap: Hbm, cos_table: Hbm, sin_table: Hbm, mask: Hbm, positions: Hbm
            ) -> dict[str, Any]:
    """The layer for all 32 tokens; returns every intermediate (HBM) for the checks."""
    out: dict[str, Any] = {}
    with ARENA.scratch() as arena:  # on-chip memory is the launch's; HBM results persist
        cos = out["cos"] = ROPE_ROWS.to_hbm(ctx, arena, cos_table, positions)  # the rows of positions 0..T−1
        sin = out["sin"] = ROPE_ROWS.to_hbm(ctx, arena, sin_table, positions)
        log = MASK.prefill_log(ctx, arena, mask)  # attention_mask → the branch log, once (L8099)
        h = out["h"] = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, ROWS_D.load(ctx, arena, x),
                                                                ROWS_D.load_broadcast(ctx, arena, g_attn), eps=EPS))
        k = out["k"] = PROJ(ctx, arena, h, w_k)
        out["k_swap"], k_rot = rope(ctx, arena, k, swap, cos, sin)
        out["k_rot"] = k_rot
        v_t = out["v_t"] = V_T(ctx, arena, w_v, h)
        proj = None
        for g in range(HEADS):
            w_q_g = w_q.view().tile(m["G"], 1, m["Dk, D"], g)  # head g's rows of w_q[G, Dk, D]
            q = out[f"q{g}"] = PROJ(ctx, arena, h, w_q_g)
            out[f"q_swap{g}"], q_rot = rope(ctx, arena, q, swap, cos, sin)
            out[f"q_rot{g}"] = q_rot
            o = out[f"o{g}"] = ATTENTION(ctx, arena, q_rot, k_rot.view().relabel(m["S, Dk"]),
                                         v_t.view().relabel(m["Dv, S"]), log=log)
            p = out[f"p{g}"] = O_PROJ(ctx, arena, o, w_o.view().tile(m["G"], 1, m["D, Dv"], g))
            proj = ROWS_D.load(ctx, arena, p) if proj is None else ROWS_D.add(ctx, arena, proj,
                                                                              ROWS_D.load(ctx, arena, p))
            out[f"sum{g}"] = ROWS_D.store(ctx, arena, proj)
        assert proj is not None
        x_attn = ROWS_D.add(ctx, arena, ROWS_D.load(ctx, arena, x), proj)
        out["x_attn"] = ROWS_D.store(ctx, arena, x_attn)
        h2 = out["h2"] = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, x_attn,
                                                                  ROWS_D.load_broadcast(ctx, arena, g_ffn), eps=EPS))
        gate, up = out["gate"], out["up"] = GATE(ctx, arena, h2, w_gate), GATE(ctx, arena, h2, w_up)
        act = out["act"] = ROWS_F.store(ctx, arena, ROWS_F.swiglu(ctx, arena, ROWS_F.load(ctx, arena, gate),
                                                                  ROWS_F.load(ctx, arena, up)))
        ffn = out["ffn"] = DOWN(ctx, arena, act, w_down)
        out["out"] = ROWS_D.store(ctx, arena, ROWS_D.add(ctx, arena, x_attn, ROWS_D.load(ctx, arena, ffn)))
    return out


def tables(d: int, tokens: int, base: float = 500000.0) -> tuple[F64, F64, F64]:
    """The pair swap P (``(q Pᵀ)[2i] = q[2i+1]``, ``(q Pᵀ)[2i+1] = q[2i]``) and the tables C, S of positions
    0..tokens−1 (Llama 3's θ base): ``q'[2i] = q[2i]·cos − q[2i+1]·sin``, ``q'[2i+1] = q[2i+1]·cos + q[2i]·sin``."""
    p = np.zeros((d, d))
    c, s = np.zeros((tokens, d)), np.zeros((tokens, d))
    for i in range(d // 2):
        p[2 * i, 2 * i + 1] = p[2 * i + 1, 2 * i] = 1.0
        theta = np.arange(tokens) * base ** (-2 * i / d)
        c[:, 2 * i] = c[:, 2 * i + 1] = np.cos(theta)
        s[:, 2 * i], s[:, 2 * i + 1] = -np.sin(theta), np.sin(theta)
    return p, c, s




def run(seed: int = 21) -> tuple[dict[str, float], int]:
    """Run the layer on random weights, check every stage; returns (largest error per stage, device cycles)."""
    rng = np.random.default_rng(seed)
    d, f, t = 256, 512, 32

    def w(*shape: int) -> F64:
        return bf(rng.standard_normal(shape) / math.sqrt(shape[-1]))

    host = {"x": bf(rng.standard_normal((t, d))), "g_attn": bf(1 + 0.1 * rng.standard_normal(d)),
            "w_q": w(HEADS, 64, d), "w_k": w(64, d), "w_v": w(64, d), "w_o": w(HEADS, d, 64),
            "g_ffn": bf(1 + 0.1 * rng.standard_normal(d)), "w_gate": w(f, d), "w_up": w(f, d), "w_down": w(d, f)}
    p, c, s = tables(64, AX.size("P"))
    host.update(swap=p, cos=bf(c), sin=bf(s), mask=CausalMask.table(t, t).astype(np.float64),
                positions=np.arange(t, dtype=np.float64))  # small integers: exact as float64, written as i32
    texts = {"x": "T, D", "g_attn": "D", "w_q": "G, Dk, D", "w_k": "Dk, D", "w_v": "Dv, D", "w_o": "G, D, Dv",
             "g_ffn": "D", "w_gate": "F, D", "w_up": "F, D", "w_down": "D, F", "swap": "Dp, Dk", "cos": "P, Dk",
             "sin": "P, Dk", "mask": "T, S", "positions": "T"}
    ctx = Context.acquire()
    hbm = {}
    for k, (name, text) in enumerate(texts.items()):
        axes_ = " ".join(a.strip() for a in text.split(","))
        integer = name in ("mask", "positions")  # the ExecutionIds and position(i) = i are i32 (L8041–8043)
        arr = np.asarray(host[name], np.int32 if integer else np.float32)
        hbm[name] = HostTensor.from_numpy(arr, i32 if integer else bf16, m[text], axes=axes_).to_hbm(
            m["1"], m[text], ctx.pdma, k << 24)
    first = len(ctx.schedule.ops)
    args = [hbm[n] for n in texts]
    res = launch(prefill, ctx, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8],
                 args[9], args[10], args[11], args[12], args[13], args[14])  # spelled out: the plugin checks each
    ops = [op for op in ctx.schedule.ops[first:] if op.track != "pdma"]
    cycles = max(op.end for op in ops) - min(op.start for op in ops)

    def get(name: str, text: str) -> F64:
        return np.asarray(res[name].to_host(m[text], ctx.pdma).numpy(axes=text.replace(",", "")), dtype=np.float64)

    e: dict[str, float] = {}
    x = host["x"]
    want = x / np.sqrt((x**2).mean(-1, keepdims=True) + EPS) * host["g_attn"]
    h = get("h", "T, D")
    check("rms_norm", h, want, bounds.rms_norm(want, d), e)
    kk = get("k", "T, Dk")
    check("k", kk, h @ host["w_k"].T, bounds.gemm(h, host["w_k"], 1), e)
    v_t = get("v_t", "Dv, T")
    check("v", v_t, host["w_v"] @ h.T, bounds.gemm(host["w_v"], h, 1), e)

    def rope_check(src: F64, swapped: F64, rotated: F64) -> None:
        check("rope swap", swapped, src @ p.T, bounds.gemm(src, p, 1), e)
        a, b = bf(src * cos), bf(swapped * sin)  # the products: exact in f32, one bf16 rounding
        want = a + b
        check("rope", rotated, want, bounds.add(want), e)

    cos, sin = get("cos", "T, Dk"), get("sin", "T, Dk")
    e["rope rows gather"] = 0.0
    assert np.array_equal(cos, host["cos"][:t]) and np.array_equal(sin, host["sin"][:t])  # exact: bytes moved
    k_rot = get("k_rot", "T, Dk")
    rope_check(kk, get("k_swap", "T, Dp"), k_rot)
    total = None
    for g in range(HEADS):
        q = get(f"q{g}", "T, Dk")
        check("q", q, h @ host["w_q"][g].T, bounds.gemm(h, host["w_q"][g], 1), e)
        q_rot = get(f"q_rot{g}", "T, Dk")
        rope_check(q, get(f"q_swap{g}", "T, Dp"), q_rot)
        o = get(f"o{g}", "T, Dv")
        for i in range(t):  # row i attends to keys 0..i (the causal mask)
            want_o, bound_o = bounds.attention(q_rot[i:i + 1], k_rot[:i + 1], v_t.T[:i + 1], 1 / math.sqrt(64))
            check("causal attention", o[i:i + 1], want_o, bound_o, e)
        pg = get(f"p{g}", "T, D")
        check("o_proj (per head)", pg, o @ host["w_o"][g].T, bounds.gemm(o, host["w_o"][g], 1), e)
        sg = get(f"sum{g}", "T, D")
        if total is not None:
            check("head sum", sg, total + pg, bounds.add(total + pg), e)
        total = sg
    assert total is not None
    x_attn = get("x_attn", "T, D")
    check("residual 1", x_attn, x + total, bounds.add(x + total), e)
    want = x_attn / np.sqrt((x_attn**2).mean(-1, keepdims=True) + EPS) * host["g_ffn"]
    h2 = get("h2", "T, D")
    check("rms_norm (ffn)", h2, want, bounds.rms_norm(want, d), e)
    gate, up = get("gate", "T, F"), get("up", "T, F")
    check("gate/up", gate, h2 @ host["w_gate"].T, bounds.gemm(h2, host["w_gate"], 1), e)
    check("gate/up", up, h2 @ host["w_up"].T, bounds.gemm(h2, host["w_up"], 1), e)
    act = get("act", "T, F")
    want = gate / (1 + np.exp(-gate)) * up
    check("swiglu", act, want, bounds.swiglu(want), e)
    ffn = get("ffn", "T, D")
    check("down", ffn, act @ host["w_down"].T, bounds.gemm(act, host["w_down"], DOWN.k_tiles), e)
    check("residual 2", get("out", "T, D"), x_attn + ffn, bounds.add(x_attn + ffn), e)
    return e, cycles


def main() -> None:
    """Run, check every stage against numpy, print each stage's largest error and the device cycles."""
    errors, cycles = run()
    for name, value in errors.items():
        how = "exact" if name in ("rope rows gather", "rope swap") else "within its derived bound"
        print(f"    {name:<20}{value:>10.2e} max |error| ({how})")
    print(f"    prefill of 32 tokens: {cycles} cycles on the device")


if __name__ == "__main__":
    main()
