"""A Llama 3 decoder layer's prefill over more than 256 tokens (manual "Prefill Phase", L7982–8224; issue 27
item 8): T = 512 prompt tokens, more than the 256 slices of a cluster the row-wise kernels put one token on each.

The tokens go through the layer in tiles of 256 (``Tt``): each row-wise pass (RMSNorm, residuals, SwiGLU) and each
token-side GEMM runs on a tile's ``[256, D]`` rows — a tile view of the ``[T, D]`` activation relabelled over
``Tt`` (L813–832, a "reshape (noop)", L8056) — and writes its rows back into the whole tensor in place (a DMA into
a tile view, L8286–8297).  Attention is per query tile too, but over every key: the keys ``K[S, Dk]`` and values
``Vᵀ[Dv, S]`` of all 512 tokens are assembled first (each tile's projection DMA'd into its rows / columns), then
each tile's 256 queries attend to the 512 keys, its rows of the causal mask (``attention_mask(i, j) = j ≤ i``,
L8090–8100) read as a branch log, so a later tile sees the earlier tiles' keys and a query never a later key.

Departures from the manual, with lines:

- **Scale**: T = 512 tokens, D = 256, one query head on one KV head (GQA with G = 1; 70B: h_q = 64, h_kv = 8,
  L7990), d_k = 64, F = 512; one layer, no embedding, LM head or sampling.
- **No RoPE**: positions enter the scores through RoPE (L8035–8063), which examples/llama_prefill_layer.py does per
  token; this example is about the token count and leaves it out (a rotation per row, tile by tile, changes
  nothing here).
- As in examples/llama_prefill_layer.py: the causal mask is the branch log (masked scores read −inf in every
  softmax pass), K and Vᵀ leave the layer in the cache layouts a decode reads.

Check: every stage against numpy applied to that stage's inputs as the device produced them, within the stage's
derived bound (:mod:`visa.kernels.bounds`).  Run it with ``visa run examples/llama_prefill_long.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, i32, launch
from visa.kernels import Arena, Attention, CausalMask, Gemm, Rows, bounds
from visa.kernels.bounds import bf16_round as bf
from visa.kernels.bounds import check

T, TILE = 512, 256
AX = AxisSet(T=T, Tt=TILE, S=T, D=256, Dk=64, Dv=64, F=512)
m = AX.m
EPS = 1e-5
TILES = T // TILE
ROWS_D, ROWS_F = Rows(AX, "Tt", "D"), Rows(AX, "Tt", "F")  # one token of a tile per slice
Q_PROJ = Gemm(AX, "Tt", "Dk", "D")  # a tile's q (and k) rows
V_T = Gemm(AX, "Dv", "Tt", "D")  # a tile's columns of Vᵀ = w_v · hᵀ
ATTENTION = Attention(AX, q="Tt", s="S", dk="Dk", dv="Dv")
MASK = CausalMask(AX, q="Tt", s="S")
O_PROJ = Gemm(AX, "Tt", "D", "Dv")
GATE, DOWN = Gemm(AX, "Tt", "F", "D"), Gemm(AX, "Tt", "D", "F")
Hbm = HbmTensor[Any, Any, Any]
F64 = npt.NDArray[np.float64]
ARENA = Arena()


def rows(t: Hbm, i: int, cols: str) -> Any:
    """Tile ``i`` of a ``[T, cols]`` HBM tensor as ``[Tt, cols]`` rows (a view: nothing moves)."""
    return t.view().tile(m["T"], TILE, m[f"T = {TILE}, {cols}"], i * TILE).relabel(m[f"Tt, {cols}"])


def put(ctx: Context, src: Hbm, dst: Hbm, i: int, cols: str, row: str = "T") -> None:
    """A tile's ``[Tt, cols]`` result into its rows of the ``[row, cols]`` tensor (an in-place DMA, L8286–8297)."""
    src.view().relabel(m[f"{row} = {TILE}, {cols}"]).to_hbm_view(
        dst.view().tile(m[row], TILE, m[f"{row} = {TILE}, {cols}"], i * TILE), ctx.tdma)


def new(ctx: Context, arena: Arena, text: str) -> Hbm:
    """A ``text`` bf16 HBM tensor whose tiles the layer fills."""
    return HbmTensor(ctx, bf16, m["1"], m[text], arena.take_hbm(2 * m[text].size), call="llama_prefill_long")


@device(chip=1)
def prefill(ctx: Context, x: Hbm, g_attn: Hbm, w_q: Hbm, w_k: Hbm, w_v: Hbm, w_o: Hbm, g_ffn: Hbm, w_gate: Hbm,
            w_up: Hbm, w_down: Hbm, mask: Hbm) -> dict[str, Hbm]:
    """The layer for all 512 tokens, tile by tile; returns every stage's ``[T, …]`` output (HBM)."""
    out = {name: new(ctx, ARENA, text) for name, text in
           (("h", "T, D"), ("q", "T, Dk"), ("k", "S, Dk"), ("o", "T, Dv"), ("p", "T, D"), ("x_attn", "T, D"),
            ("h2", "T, D"), ("gate", "T, F"), ("up", "T, F"), ("act", "T, F"), ("ffn", "T, D"), ("out", "T, D"))}
    out["v_t"] = new(ctx, ARENA, "Dv, S")
    rd, rf = ROWS_D, ROWS_F
    for i in range(TILES):  # the projections of every token: K and Vᵀ must be whole before any attention
        with ARENA.scratch() as arena:
            h = rd.store(ctx, arena, rd.rms_norm(ctx, arena, rd.load(ctx, arena, rows(x, i, "D")),
                                                 rd.load_broadcast(ctx, arena, g_attn), eps=EPS))
            put(ctx, h, out["h"], i, "D")
            put(ctx, Q_PROJ(ctx, arena, h, w_q), out["q"], i, "Dk")
            put(ctx, Q_PROJ(ctx, arena, h, w_k), out["k"], i, "Dk", "S")
            v_t = V_T(ctx, arena, w_v, h)  # [Dv, Tt]: its columns of Vᵀ
            v_t.view().relabel(m[f"Dv, S = {TILE}"]).to_hbm_view(
                out["v_t"].view().tile(m["S"], TILE, m[f"Dv, S = {TILE} # {T}"], i * TILE), ctx.tdma)
    for i in range(TILES):  # each query tile over every key, then the rest of the layer on its rows
        with ARENA.scratch() as arena:
            log = MASK.prefill_log(ctx, arena, mask.view().tile(m["T"], TILE, m[f"T = {TILE}, S"], i * TILE)
                                   .relabel(m["Tt, S"]))
            o = ATTENTION(ctx, arena, rows(out["q"], i, "Dk"), out["k"].view().relabel(m["S, Dk"]),
                          out["v_t"].view().relabel(m["Dv, S"]), log=log)
            put(ctx, o, out["o"], i, "Dv")
            p = O_PROJ(ctx, arena, o, w_o)
            put(ctx, p, out["p"], i, "D")
            x_attn = rd.add(ctx, arena, rd.load(ctx, arena, rows(x, i, "D")), rd.load(ctx, arena, p))
            put(ctx, rd.store(ctx, arena, x_attn), out["x_attn"], i, "D")
            h2 = rd.store(ctx, arena, rd.rms_norm(ctx, arena, x_attn, rd.load_broadcast(ctx, arena, g_ffn), eps=EPS))
            put(ctx, h2, out["h2"], i, "D")
            gate, up = GATE(ctx, arena, h2, w_gate), GATE(ctx, arena, h2, w_up)
            put(ctx, gate, out["gate"], i, "F")
            put(ctx, up, out["up"], i, "F")
            act = rf.store(ctx, arena, rf.swiglu(ctx, arena, rf.load(ctx, arena, gate), rf.load(ctx, arena, up)))
            put(ctx, act, out["act"], i, "F")
            ffn = DOWN(ctx, arena, act, w_down)
            put(ctx, ffn, out["ffn"], i, "D")
            y = rd.add(ctx, arena, x_attn, rd.load(ctx, arena, ffn))
            put(ctx, rd.store(ctx, arena, y), out["out"], i, "D")
    return out




def run(seed: int = 27) -> tuple[dict[str, float], int]:
    """Run the layer on random weights, check every stage; returns (largest error per stage, device cycles)."""
    rng = np.random.default_rng(seed)
    d, f, dk = 256, 512, 64

    def w(*shape: int) -> F64:
        return bf(rng.standard_normal(shape) / math.sqrt(shape[-1]))

    host = {"x": bf(rng.standard_normal((T, d))), "g_attn": bf(1 + 0.1 * rng.standard_normal(d)),
            "w_q": w(dk, d), "w_k": w(dk, d), "w_v": w(dk, d), "w_o": w(d, dk),
            "g_ffn": bf(1 + 0.1 * rng.standard_normal(d)), "w_gate": w(f, d), "w_up": w(f, d), "w_down": w(d, f),
            "mask": CausalMask.table(T, T).astype(np.float64)}
    texts = {"x": "T, D", "g_attn": "D", "w_q": "Dk, D", "w_k": "Dk, D", "w_v": "Dv, D", "w_o": "D, Dv",
             "g_ffn": "D", "w_gate": "F, D", "w_up": "F, D", "w_down": "D, F", "mask": "T, S"}
    ctx = Context.acquire()
    hbm = {}
    for k, (name, text) in enumerate(texts.items()):
        integer = name == "mask"  # the ExecutionIds are i32 (L8099)
        arr = np.asarray(host[name], np.int32 if integer else np.float32)
        hbm[name] = HostTensor.from_numpy(arr, i32 if integer else bf16, m[text],
                                          axes=" ".join(a.strip() for a in text.split(","))).to_hbm(
            m["1"], m[text], ctx.pdma, k << 24)
    first = len(ctx.schedule.ops)
    a = [hbm[n] for n in texts]
    res = launch(prefill, ctx, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10])
    ops = [op for op in ctx.schedule.ops[first:] if op.track != "pdma"]
    cycles = max(op.end for op in ops) - min(op.start for op in ops)

    def get(name: str, text: str) -> F64:
        return np.asarray(res[name].to_host(m[text], ctx.pdma).numpy(axes=text.replace(",", "")), dtype=np.float64)

    e: dict[str, float] = {}
    x = host["x"]
    want = x / np.sqrt((x**2).mean(-1, keepdims=True) + EPS) * host["g_attn"]
    h = get("h", "T, D")
    check("rms_norm", h, want, bounds.rms_norm(want, d), e)
    q, k_ = get("q", "T, Dk"), get("k", "S, Dk")
    check("q", q, h @ host["w_q"].T, bounds.gemm(h, host["w_q"], 1), e)
    check("k", k_, h @ host["w_k"].T, bounds.gemm(h, host["w_k"], 1), e)
    v_t = get("v_t", "Dv, S")
    check("v", v_t, host["w_v"] @ h.T, bounds.gemm(host["w_v"], h, 1), e)
    o = get("o", "T, Dv")
    causal = np.tril(np.ones((T, T), dtype=bool))
    for i in range(T):  # query i attends to keys 0..i (the tiles after its own see none of it)
        want_o, bound_o = bounds.attention(q[i:i + 1], k_[causal[i]], v_t.T[causal[i]], 1 / math.sqrt(dk))
        check("attention", o[i:i + 1], want_o, bound_o, e)
    p = get("p", "T, D")
    check("o_proj", p, o @ host["w_o"].T, bounds.gemm(o, host["w_o"], 1), e)
    x_attn = get("x_attn", "T, D")
    check("residual 1", x_attn, x + p, bounds.add(x + p), e)
    h2 = get("h2", "T, D")
    want2 = x_attn / np.sqrt((x_attn**2).mean(-1, keepdims=True) + EPS) * host["g_ffn"]
    check("rms_norm 2", h2, want2, bounds.rms_norm(want2, d), e)
    gate, up = get("gate", "T, F"), get("up", "T, F")
    check("gate", gate, h2 @ host["w_gate"].T, bounds.gemm(h2, host["w_gate"], 1), e)
    check("up", up, h2 @ host["w_up"].T, bounds.gemm(h2, host["w_up"], 1), e)
    act = get("act", "T, F")
    want_act = gate / (1 + np.exp(-gate)) * up
    check("swiglu", act, want_act, bounds.swiglu(want_act), e)
    ffn = get("ffn", "T, D")
    check("down", ffn, act @ host["w_down"].T, bounds.gemm(act, host["w_down"], 1), e)
    y = get("out", "T, D")
    check("residual 2", y, x_attn + ffn, bounds.add(x_attn + ffn), e)
    return e, cycles


def main() -> None:
    """Run and check the layer; print the cycles and the largest error of each stage."""
    errors, cycles = run()
    print(f"    prefill of {T} tokens in {TILES} tiles of {TILE}: {cycles} cycles; {len(errors)} stages within their "
          f"bounds (max |error| {max(errors.values()):.2e})")


if __name__ == "__main__":
    main()
