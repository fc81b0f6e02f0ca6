"""SmolLM2 split over n chips, tensor-parallel as ``examples/llama70b_tp.py`` (Megatron): each chip holds a
shard of every block and runs it in the same ``@device(chip=n)`` launch, every kernel built with ``chip="C"``.

Per block, chip c holds the query heads of its KV heads (rows of w_q, w_k, w_v), their KV cache, and the
columns of w_o that multiply them; its F/n rows of w_gate and w_up and the matching columns of w_down.  The
output projection and the down projection leave a partial ``[T, D]`` sum on every chip; an
:func:`~visa.kernels.all_reduce` (butterfly: bitwise the same sum on every chip) adds them before each residual.
The residual stream, the norms' gains, the embedding (also the LM head), the RoPE and mask tables are replicated:
every chip holds a copy, gathers its own embedding rows and computes the whole LM head (the host reads chip 0's
logits; every chip's are the same bits).

**What divides** (docs/manual-notes.md, "Issue 25: SmolLM2 on 2 and 4 chips").  SmolLM2 has 9 query heads in 3
KV groups of 3 and F = 1536.  A KV head and its group stay on one chip (splitting a group would copy its K and V
to two chips), and every chip of a ``chip="C"`` launch runs the same shapes, so the KV heads are padded with
zero heads to a multiple of n — 4 for n = 2 and 4 (12 query heads) — and each chip takes 4/n of them.  A padded
head's q, k, v rows and w_o columns are zero: its scores are 0, its softmax uniform over the positions kept, its
output 0·V = 0, and zero columns of w_o add exact zeros to the partial sum, so the padding changes no bit of the
result.  F/n must be a :class:`~visa.kernels.Gemm` K (the down projection's): at most 512 or a multiple of 512,
and a multiple of 128 (SwiGLU's rows): 1536/4 = 384 is one; 1536/2 = 768 is not, so on 2 chips F is padded with
zero rows of gate and up (SiLU(0)·0 = 0) and zero columns of down to 2048, 1024 per chip.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from visa.models.loader import LlamaConfig

__all__ = ["BLOCK_LAYOUTS", "block_shards", "chip_config", "padded"]

F32 = npt.NDArray[np.float32]


#: The layouts of a block's weights in :func:`block_shards`' order (one chip's axes: :func:`chip_config`).
BLOCK_LAYOUTS = ("D", "QKV, D", "D, HO", "D", "F2, D", "D, F")


def padded(c: LlamaConfig, n: int) -> tuple[int, int]:
    """``(kv_heads, ffn)`` of the whole model as split over ``n`` chips (the module docstring): the KV heads
    rounded up to a multiple of n, F so that F/n is a multiple of 128 and at most 512 or a multiple of 512."""
    kv = -(-c.kv_heads // n) * n
    fl = -(-c.ffn // (128 * n)) * 128
    if fl > 512:
        fl = -(-fl // 512) * 512
    return kv, fl * n


def chip_config(c: LlamaConfig, n: int) -> LlamaConfig:
    """One chip's part of the model split over ``n`` chips: its query heads, KV heads and F/n; the rest (width,
    vocabulary, head size, RoPE, ε) the model's.  ``n = 1``: the model itself."""
    if n == 1:
        return c
    kv, f = padded(c, n)
    return dataclasses.replace(c, heads=kv // n * c.group, kv_heads=kv // n, ffn=f // n)


def _rows(a: F32, rows: int) -> F32:
    """``a`` with zero rows appended up to ``rows``."""
    out = np.zeros((rows, *a.shape[1:]), np.float32)
    out[:a.shape[0]] = a
    return out


def block_shards(w: dict[str, F32], c: LlamaConfig, n: int, q_scale: float) -> list[tuple[F32, str]]:
    """One block's weights (GGUF names without ``blk.i.``) as every chip's shard, ``[n, …]`` each, with the layout
    text the device reads them by: the attention norm's gain, ``[w_q·q_scale; w_k; w_v]`` of the chip's heads,
    w_o's columns of them, the FFN norm's gain, ``[w_gate; w_up]`` of the chip's F/n rows, w_down's columns of
    them (padded as the module docstring says; ``n = 1``: the weights themselves, stacked)."""
    kv, f = padded(c, n)
    d, group = c.head_dim, c.group
    q = _rows(w["attn_q.weight"] * q_scale, kv * group * d).reshape(n, -1, c.dim)
    k = _rows(w["attn_k.weight"], kv * d).reshape(n, -1, c.dim)
    v = _rows(w["attn_v.weight"], kv * d).reshape(n, -1, c.dim)
    o = _rows(w["attn_output.weight"].T, kv * group * d).reshape(n, -1, c.dim).transpose(0, 2, 1)
    gate = _rows(w["ffn_gate.weight"], f).reshape(n, -1, c.dim)
    up = _rows(w["ffn_up.weight"], f).reshape(n, -1, c.dim)
    down = _rows(w["ffn_down.weight"].T, f).reshape(n, -1, c.dim).transpose(0, 2, 1)

    def rep(a: F32) -> F32:
        return np.broadcast_to(a, (n, *a.shape))

    parts = (rep(w["attn_norm.weight"]), np.concatenate([q, k, v], axis=1), o, rep(w["ffn_norm.weight"]),
             np.concatenate([gate, up], axis=1), down)
    return list(zip(parts, BLOCK_LAYOUTS, strict=True))
