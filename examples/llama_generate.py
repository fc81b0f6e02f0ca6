"""A small Llama 3 model generating tokens: decode steps in a host loop with sampling (manual L8202–8224,
L8225–8419), every device step built from :mod:`visa.kernels`.

Per step: the host looks up the previous token's embedding; each of the two layers runs as in
examples/llama_decode_layer.py (RMSNorm, Q/K/V, RoPE, attention over the layer's cache, output projection,
residual, RMSNorm, SwiGLU FFN, residual); then the final RMSNorm, the LM head and the temperature softmax
(``1/temperature`` as a constant multiplication in the Vector Engine, L8211–8214) run on the device, and the host
samples the next token from the probabilities (L8204, L8215–8220).

Departures from the manual, with lines:

- **Scale**: vocabulary 256, D = 128, G = 4 query heads on one KV head, d_k = 32, F = 256, two layers, a cache
  of 32 positions; a prompt of 2 tokens and 2 generated ones.
- **No prefill** (L7982–8224): the prompt's tokens go through decode steps one at a time, which gives the same
  cache and logits for a causal model; prefill needs the causal mask by the branch log (issue 13).
- **The cache is a fixed 32 positions with an additive mask** (0 for filled positions, −inf for the rest,
  :class:`~visa.kernels.Attention`'s ``mask``): a cache growing by one each step is not a shape the kernels take
  (S a multiple of 32).
- **Host-side embedding gather, RoPE-row gather and KV append** (L8235–8240, L8268, L8286–8297): gather and the
  DMA into part of an existing tensor are the indirect-access helper's (see examples/llama_decode_layer.py).

Check, per step: the probabilities against numpy's softmax of the device's logits, the logits against the LM
head applied to the device's final hidden state, and each layer's attention against numpy on the filled part of
its cache — each within its derived bound (:mod:`visa.kernels.bounds`).  Run it with
``visa run examples/llama_generate.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, launch
from visa.kernels import Arena, Attention, Gemm, Rows, bounds

AX = AxisSet(T=1, D=128, G=4, Dk=32, Dr=32, Dv=32, HD=128, HO=128, S=32, F=256, V=256)
m = AX.m
EPS, TEMPERATURE, LAYERS, PROMPT, NEW_TOKENS = 1e-5, 0.8, 2, (3, 17), 2
ROWS_D, ROWS_F, ROWS_V = Rows(AX, "T", "D"), Rows(AX, "T", "F"), Rows(AX, "T", "V")
Q_PROJ, K_PROJ, V_PROJ = Gemm(AX, "T", "HD", "D"), Gemm(AX, "T", "Dk", "D"), Gemm(AX, "T", "Dv", "D")
ROPE_Q, ROPE_K = Gemm(AX, "G", "Dr", "Dk"), Gemm(AX, "T", "Dr", "Dk")
ATTENTION = Attention(AX, q="G", s="S", dk="Dr", dv="Dv")
O_PROJ = Gemm(AX, "T", "D", "HO")
GATE, UP, DOWN = Gemm(AX, "T", "F", "D"), Gemm(AX, "T", "F", "D"), Gemm(AX, "T", "D", "F")
LM_HEAD = Gemm(AX, "T", "V", "D")
Hbm = HbmTensor[Any, Any, Any]
ARENA = Arena()  # one HBM allocator for every launch of the run
F64 = npt.NDArray[np.float64]


@device(chip=1)
def qkv_rope(ctx: Context, x: Hbm, g_attn: Hbm, w_q: Hbm, w_k: Hbm, w_v: Hbm, rope: Hbm) -> tuple[Hbm, Hbm, Hbm]:
    """RMSNorm, Q/K/V projections, RoPE (L8241–8284)."""
    with ARENA.scratch() as arena:  # on-chip memory is the launch's; HBM results persist
        h = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, ROWS_D.load(ctx, arena, x),
                                                     ROWS_D.load_broadcast(ctx, arena, g_attn), eps=EPS))
        q = ROPE_Q(ctx, arena, Q_PROJ(ctx, arena, h, w_q).view().relabel(m["G, Dk"]), rope)
        return q, ROPE_K(ctx, arena, K_PROJ(ctx, arena, h, w_k), rope), V_PROJ(ctx, arena, h, w_v)


@device(chip=1)
def attend_ffn(ctx: Context, x: Hbm, q: Hbm, k_cache: Hbm, v_cache_t: Hbm, mask: Hbm, w_o: Hbm, g_ffn: Hbm,
               w_gate: Hbm, w_up: Hbm, w_down: Hbm) -> tuple[Hbm, Hbm]:
    """Attention over the masked cache, output projection, residual, RMSNorm, SwiGLU FFN, residual (L8298–8364)."""
    with ARENA.scratch() as arena:  # on-chip memory is the launch's; HBM results persist
        attn = ATTENTION(ctx, arena, q, k_cache, v_cache_t, mask)
        x_attn = ROWS_D.add(ctx, arena, ROWS_D.load(ctx, arena, x),
                            ROWS_D.load(ctx, arena, O_PROJ(ctx, arena, attn.view().relabel(m["HO"]), w_o)))
        h = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, x_attn, ROWS_D.load_broadcast(ctx, arena, g_ffn),
                                                     eps=EPS))
        act = ROWS_F.store(ctx, arena, ROWS_F.swiglu(ctx, arena, ROWS_F.load(ctx, arena, GATE(ctx, arena, h, w_gate)),
                                                     ROWS_F.load(ctx, arena, UP(ctx, arena, h, w_up))))
        out = ROWS_D.add(ctx, arena, x_attn, ROWS_D.load(ctx, arena, DOWN(ctx, arena, act, w_down)))
        return attn, ROWS_D.store(ctx, arena, out)


@device(chip=1)
def head(ctx: Context, x: Hbm, g_final: Hbm, w_lm: Hbm) -> tuple[Hbm, Hbm, Hbm]:
    """Final RMSNorm, LM head, temperature softmax (L8365–8395, L8209–8214)."""
    with ARENA.scratch() as arena:  # on-chip memory is the launch's; HBM results persist
        h = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, ROWS_D.load(ctx, arena, x),
                                                     ROWS_D.load_broadcast(ctx, arena, g_final), eps=EPS))
        logits = LM_HEAD(ctx, arena, h, w_lm)
        probs = ROWS_V.softmax(ctx, arena, ROWS_V.load(ctx, arena, logits), scale=1.0 / TEMPERATURE)
        return h, logits, ROWS_V.store(ctx, arena, probs)


def rope_matrix(position: int, d: int, base: float = 500000.0) -> F64:
    """The rotation of ``w_rope[position]`` as a ``[d_out, d_in]`` matrix (pairs (2i, 2i + 1), Llama 3's base)."""
    r = np.zeros((d, d))
    for i in range(d // 2):
        c, s = math.cos(position * base ** (-2 * i / d)), math.sin(position * base ** (-2 * i / d))
        r[2 * i, 2 * i], r[2 * i, 2 * i + 1], r[2 * i + 1, 2 * i], r[2 * i + 1, 2 * i + 1] = c, -s, s, c
    return r


def bf16_of(array: F64) -> F64:
    """``array`` rounded to bf16 (to nearest even), as float64."""
    return np.asarray(np.asarray(array, np.float32).astype(ml_dtypes.bfloat16), dtype=np.float64)


@dataclass
class Layer:
    """One layer's weights in HBM and its KV cache on the host (the append is the host's, see the docstring)."""

    hbm: dict[str, Hbm]
    k: F64 = field(default_factory=lambda: np.zeros((32, 32)))
    v: F64 = field(default_factory=lambda: np.zeros((32, 32)))


class Model:
    """Random bf16 weights on the host and in HBM, and the per-layer caches kept on the host."""

    def __init__(self, ctx: Context, rng: np.random.Generator) -> None:
        self.ctx = ctx
        self.next = iter(range(0, 1 << 31, 1 << 21))
        d, f, v = AX.size("D"), AX.size("F"), AX.size("V")

        def w(rows: int, cols: int) -> F64:
            return bf16_of(rng.standard_normal((rows, cols)) / math.sqrt(cols))

        self.emb = w(v, d) * math.sqrt(d)
        self.layers: list[Layer] = []
        for _ in range(LAYERS):
            layer = {"g_attn": bf16_of(1 + 0.1 * rng.standard_normal(d)), "w_q": w(128, d), "w_k": w(32, d),
                     "w_v": w(32, d), "w_o": w(d, 128), "g_ffn": bf16_of(1 + 0.1 * rng.standard_normal(d)),
                     "w_gate": w(f, d), "w_up": w(f, d), "w_down": w(d, f)}
            self.layers.append(Layer({name: self.put(a, self.text(name)) for name, a in layer.items()}))
        self.g_final = bf16_of(1 + 0.1 * rng.standard_normal(d))
        self.w_lm = w(v, d)
        self.g_final_hbm, self.w_lm_hbm = self.put(self.g_final, "D"), self.put(self.w_lm, "V, D")

    @staticmethod
    def text(name: str) -> str:
        """The HBM mapping of a weight (N-major, as :class:`Gemm` reads it)."""
        return {"g_attn": "D", "g_ffn": "D", "w_q": "HD, D", "w_k": "Dk, D", "w_v": "Dv, D", "w_o": "D, HO",
                "w_gate": "F, D", "w_up": "F, D", "w_down": "D, F"}[name]

    def put(self, array: F64, text: str) -> Hbm:
        """Write a host array (bf16) to HBM with the mapping ``text``; size-1 axes are left out of ``axes``."""
        names = [a.strip() for a in text.split(",") if AX.size(a.strip()) > 1]
        shaped = np.asarray(array, np.float32).reshape([AX.size(n) for n in names])
        host = HostTensor.from_numpy(shaped, bf16, m[text], axes=" ".join(names))
        return host.to_hbm(m["1"], m[text], self.ctx.pdma, next(self.next))

    def get(self, t: Hbm, text: str) -> F64:
        """An HBM tensor back on the host as float64."""
        names = " ".join(a.strip() for a in text.split(",") if AX.size(a.strip()) > 1)
        return np.asarray(t.to_host(m[text], self.ctx.pdma).numpy(axes=names), dtype=np.float64)

    def step(self, token: int, position: int) -> tuple[F64, dict[str, float]]:
        """One decode step at ``position`` (0-based): the probabilities of the next token, and the checks' errors."""
        errors: dict[str, float] = {}
        x = self.put(self.emb[token][None, :], "T, D")  # the embedding gather, on the host (L8235–8240)
        rope = self.put(rope_matrix(position, 32), "Dr, Dk")  # w_rope[s] (L8268), on the host
        mask = self.put(np.where(np.arange(32) <= position, 0.0, -np.inf), "S")
        for k, layer in enumerate(self.layers):
            hb = layer.hbm
            q, k_new, v_new = launch(qkv_rope, self.ctx, x, hb["g_attn"], hb["w_q"], hb["w_k"], hb["w_v"], rope)
            layer.k[position], layer.v[position] = self.get(k_new, "T, Dr"), self.get(v_new, "T, Dv")
            attn, x = launch(attend_ffn, self.ctx, x, q, self.put(layer.k, "S, Dr"),
                             self.put(layer.v.T, "Dv, S"), mask, hb["w_o"], hb["g_ffn"], hb["w_gate"],
                             hb["w_up"], hb["w_down"])
            want, bound = bounds.attention(self.get(q, "G, Dr"), layer.k[:position + 1],
                                           layer.v[:position + 1], 1 / math.sqrt(32))
            errors[f"attention {k}"] = check(self.get(attn, "G, Dv"), want, bound)
        h, logits, probs = launch(head, self.ctx, x, self.g_final_hbm, self.w_lm_hbm)
        hv, lv, pv = self.get(h, "T, D"), self.get(logits, "T, V"), self.get(probs, "T, V")
        errors["logits"] = check(lv, self.w_lm @ hv, bounds.gemm(hv[None, :], self.w_lm, 1)[0])
        z = lv / TEMPERATURE
        e = np.exp(z - z.max())
        want_p = e / e.sum()
        errors["probs"] = check(pv, want_p, bounds.softmax(want_p, 256, float(z.max() - z.min())))
        return pv, errors


def check(got: F64, want: F64, bound: F64) -> float:
    """Assert ``|got − want| ≤ bound``; the largest error."""
    err = np.abs(got - want)
    assert np.all(err <= bound), float(np.max(err - bound))
    return float(np.max(err))


def run(seed: int = 4) -> tuple[list[int], list[int]]:
    """Feed the prompt, then sample NEW_TOKENS tokens; returns (tokens, cycles per step)."""
    rng = np.random.default_rng(seed)
    ctx = Context.acquire()
    model = Model(ctx, rng)
    tokens, cycles = list(PROMPT), []
    for position in range(len(PROMPT) + NEW_TOKENS - 1):
        before = ctx.schedule.makespan
        probs, _ = model.step(tokens[position], position)
        cycles.append(ctx.schedule.makespan - before)
        if position >= len(PROMPT) - 1:
            p = probs / probs.sum()  # the device's bf16 probabilities, renormalised on the host for sampling
            tokens.append(int(rng.choice(len(p), p=p)))  # the host samples (L8204, L8215–8220)
    return tokens, cycles


def main() -> None:
    """Generate; print the tokens and the cycles of each step."""
    tokens, cycles = run()
    print(f"    prompt {list(PROMPT)} → generated {tokens[len(PROMPT):]}")
    print(f"    cycles per decode step (2 layers + head, host transfers included): {cycles}")


if __name__ == "__main__":
    main()
