"""A small Llama 3 model generating tokens: decode steps in a host loop with sampling (manual L8202–8224,
L8225–8419), every device step built from :mod:`visa.kernels`.

Per step, one ``@device`` launch: the embedding row of the previous token is gathered by TensorDMA with the id
the host wrote after sampling (L8231–8241); the RoPE row ``t_rope = gather(position, w_rope)`` (L8268) and the
causal table's row for the position (the branch log) are gathered with the position index; each of the two
layers runs as in examples/llama_decode_layer.py — RMSNorm, Q/K/V, RoPE, **the KV-cache append by in-place DMA**
(L8286–8297), attention over the whole cache (positions not yet written masked by the branch log), output
projection, residual, RMSNorm, SwiGLU FFN, residual; then the final RMSNorm, the LM head and the temperature
softmax (``1/temperature`` as a constant multiplication in the Vector Engine, L8211–8214).  The host reads the
probabilities, samples the next token (L8204, L8215–8220) and writes its id for the next launch.

Departures from the manual, with lines:

- **Scale**: vocabulary 256, D = 128, G = 4 query heads on one KV head, d_k = 32, F = 256, two layers, a cache
  of 32 positions; a prompt of 2 tokens and 4 generated ones.
- **No prefill** (L7982–8224): the prompt's tokens go through decode steps one at a time, which gives the same
  cache and logits for a causal model (examples/llama_prefill_layer.py is the prefill of one layer).
- **The cache has a fixed length** (32 positions, zeros from the host at the start) and grows by one in-place
  append per layer and step; the positions after the current one are masked by the branch log (the causal
  table's row, L8090–8099), since the kernels take S a multiple of 32 while the manual's cache has exactly s
  positions (L8298–8317).
- **The RoPE table is stored expanded** (``[s_max, d_k, d_k]``, block-diagonal rotations, instead of
  ``[s_max, d_k', 2, 2]``, L8266) and both RoPE and the cache use the 0-based position p = s − 1 (L8264, L8291);
  see examples/llama_decode_layer.py.
- The host renormalises the device's bf16 probabilities before sampling (they sum to 1 only within bf16).

Check, per step: the gathered embedding row and every cache after its append exactly (the host mirrors the
cache from the device's K_rope and V_new); each layer's attention against numpy over positions 0..p, the logits
against the LM head applied to the device's final hidden state, and the probabilities against numpy's softmax of
the device's logits — each within its derived bound (:mod:`visa.kernels.bounds`).  Run it with
``visa run examples/llama_generate.py``.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, i32, launch
from visa.kernels import Arena, Attention, CausalMask, Embedding, Gemm, KvCache, Rows, bounds
from visa.kernels.cache import rope_matrix

AX = AxisSet(T=1, D=128, G=4, Dk=32, Dr=32, Dv=32, HD=128, HO=128, S=32, P=32, F=256, V=256)
m = AX.m
EPS, TEMPERATURE, LAYERS, PROMPT, NEW_TOKENS = 1e-5, 0.8, 2, (3, 17), 4
ROWS_D, ROWS_F, ROWS_V = Rows(AX, "T", "D"), Rows(AX, "T", "F"), Rows(AX, "T", "V")
EMBED, ROPE_ROW = Embedding(AX, "V", "D", rows="T"), Embedding(AX, "P", "Dr, Dk", rows="1")
MASK = CausalMask(AX, q="G", s="S", positions="P")
Q_PROJ, K_PROJ, V_PROJ = Gemm(AX, "T", "HD", "D"), Gemm(AX, "T", "Dk", "D"), Gemm(AX, "T", "Dv", "D")
ROPE_Q, ROPE_K = Gemm(AX, "G", "Dr", "Dk"), Gemm(AX, "T", "Dr", "Dk")
ATTENTION = Attention(AX, q="G", s="S", dk="Dr", dv="Dv")
O_PROJ = Gemm(AX, "T", "D", "HO")
GATE, UP, DOWN = Gemm(AX, "T", "F", "D"), Gemm(AX, "T", "F", "D"), Gemm(AX, "T", "D", "F")
LM_HEAD = Gemm(AX, "T", "V", "D")
Hbm = HbmTensor[Any, Any, Any]
ARENA = Arena()  # one HBM allocator for every launch of the run
F64 = npt.NDArray[np.float64]
TEXTS = {"g_attn": "D", "g_ffn": "D", "w_q": "HD, D", "w_k": "Dk, D", "w_v": "Dv, D", "w_o": "D, HO",
         "w_gate": "F, D", "w_up": "F, D", "w_down": "D, F"}  # N-major, as Gemm reads them


def layer(ctx: Context, arena: Arena, x: Any, w: dict[str, Hbm], cache: KvCache, t_rope: Hbm, log: Any,
          position: int) -> tuple[Any, dict[str, Hbm]]:
    """One decoder layer (L8241–8364) on the DM row ``x``; returns the next row and the tensors the host checks."""
    h = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, x, ROWS_D.load_broadcast(ctx, arena, w["g_attn"]),
                                                 eps=EPS))
    q = ROPE_Q(ctx, arena, Q_PROJ(ctx, arena, h, w["w_q"]).view().relabel(m["G, Dk"]), t_rope)
    k_rope, v_new = ROPE_K(ctx, arena, K_PROJ(ctx, arena, h, w["w_k"]), t_rope), V_PROJ(ctx, arena, h, w["w_v"])
    k_all, v_all = cache.append(ctx, k_rope, v_new, position)  # kv_cache[s − 1] = K_rope, V_new (L8291–8292)
    attn = ATTENTION(ctx, arena, q, k_all, v_all, log=log)
    x_attn = ROWS_D.add(ctx, arena, x, ROWS_D.load(ctx, arena, O_PROJ(ctx, arena, attn.view().relabel(m["HO"]),
                                                                      w["w_o"])))
    h2 = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, x_attn, ROWS_D.load_broadcast(ctx, arena, w["g_ffn"]),
                                                  eps=EPS))
    act = ROWS_F.store(ctx, arena, ROWS_F.swiglu(ctx, arena, ROWS_F.load(ctx, arena, GATE(ctx, arena, h2, w["w_gate"])),
                                                 ROWS_F.load(ctx, arena, UP(ctx, arena, h2, w["w_up"]))))
    out = ROWS_D.add(ctx, arena, x_attn, ROWS_D.load(ctx, arena, DOWN(ctx, arena, act, w["w_down"])))
    return out, {"q": q, "k_rope": k_rope, "v_new": v_new, "attn": attn}


@device(chip=1)
def step(ctx: Context, position: int, token: Hbm, pos: Hbm, w_emb: Hbm, w_rope: Hbm, mask_table: Hbm,
         weights: list[dict[str, Hbm]], caches: list[KvCache], g_final: Hbm, w_lm: Hbm) -> dict[str, Any]:
    """One decode step (L8229–8395): gathers, the layers, final RMSNorm, LM head, temperature softmax."""
    out: dict[str, Any] = {}
    with ARENA.scratch() as arena:  # on-chip memory is the launch's; HBM results persist
        x = out["x"] = EMBED(ctx, arena, w_emb, token)  # x_0 = gather(input, w_emb), into DM (L8241)
        t_rope = ROPE_ROW.to_hbm(ctx, arena, w_rope, pos)  # t_rope = gather(position, w_rope) (L8268)
        log = MASK.decode_log(ctx, arena, mask_table, pos)  # positions > p masked (branch log)
        for k, (w, cache) in enumerate(zip(weights, caches, strict=True)):
            x, out[f"layer {k}"] = layer(ctx, arena, x, w, cache, t_rope, log, position)
        gain = ROWS_D.load_broadcast(ctx, arena, g_final)
        h = out["h"] = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, x, gain, eps=EPS))
        logits = out["logits"] = LM_HEAD(ctx, arena, h, w_lm)
        out["probs"] = ROWS_V.store(ctx, arena, ROWS_V.softmax(ctx, arena, ROWS_V.load(ctx, arena, logits),
                                                               scale=1.0 / TEMPERATURE))
        return out




def bf16_of(array: F64) -> F64:
    """``array`` rounded to bf16 (to nearest even), as float64."""
    return np.asarray(np.asarray(array, np.float32).astype(ml_dtypes.bfloat16), dtype=np.float64)


class Model:
    """Random bf16 weights on the host and in HBM; per layer a KV cache in HBM and its mirror on the host."""

    def __init__(self, ctx: Context, rng: np.random.Generator) -> None:
        self.ctx = ctx
        self.next = iter(range(0, 1 << 31, 1 << 21))
        d, f, v, s = AX.size("D"), AX.size("F"), AX.size("V"), AX.size("S")

        def w(rows: int, cols: int) -> F64:
            return bf16_of(rng.standard_normal((rows, cols)) / math.sqrt(cols))

        self.emb = bf16_of(w(v, d) * math.sqrt(d))
        self.emb_hbm = self.put(self.emb, "V, D")
        self.rope_hbm = self.put(np.stack([rope_matrix(i, 32) for i in range(AX.size("P"))]), "P, Dr, Dk")
        self.mask_hbm = self.put(CausalMask.table(AX.size("P"), s), "P, S", i32)
        self.weights: list[dict[str, Hbm]] = []
        self.caches: list[KvCache] = []
        self.mirror = [(np.zeros((s, 32)), np.zeros((s, 32))) for _ in range(LAYERS)]  # K [S, Dr], V [S, Dv]
        for _ in range(LAYERS):
            host = {"g_attn": bf16_of(1 + 0.1 * rng.standard_normal(d)), "w_q": w(128, d), "w_k": w(32, d),
                    "w_v": w(32, d), "w_o": w(d, 128), "g_ffn": bf16_of(1 + 0.1 * rng.standard_normal(d)),
                    "w_gate": w(f, d), "w_up": w(f, d), "w_down": w(d, f)}
            self.weights.append({name: self.put(a, TEXTS[name]) for name, a in host.items()})
            self.caches.append(KvCache(AX, self.put(np.zeros((s, 32)), "S, Dr"), self.put(np.zeros((32, s)), "Dv, S"),
                                       s="S", dk="Dr", dv="Dv"))
        self.g_final = bf16_of(1 + 0.1 * rng.standard_normal(d))
        self.w_lm = w(v, d)
        self.g_final_hbm, self.w_lm_hbm = self.put(self.g_final, "D"), self.put(self.w_lm, "V, D")

    def put(self, array: Any, text: str, dtype: Any = bf16) -> Hbm:
        """Write a host array (bf16, or ``dtype``) to HBM with the mapping ``text``; size-1 axes are left out."""
        names = [a.strip() for a in text.split(",") if a.strip() != "1" and AX.size(a.strip()) > 1]
        arr = np.asarray(array, np.float32) if dtype is bf16 else np.asarray(array)
        shaped = arr.reshape([AX.size(n) for n in names])
        host = HostTensor.from_numpy(shaped, dtype, m[text], axes=" ".join(names))
        return host.to_hbm(m["1"], m[text], self.ctx.pdma, next(self.next))

    def get(self, t: Hbm, text: str) -> F64:
        """An HBM tensor back on the host as float64 (a host DMA)."""
        names = " ".join(a.strip() for a in text.split(",") if AX.size(a.strip()) > 1)
        return np.asarray(t.to_host(m[text], self.ctx.pdma).numpy(axes=names), dtype=np.float64)

    def step(self, token: int, position: int) -> tuple[F64, dict[str, float]]:
        """One decode step at ``position`` (0-based): the probabilities of the next token, and the checks' errors."""
        errors: dict[str, float] = {}
        token_h = self.put(np.int32(token), "1", i32)  # the host's sampled id (L8233)
        pos_h = self.put(np.int32(position), "1", i32)
        out = launch(step, self.ctx, position, token_h, pos_h, self.emb_hbm, self.rope_hbm, self.mask_hbm,
                     self.weights, self.caches, self.g_final_hbm, self.w_lm_hbm)
        errors["embedding gather"] = exact(np.asarray(out["x"].logical("D"), np.float64), self.emb[token])
        for k, cache in enumerate(self.caches):
            res, (kc, vc) = out[f"layer {k}"], self.mirror[k]
            kc[position], vc[position] = self.get(res["k_rope"], "T, Dr"), self.get(res["v_new"], "T, Dv")
            errors[f"kv append {k}"] = exact(np.asarray(cache.k.logical("S Dr"), np.float64), kc) + exact(
                np.asarray(cache.v_t.logical("Dv S"), np.float64).T, vc)
            want, bound = bounds.attention(self.get(res["q"], "G, Dr"), kc[:position + 1], vc[:position + 1],
                                           1 / math.sqrt(32))
            errors[f"attention {k}"] = check(self.get(res["attn"], "G, Dv"), want, bound)
        hv, lv, pv = self.get(out["h"], "T, D"), self.get(out["logits"], "T, V"), self.get(out["probs"], "T, V")
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


def exact(got: F64, want: F64) -> float:
    """Assert ``got == want`` (a gather or a DMA moves bytes); 0.0."""
    assert np.array_equal(got, want)
    return 0.0


def run(seed: int = 4) -> tuple[list[int], list[int]]:
    """Feed the prompt, then sample NEW_TOKENS tokens; returns (tokens, device cycles per step: from the step's
    first device operation to its last, the host's transfers excluded)."""
    rng = np.random.default_rng(seed)
    ctx = Context.acquire()
    model = Model(ctx, rng)
    tokens, cycles = list(PROMPT), []
    for position in range(len(PROMPT) + NEW_TOKENS - 1):
        first = len(ctx.schedule.ops)
        probs, _ = model.step(tokens[position], position)
        device_ops = [op for op in ctx.schedule.ops[first:] if op.track != "pdma"]
        cycles.append(max(op.end for op in device_ops) - min(op.start for op in device_ops))
        if position >= len(PROMPT) - 1:
            p = probs / probs.sum()  # the device's bf16 probabilities, renormalised on the host for sampling
            tokens.append(int(rng.choice(len(p), p=p)))  # the host samples (L8204, L8215–8220)
    return tokens, cycles


def main() -> None:
    """Generate; print the tokens and the cycles of each step."""
    tokens, cycles = run()
    print(f"    prompt {list(PROMPT)} → generated {tokens[len(PROMPT):]}")
    print(f"    device cycles per decode step (gathers, 2 layers with their KV appends, head): {cycles}")


if __name__ == "__main__":
    main()
