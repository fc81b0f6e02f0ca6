"""One Llama 3 decoder layer, decode step (manual "Decode Phase", L8225–8419), at a small scale, with visa.kernels.

The step for the token sampled last, at 0-based position p = s − 1 (the manual's steps 1 and 2.1–2.3.3), in one
``@device`` launch, each stage a kernel of :mod:`visa.kernels`:

1. ``x_0 = gather(index: input, table: w_emb)`` by TensorDMA (1, L8231–8241) — :class:`Embedding`: the host's
   sampled token id (an i32 in HBM) picks the row of ``w_emb``, straight into DM as the row the RMSNorm reads;
2. ``x_norm = RMSNorm(x)`` (2.1, L8241–8246) — :meth:`Rows.rms_norm`;
3. ``Q, K_new, V_new = x_norm · w_q, w_k, w_v`` (2.2.1, L8247–8257) — :class:`Gemm` (GEMV: M = 1 token);
4. RoPE at position p (2.2.2, L8258–8284): ``t_rope = gather(index: position, table: w_rope)`` on the device
   (:class:`Embedding` over the table's position axis), then the manual's ``einsum(Q, t_rope)`` over the pair
   axis as a :class:`Gemm` against the gathered row;
5. the KV-cache update ``kv_cache[s − 1] = K_rope, V_new`` (2.2.3, L8286–8297) — :class:`KvCache`: two in-place
   tensor DMAs ("Concat on HBM using DMA is also possible", L8297), a row of the K cache and a column of the
   transposed V cache;
6. attention of the G query heads over the whole cache (2.2.4, L8298–8317) — :class:`Attention`, the scores
   scaled by 1/√d_k and soft-maxed over s with max subtraction; the cache positions after p (not yet written)
   are masked by the branch log of the causal table's row p (:class:`CausalMask`, gathered by the same position
   index), so they get probability exactly 0;
7. output projection, residual (2.2.5–2.2.6, L8318–8328) — :class:`Gemm`, :meth:`Rows.add`;
8. ``RMSNorm``, SwiGLU FFN (gate, up, ``silu(gate)·up``, down), residual (2.3, L8329–8364) — :class:`Gemm`,
   :meth:`Rows.swiglu`, :meth:`Rows.add`.

Departures from the manual, with lines:

- **Scale**: vocabulary 512, D = 256, one KV head shared by G = 4 query heads (GQA with h_kv = 1; 70B has
  h_q = 64, h_kv = 8, L7990), d_k = 64, F = 512, a cache of S = 128 positions, one token (B = 1).
- **The cache has a fixed length** S (the manual's cache has exactly s positions, L8298–8317, and needs no mask
  in decode, L8305): the positions after p hold zeros written by the host and are masked by the branch log
  (0 keeps, ExecutionId 8 masks: −inf by two Logic ops), the causal table's row p — the prefill's
  ``attention_mask`` (L8090–8099) read at the query's position.
- **The RoPE table is stored expanded**: ``w_rope`` is ``[s_max, d_k, d_k]`` — each position's 2 × 2 rotations
  on the diagonal of a ``d_k × d_k`` matrix — not ``[s_max, d_k', 2, 2]`` (L8266): the einsum over the pair axis
  f is then a :class:`Gemm` (the same products, plus zeros).  The gathered row is the manual's ``t_rope``.
- **Position**: the manual indexes RoPE with ``position(0) = s`` (L8264) and writes the cache at ``s − 1``
  (L8291); here both use the 0-based index p = s − 1 of the token being processed (one index tensor, passed by
  the host like the token id).  The cache DMA's tile offset is p as a launch-time constant.
- **Final norm, LM head and sampling** (steps 3–5, L8365–8395) are not part of the layer
  (examples/llama_generate.py has them).
- Weights are stored N-major in HBM (``w_q`` as ``m["HD, D"]``, …), the layout :class:`Gemm` reads (8-byte
  DMA packets, L2424–2427); the V cache is kept transposed (``m["Dv, S"]``), the layout the second attention
  GEMM reads, so V_new is written as a column (64 two-byte writes; partial HBM writes cost their
  read-modify-write in the DMA model).  Every intermediate goes through HBM in bf16 (each kernel rounds its
  output once).

Check: the gathers and the appends exactly (they move bytes); every float stage against numpy (float64)
applied to that stage's own inputs as the device produced them, within the stage's derived bound
(:mod:`visa.kernels.bounds`).  Run it with ``visa run examples/llama_decode_layer.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, i32, launch
from visa.hw import bandwidth
from visa.kernels import Arena, Attention, CausalMask, Embedding, Gemm, KvCache, Rows, bounds
from visa.kernels.cache import rope_matrix

AX = AxisSet(T=1, V=512, P=128, D=256, G=4, Dk=64, Dr=64, Dv=64, HD=256, HO=256, S=128, F=512)
m = AX.m
EPS = 1e-5
ROWS_D, ROWS_F = Rows(AX, "T", "D"), Rows(AX, "T", "F")
EMBED, ROPE_ROW = Embedding(AX, "V", "D", rows="T"), Embedding(AX, "P", "Dr, Dk", rows="1")
Q_PROJ, K_PROJ, V_PROJ = Gemm(AX, "T", "HD", "D"), Gemm(AX, "T", "Dk", "D"), Gemm(AX, "T", "Dv", "D")
ROPE_Q, ROPE_K = Gemm(AX, "G", "Dr", "Dk"), Gemm(AX, "T", "Dr", "Dk")
ATTENTION = Attention(AX, q="G", s="S", dk="Dr", dv="Dv")
MASK = CausalMask(AX, q="G", s="S", positions="P")
O_PROJ = Gemm(AX, "T", "D", "HO")
GATE, UP, DOWN = Gemm(AX, "T", "F", "D"), Gemm(AX, "T", "F", "D"), Gemm(AX, "T", "D", "F")
Hbm = HbmTensor[Any, Any, Any]
ARENA = Arena()  # one HBM allocator for every launch of the run
F64 = npt.NDArray[np.float64]


@device(chip=1)
def decode_layer(ctx: Context, position: int, token: Hbm, pos: Hbm, w_emb: Hbm, w_rope: Hbm, mask_table: Hbm,
                 k_cache: Hbm, v_cache_t: Hbm, g_attn: Hbm, w_q: Hbm, w_k: Hbm, w_v: Hbm, w_o: Hbm, g_ffn: Hbm,
                 w_gate: Hbm, w_up: Hbm, w_down: Hbm) -> dict[str, Any]:
    """Steps 1–2.3.3 for the token ``token`` at 0-based ``position`` (``pos`` holds the same index on the device);
    returns every intermediate for the checks."""
    out: dict[str, Any] = {}
    with ARENA.scratch() as arena:  # on-chip memory is the launch's; HBM results persist
        x = out["x"] = EMBED(ctx, arena, w_emb, token)  # x_0 = gather(input, w_emb): DM, one row (L8241)
        t_rope = out["t_rope"] = ROPE_ROW.to_hbm(ctx, arena, w_rope, pos)  # gather(position, w_rope) (L8268)
        x_norm = out["x_norm"] = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(
            ctx, arena, x, ROWS_D.load_broadcast(ctx, arena, g_attn), eps=EPS))
        q = out["q"] = Q_PROJ(ctx, arena, x_norm, w_q)
        k_new = out["k_new"] = K_PROJ(ctx, arena, x_norm, w_k)
        v_new = out["v_new"] = V_PROJ(ctx, arena, x_norm, w_v)
        q_rope = out["q_rope"] = ROPE_Q(ctx, arena, q.view().relabel(m["G, Dk"]), t_rope)  # reshape (noop, L8274)
        k_rope = out["k_rope"] = ROPE_K(ctx, arena, k_new, t_rope)
        k_all, v_all = KvCache(AX, k_cache, v_cache_t, s="S", dk="Dr", dv="Dv").append(ctx, k_rope, v_new, position)
        log = MASK.decode_log(ctx, arena, mask_table, pos)
        attn = out["attn"] = ATTENTION(ctx, arena, q_rope, k_all, v_all, log=log)
        attn_out = out["attn_out"] = O_PROJ(ctx, arena, attn.view().relabel(m["HO"]), w_o)  # [G, Dv] as [h_q·d_k]
        x_attn_dm = ROWS_D.add(ctx, arena, x, ROWS_D.load(ctx, arena, attn_out))
        x_attn = out["x_attn"] = ROWS_D.store(ctx, arena, x_attn_dm)
        h = out["h"] = ROWS_D.store(ctx, arena, ROWS_D.rms_norm(ctx, arena, x_attn_dm,
                                                                ROWS_D.load_broadcast(ctx, arena, g_ffn), eps=EPS))
        gate, up = out["gate"], out["up"] = GATE(ctx, arena, h, w_gate), UP(ctx, arena, h, w_up)
        act = out["act"] = ROWS_F.store(ctx, arena, ROWS_F.swiglu(ctx, arena, ROWS_F.load(ctx, arena, gate),
                                                                  ROWS_F.load(ctx, arena, up)))
        ffn = out["ffn"] = DOWN(ctx, arena, act, w_down)
        out["out"] = ROWS_D.store(ctx, arena, ROWS_D.add(ctx, arena, x_attn_dm, ROWS_D.load(ctx, arena, ffn)))
        return out




def host_tensor(array: Any, text: str, dtype: Any = bf16) -> HostTensor[Any, Any]:
    """A host tensor of ``array`` (rounded to bf16 unless ``dtype`` says otherwise), its numpy dimensions in the
    order of ``text``."""
    names = [a.strip() for a in text.split(",") if a.strip() != "1" and AX.size(a.strip()) > 1]
    arr = np.asarray(array, np.float32) if dtype is bf16 else np.asarray(array)
    return HostTensor.from_numpy(arr, dtype, m[text], axes=" ".join(names))


def read(ctx: Context, t: Hbm, text: str) -> F64:
    """An HBM tensor back on the host as float64, axes in the order of ``text`` (size-1 axes dropped)."""
    names = [a.strip() for a in text.split(",") if AX.size(a.strip()) > 1]
    out = t.to_host(m[text], ctx.pdma).numpy(axes=" ".join(names))
    return np.asarray(out, dtype=np.float64)




def check(name: str, got: F64, want: F64, bound: F64) -> float:
    """Assert ``|got − want| ≤ bound`` elementwise; return the largest error."""
    err = np.abs(got - want)
    assert np.all(err <= bound), (name, float(np.max(err - bound)))
    return float(np.max(err))


def exact(name: str, got: F64, want: F64) -> float:
    """Assert ``got == want`` (a gather or a DMA moves bytes); 0.0."""
    assert np.array_equal(got, want), name
    return 0.0


def run(seed: int = 8, position: int = 128) -> dict[str, float]:
    """The decode step for the ``position``-th token (1-based s; 0-based p = s − 1) on random weights and a cache
    holding p earlier positions; check every stage; return each stage's largest error and the cycles."""
    rng = np.random.default_rng(seed)
    d, f, s, p = AX.size("D"), AX.size("F"), AX.size("S"), position - 1

    def w(rows: int, cols: int) -> F64:  # weights with unit-variance outputs for unit-variance inputs
        return rng.standard_normal((rows, cols)) / math.sqrt(cols)

    emb = host_tensor(rng.standard_normal((512, d)), "V, D")
    token = int(rng.integers(0, 512))  # the token the host sampled at the previous step (L8233)
    g_attn = host_tensor(1 + 0.1 * rng.standard_normal(d), "D")
    g_ffn = host_tensor(1 + 0.1 * rng.standard_normal(d), "D")
    wq, wk, wv = host_tensor(w(256, d), "HD, D"), host_tensor(w(64, d), "Dk, D"), host_tensor(w(64, d), "Dv, D")
    wo = host_tensor(w(d, 256), "D, HO")
    wg, wu, wd = host_tensor(w(f, d), "F, D"), host_tensor(w(f, d), "F, D"), host_tensor(w(d, f), "D, F")
    rope = host_tensor(np.stack([rope_matrix(i, 64) for i in range(AX.size("P"))]), "P, Dr, Dk")
    k_cache, v_cache = np.zeros((s, 64)), np.zeros((s, 64))  # the positions after p: zeros, masked
    k_cache[:p], v_cache[:p] = 0.5 * rng.standard_normal((p, 64)), rng.standard_normal((p, 64))
    k_c, v_ct = host_tensor(k_cache, "S, Dr"), host_tensor(v_cache.T, "Dv, S")
    ctx = Context.acquire()
    addr = iter(range(0, 1 << 30, 1 << 22))

    def put(t: HostTensor[Any, Any], text: str) -> Hbm:
        return t.to_hbm(m["1"], m[text], ctx.pdma, next(addr))

    token_h = put(host_tensor(np.int32(token), "1", i32), "1")
    pos_h = put(host_tensor(np.int32(p), "1", i32), "1")
    table = put(host_tensor(CausalMask.table(AX.size("P"), s), "P, S", i32), "P, S")
    k_h, v_h = put(k_c, "S, Dr"), put(v_ct, "Dv, S")
    args = (token_h, pos_h, put(emb, "V, D"), put(rope, "P, Dr, Dk"), table, k_h, v_h, put(g_attn, "D"),
            put(wq, "HD, D"), put(wk, "Dk, D"), put(wv, "Dv, D"), put(wo, "D, HO"), put(g_ffn, "D"),
            put(wg, "F, D"), put(wu, "F, D"), put(wd, "D, F"))
    first = len(ctx.schedule.ops)
    res = launch(decode_layer, ctx, p, args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7],
                 args[8], args[9], args[10], args[11], args[12], args[13], args[14], args[15])  # for the plugin
    span = ctx.schedule.device_span(first)
    texts = {"t_rope": "Dr, Dk", "x_norm": "T, D", "q": "T, HD", "k_new": "T, Dk", "v_new": "T, Dv",
             "q_rope": "G, Dr", "k_rope": "T, Dr", "attn": "G, Dv", "attn_out": "T, D", "x_attn": "T, D",
             "h": "T, D", "gate": "T, F", "up": "T, F", "act": "T, F", "ffn": "T, D", "out": "T, D"}
    got = {name: read(ctx, res[name], text) for name, text in texts.items()}

    def v64(t: HostTensor[Any, Any], text: str) -> F64:
        return np.asarray(t.numpy(axes=text), dtype=np.float64)

    errors: dict[str, float] = {}
    xv = v64(emb, "V D")[token]
    errors["embedding gather"] = exact("x", np.asarray(res["x"].logical("D"), np.float64), xv)
    r = v64(rope, "P Dr Dk")[p]
    errors["rope row gather"] = exact("t_rope", got["t_rope"], r)
    want = xv / np.sqrt(np.mean(xv**2) + EPS) * v64(g_attn, "D")
    errors["rms_norm (attn)"] = check("x_norm", got["x_norm"], want, bounds.rms_norm(want, d))
    x_norm = got["x_norm"]
    for name, wt, text in (("q", wq, "HD D"), ("k_new", wk, "Dk D"), ("v_new", wv, "Dv D")):
        wm = v64(wt, text)
        errors[name] = check(name, got[name], wm @ x_norm, bounds.gemm(x_norm[None, :], wm, 1)[0])
    q4 = got["q"].reshape(4, 64)
    errors["rope q"] = check("q_rope", got["q_rope"], q4 @ r.T, bounds.gemm(q4, r, 1))
    errors["rope k"] = check("k_rope", got["k_rope"], r @ got["k_new"], bounds.gemm(got["k_new"][None, :], r, 1)[0])
    kc, vc = v64(k_c, "S Dr"), v64(v_ct, "Dv S").T
    kc[p], vc[p] = got["k_rope"], got["v_new"]
    errors["kv append"] = exact("kv cache", np.asarray(k_h.logical("S Dr"), np.float64), kc) + exact(
        "v cache", np.asarray(v_h.logical("Dv S"), np.float64).T, vc)
    want_attn, b_attn = bounds.attention(got["q_rope"], kc[:p + 1], vc[:p + 1], 1 / math.sqrt(64))
    errors["attention"] = check("attention", got["attn"], want_attn, b_attn)
    wom = v64(wo, "D HO")
    flat = got["attn"].reshape(-1)
    errors["o_proj"] = check("attn_out", got["attn_out"], wom @ flat, bounds.gemm(flat[None, :], wom, 1)[0])
    x_attn = got["x_attn"]
    errors["residual 1"] = check("x_attn", x_attn, xv + got["attn_out"], bounds.add(xv + got["attn_out"]))
    want = x_attn / np.sqrt(np.mean(x_attn**2) + EPS) * v64(g_ffn, "D")
    errors["rms_norm (ffn)"] = check("h", got["h"], want, bounds.rms_norm(want, d))
    for name, wt in (("gate", wg), ("up", wu)):
        wm = v64(wt, "F D")
        errors[name] = check(name, got[name], wm @ got["h"], bounds.gemm(got["h"][None, :], wm, 1)[0])
    want = got["gate"] / (1 + np.exp(-got["gate"])) * got["up"]
    errors["swiglu"] = check("act", got["act"], want, bounds.swiglu(want))
    wdm = v64(wd, "D F")
    errors["down"] = check("ffn", got["ffn"], wdm @ got["act"], bounds.gemm(got["act"][None, :], wdm, DOWN.k_tiles)[0])
    errors["residual 2"] = check("out", got["out"], x_attn + got["ffn"], bounds.add(x_attn + got["ffn"]))
    errors["makespan"] = float(span)
    per_cycle = bandwidth(ctx.hw, "HBM")  # the one HBM figure: 1,536 B/cycle per chip (visa.hw.paths)
    read_bytes = 2 * (d + 64 * 64 + 256 * d + 2 * 64 * d + 2 * s * 64 + d * 256 + 3 * d * f) + 4 * s
    errors["memory bound"] = read_bytes / per_cycle  # embedding row, RoPE row, weights, caches, mask row
    return errors


def main() -> None:
    """Run, check every stage against numpy, print each stage's largest error and the launch's cycles."""
    result = run()
    for name, value in result.items():
        if name == "makespan":
            limit = result["memory bound"]
            print(f"    {name:<22}{int(value):>10} cycles on the device; bytes read ÷ HBM bandwidth = "
                  f"{limit:.0f} cycles: memory-roofline utilisation {limit / value:.1%}")
        elif name == "memory bound":
            continue
        else:
            how = "exact" if "gather" in name or "append" in name else "within its derived bound"
            print(f"    {name:<22}{value:>10.2e} max |error| ({how})")


if __name__ == "__main__":
    main()
