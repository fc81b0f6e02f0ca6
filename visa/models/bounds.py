"""Checking the simulated model against the float64 reference, stage by stage, within bounds derived from the
roundings each kernel performs (:mod:`visa.kernels.bounds`), never tuned.

A probing launch (``SmolLM2.run(..., probe=True)``) returns every block's stage outputs as the device produced
them.  :func:`block_stages` applies the reference's mathematics (:mod:`visa.models.reference`: float64, exact
cos/sin, RoPE base and pair order from the file, query head j on KV head ``j // group``) to each stage's inputs *as
the device produced them* and bounds the distance: RMSNorm, the q|k|v GEMM, RoPE, attention per query head over
the positions ``≤ p`` (the device soft-maxes the whole cache row, masked positions adding exact zeros), the output
projection, the residual adds, the gate|up GEMM, SwiGLU and down.  :func:`head_error` bounds the logits against the
reference's final RMSNorm and LM head on the device's last residual rows, the input's error carried through
(:func:`rms_norm_error`, :func:`gemm_error`).  A wrong RoPE base or pair order, or a query head reading the wrong
KV head, moves a stage by the size of its values, far outside bounds of a few bf16 ulps.

Why stage by stage, not the whole model at once: the residual stream of SmolLM2 holds a few massive activations
(about 22,500 in one dimension from block 11 on, where a bf16 ulp is 128), and a bound carried through a
block's softmax grows by ``e^{2δ}`` per block: a bound over 30 blocks would be true and useless.  The whole
model's distance from the reference is measured and reported instead (``tests/models``, README).

RoPE's own bound: the tables (prefill: C and S, ``x ∘ C + (x Pᵀ) ∘ S``; decode: the rotation matrix) are rounded
to bf16 on the device, ``b`` relative each; a product of two bf16 numbers is exact in f32 and rounds once to bf16
(``b``); the pair swap P is exact; the sum rounds once more.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from visa.kernels import bounds as kb
from visa.models.device import k_tiles
from visa.models.reference import Reference, rope_angles

__all__ = ["block_stages", "gemm_error", "head_error", "reduced_add", "rms_norm_error", "rope_bound"]

F64 = npt.NDArray[np.float64]
B, U = kb.B, kb.U


def gemm_error(x: F64, ex: F64, w: F64) -> F64:
    """``x Wᵀ`` by :class:`~visa.kernels.Gemm` when its input is within ``ex`` of ``x``: a bound on the device's
    output minus the exact ``x Wᵀ``: ``|W| e_x``, then the GEMM's rounding on the perturbed input."""
    aw = np.abs(w)
    prop = ex @ aw.T
    kt = k_tiles(w.shape[1])
    out: F64 = prop + B * (np.abs(x @ w.T) + prop) + kb.gamma(w.shape[1] + kt) * (1 + B) * ((np.abs(x) + ex) @ aw.T)
    return out


def rms_norm_error(x: F64, ex: F64, g: F64, eps: float) -> F64:
    """:meth:`~visa.kernels.Rows.rms_norm` of rows within ``ex`` of ``x``: ``r(x) = √(mean x² + ε)`` is 1-Lipschitz
    in ``‖x‖₂/√D``, so with ``ρ = ‖e_x‖₂/√D < r``: ``|Δy| ≤ |g|·(e_x/(r − ρ) + |x|·ρ/(r(r − ρ)))``; then the
    kernel's bound (infinite where ``ρ ≥ r``)."""
    d = x.shape[-1]
    r = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    rho = np.sqrt(np.sum(ex * ex, axis=-1, keepdims=True) / d)
    with np.errstate(divide="ignore", invalid="ignore"):
        moved = np.where(rho < r, np.abs(g) * (ex / (r - rho) + np.abs(x) * rho / (r * (r - rho))), np.inf)
    out: F64 = moved + (B + kb.gamma(d + 6) * (1 + B)) * (np.abs(x / r * g) + moved)
    return out


def rope_bound(ref: Reference, x: F64, positions: npt.ArrayLike, prefill: bool) -> tuple[F64, F64]:
    """``(want, bound)`` of the device's RoPE of ``x`` ``[T, heads, d]`` (bf16 values) at ``positions``: the
    reference's exact rotation, and the bound of the prefill form or of the decode form (module docstring)."""
    d = ref.c.head_dim
    want = ref.rope(x, positions)
    theta = rope_angles(positions, d, ref.c.rope_base)
    cos = np.repeat(np.abs(np.cos(theta)), 2, axis=1)[:, None, :]
    sin = np.repeat(np.abs(np.sin(theta)), 2, axis=1)[:, None, :]
    ax, xs = np.abs(x), np.abs(x[..., np.arange(d) ^ 1])
    if prefill:
        ea, eb = B * (2 + B) * ax * cos, B * (2 + B) * xs * sin  # table rounding, then the product's
        e = ea + eb
        return want, e + (B + U * (1 + B)) * (np.abs(want) + e)
    tables = B * (ax * cos + xs * sin)  # the rotation's entries rounded to bf16
    rounding = B * (np.abs(want) + tables) + kb.gamma(d + 1) * (1 + B) * (ax * cos + xs * sin) * (1 + B)
    return want, tables + rounding


def _attention(ref: Reference, q: F64, k: F64, v: F64, positions: npt.ArrayLike, cols: int) -> tuple[F64, F64]:
    """Per query head j and row t, :func:`visa.kernels.bounds.attention` of ``q[t, j]`` (already scaled) against
    KV head ``j // group``'s keys and values at the positions ``≤ positions[t]``."""
    c = ref.c
    pos = np.asarray(positions)
    want, bound = np.zeros((len(pos), c.heads, c.head_dim)), np.zeros((len(pos), c.heads, c.head_dim))
    for t, p in enumerate(pos):
        for j in range(c.heads):
            h = j // c.group
            want[t, j], bound[t, j] = (a[0] for a in kb.attention(q[t, j][None], k[:p + 1, h], v[:p + 1, h], 1.0,
                                                                  cols=cols))
    return want.reshape(len(pos), -1), bound.reshape(len(pos), -1)


def block_stages(ref: Reference, b: int, x: F64, dev: dict[str, F64], *, q_scale: float, cols: int,
                 positions: npt.ArrayLike, cache: tuple[F64, F64] | None = None) -> dict[str, tuple[F64, F64, F64]]:
    """``{stage: (got, want, bound)}`` for block ``b`` of a launch whose input rows were ``x`` (bf16 values) and
    whose stage outputs are ``dev`` (``SmolLM2.run(..., probe=True)``'s ``"{b}.{stage}"`` without the prefix).

    ``q_scale``: the factor folded into w_q on the device (its q is the reference's times it, exactly);
    ``cols``: the KV cache length; ``positions``: the rows' positions; ``cache``: the device's K and V caches
    (``[S, kv_heads, d]`` each) for a decode step, whose earlier positions come from earlier launches (a prefill
    from 0 reads only its own keys)."""
    c = ref.c
    p = f"blk.{b}."
    w = ref.weight
    t, hd = x.shape[0], c.head_dim
    prefill = cache is None
    out: dict[str, tuple[F64, F64, F64]] = {}

    def gemm(name: str, inp: F64, weight: F64) -> None:
        want = inp @ weight.T
        out[name] = (dev[name], want, kb.gemm(inp, weight, k_tiles(weight.shape[1])))

    def norm(name: str, inp: F64, gain: str) -> None:
        want = ref.norm(inp, w(p + gain))
        out[name] = (dev[name], want, kb.rms_norm(want, c.dim))

    def add(name: str, a: F64, b_: F64) -> None:
        out[name] = (dev[name], a + b_, kb.add(a + b_))

    norm("n", x, "attn_norm.weight")
    gemm("qkv", dev["n"], np.concatenate([w(p + "attn_q.weight") * q_scale, w(p + "attn_k.weight"),
                                          w(p + "attn_v.weight")]))
    heads = c.heads + c.kv_heads
    qk = dev["qkv"][:, :heads * hd].reshape(t, heads, hd)
    want, bound = rope_bound(ref, qk, positions, prefill)
    out["rot"] = (dev["rot"].reshape(t, heads, hd), want, bound)
    rot = dev["rot"].reshape(t, heads, hd)
    v_new = dev["qkv"][:, heads * hd:].reshape(t, c.kv_heads, hd)
    if prefill:
        k_all, v_all = rot[:, c.heads:], v_new
    else:
        k_all, v_all = cache  # type: ignore[misc]
    want, bound = _attention(ref, rot[:, :c.heads], k_all, v_all, positions, c.kv_heads * cols if not prefill else cols)
    out["attn"] = (dev["attn"], want, bound)
    gemm("o", dev["attn"], w(p + "attn_output.weight"))
    add("x_attn", x, dev["o"])
    norm("n2", dev["x_attn"], "ffn_norm.weight")
    gemm("gu", dev["n2"], np.concatenate([w(p + "ffn_gate.weight"), w(p + "ffn_up.weight")]))
    gate, up = dev["gu"][:, :c.ffn], dev["gu"][:, c.ffn:]
    want = gate / (1 + np.exp(-gate)) * up
    out["act"] = (dev["act"], want, kb.swiglu(want))
    gemm("down", dev["act"], w(p + "ffn_down.weight"))
    add("out", dev["x_attn"], dev["down"])
    return out


def head_error(ref: Reference, x: F64) -> tuple[F64, F64]:
    """``(want, bound)``: the reference's final RMSNorm and LM head on the device's last residual rows ``x``, and
    the bound on the device's logits' distance from them (the norm's error carried through the head)."""
    g = ref.weight("output_norm.weight")
    h = ref.norm(x, g)
    e_h = rms_norm_error(x, np.zeros_like(x), g, ref.c.eps)
    return ref.head(h), gemm_error(h, e_h, ref.weight("token_embd.weight"))


def reduced_add(x: F64, partials: F64) -> tuple[F64, F64]:
    """``(want, bound)`` of the tensor-parallel residual ``x + AllReduce(partials)`` (:mod:`visa.models.parallel`):
    ``partials`` ``[n, …]`` the chips' partial sums as the device holds them (bf16), summed by the butterfly (log2 n
    f32 adds, one bf16 rounding: :func:`visa.kernels.bounds.all_reduce`), then :meth:`~visa.kernels.Rows.add`
    rounds ``x`` plus the reduced sum once more (its bound taken at the sum's largest value)."""
    total, reduced = kb.all_reduce(partials, partials.shape[0].bit_length() - 1)
    want = x + total
    return want, reduced + kb.add(np.abs(want) + reduced)
