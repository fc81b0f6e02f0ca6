"""An independent numpy implementation of a Llama-architecture model (float64, no visa kernel), for checking the
simulated model against: the same weights, the same mathematics, none of the device's roundings.

``x = emb[ids]``; per block ``x += W_o · attn(RoPE(W_q · n), RoPE(W_k · n), W_v · n)`` with ``n = RMSNorm(x)``
and ``x += W_down · (silu(W_gate · n') ∘ W_up · n')`` with ``n' = RMSNorm(x)``; logits ``= emb · RMSNorm(x)``
(the LM head tied to the embedding).  RoPE rotates adjacent pairs ``(2i, 2i + 1)`` of each head by ``p ·
base^(−2i/d)`` (llama.cpp's order of the Q and K rows in a GGUF file); query head j reads KV head ``j // group``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from visa.models.loader import LlamaConfig

__all__ = ["Reference", "rope_angles"]

F64 = npt.NDArray[np.float64]


def rope_angles(positions: npt.ArrayLike, head_dim: int, base: float) -> F64:
    """``θ[p, i] = p · base^(−2i/head_dim)`` for the pairs ``i < head_dim / 2``."""
    inv = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    return np.asarray(positions, np.float64)[:, None] * inv[None, :]


class Reference:
    """The model in float64 numpy from a dict of weights named as in the GGUF file (``blk.{i}.attn_q.weight``
    ``[out, in]``, ...)."""

    def __init__(self, config: LlamaConfig, weights: Mapping[str, npt.NDArray[np.floating]]) -> None:
        self.c = config
        self.w = {k: np.asarray(v, np.float64) for k, v in weights.items()}

    def _norm(self, x: F64, g: F64) -> F64:
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.c.eps) * g

    def _rope(self, x: F64, positions: npt.ArrayLike) -> F64:
        """``x`` ``[T, heads, d]`` with each pair (2i, 2i+1) rotated by θ[p_t, i]."""
        theta = rope_angles(positions, self.c.head_dim, self.c.rope_base)[:, None, :]
        cos, sin = np.cos(theta), np.sin(theta)
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out

    def hidden(self, ids: list[int]) -> F64:
        """The final normalised hidden state ``[T, dim]`` of the tokens ``ids`` at positions 0…T−1."""
        c, w = self.c, self.w
        t, d = len(ids), c.head_dim
        pos = np.arange(t)
        x = w["token_embd.weight"][np.asarray(ids)]
        causal = np.tril(np.ones((t, t), bool))
        for b in range(c.blocks):
            p = f"blk.{b}."
            n = self._norm(x, w[p + "attn_norm.weight"])
            q = self._rope((n @ w[p + "attn_q.weight"].T).reshape(t, c.heads, d), pos)
            k = self._rope((n @ w[p + "attn_k.weight"].T).reshape(t, c.kv_heads, d), pos)
            v = (n @ w[p + "attn_v.weight"].T).reshape(t, c.kv_heads, d)
            out = np.empty((t, c.heads, d))
            for j in range(c.heads):
                h = j // c.group
                s = q[:, j] @ k[:, h].T / np.sqrt(d)
                s = np.where(causal, s, -np.inf)
                e = np.exp(s - s.max(axis=1, keepdims=True))
                out[:, j] = (e / e.sum(axis=1, keepdims=True)) @ v[:, h]
            x = x + out.reshape(t, -1) @ w[p + "attn_output.weight"].T
            n = self._norm(x, w[p + "ffn_norm.weight"])
            gate, up = n @ w[p + "ffn_gate.weight"].T, n @ w[p + "ffn_up.weight"].T
            x = x + (gate / (1 + np.exp(-gate)) * up) @ w[p + "ffn_down.weight"].T
        return self._norm(x, w["output_norm.weight"])

    def logits(self, ids: list[int]) -> F64:
        """Next-token logits ``[T, vocab]`` at every position (the LM head tied to ``token_embd``)."""
        return self.hidden(ids) @ self.w["token_embd.weight"].T

    def generate(self, ids: list[int], new_tokens: int) -> list[int]:
        """Greedy continuation: ``new_tokens`` ids (recomputing the whole sequence each step)."""
        out = list(ids)
        for _ in range(new_tokens):
            out.append(int(np.argmax(self.w["token_embd.weight"] @ self.hidden(out)[-1])))
        return out[len(ids):]
