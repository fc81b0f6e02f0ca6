"""An independent numpy implementation of a Llama-architecture model (float64, no visa kernel), for checking the
simulated model against: the same weights, the same mathematics, none of the device's roundings.

``x = emb[ids]``; per block ``x += W_o · attn(RoPE(W_q · n), RoPE(W_k · n), W_v · n)`` with ``n = RMSNorm(x)``
and ``x += W_down · (silu(W_gate · n') ∘ W_up · n')`` with ``n' = RMSNorm(x)``; logits ``= emb · RMSNorm(x)``
(the LM head tied to the embedding).  RoPE rotates adjacent pairs ``(2i, 2i + 1)`` of each head by ``p ·
base^(−2i/d)`` (llama.cpp's order of the Q and K rows in a GGUF file); query head j reads KV head ``j // group``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.models.loader import LlamaConfig

__all__ = ["Reference", "rope_angles"]

F64 = npt.NDArray[np.float64]


def rope_angles(positions: npt.ArrayLike, head_dim: int, base: float) -> F64:
    """``θ[p, i] = p · base^(−2i/head_dim)`` for the pairs ``i < head_dim / 2``."""
    inv = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    out: F64 = np.asarray(positions, np.float64)[:, None] * inv[None, :]
    return out


class Reference:
    """The model in float64 numpy from weights named as in the GGUF file (``blk.{i}.attn_q.weight`` ``[out, in]``,
    ...); the weights are kept as given (float32) and widened to float64 where used."""

    def __init__(self, config: LlamaConfig, weights: Mapping[str, npt.NDArray[np.floating[Any]]]) -> None:
        self.c = config
        self.w = dict(weights)

    def weight(self, name: str) -> F64:
        """Weight ``name`` as float64."""
        return np.asarray(self.w[name], np.float64)

    def norm(self, x: F64, g: F64) -> F64:
        """RMSNorm of the rows of ``x`` with gain ``g``."""
        out: F64 = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.c.eps) * g
        return out

    def rope(self, x: F64, positions: npt.ArrayLike) -> F64:
        """``x`` ``[T, heads, d]`` with each pair (2i, 2i+1) rotated by θ[p_t, i]."""
        theta = rope_angles(positions, self.c.head_dim, self.c.rope_base)[:, None, :]
        cos, sin = np.cos(theta), np.sin(theta)
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out

    def block(self, b: int, x: F64) -> dict[str, F64]:
        """Block ``b`` on the rows ``x`` ``[T, dim]`` (positions 0…T−1, causal): every intermediate, ``"out"`` the
        block's output."""
        c, t, d = self.c, x.shape[0], self.c.head_dim
        p = f"blk.{b}."
        r: dict[str, F64] = {"x": x}
        r["n"] = n = self.norm(x, self.weight(p + "attn_norm.weight"))
        q = (n @ self.weight(p + "attn_q.weight").T).reshape(t, c.heads, d)
        k = (n @ self.weight(p + "attn_k.weight").T).reshape(t, c.kv_heads, d)
        r["v"] = v = (n @ self.weight(p + "attn_v.weight").T).reshape(t, c.kv_heads, d)
        r["q"], r["k"] = q, k
        r["q_rot"], r["k_rot"] = q, k = self.rope(q, np.arange(t)), self.rope(k, np.arange(t))
        causal = np.tril(np.ones((t, t), bool))
        probs = np.zeros((c.heads, t, t))
        out = np.empty((t, c.heads, d))
        for j in range(c.heads):
            h = j // c.group
            s = np.where(causal, q[:, j] @ k[:, h].T / np.sqrt(d), -np.inf)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            probs[j] = e / e.sum(axis=1, keepdims=True)
            out[:, j] = probs[j] @ v[:, h]
        r["probs"], r["attn"] = probs, out.reshape(t, -1)
        r["o"] = r["attn"] @ self.weight(p + "attn_output.weight").T
        r["x_attn"] = x_attn = x + r["o"]
        r["n2"] = n2 = self.norm(x_attn, self.weight(p + "ffn_norm.weight"))
        r["gate"] = gate = n2 @ self.weight(p + "ffn_gate.weight").T
        r["up"] = up = n2 @ self.weight(p + "ffn_up.weight").T
        r["act"] = act = gate / (1 + np.exp(-gate)) * up
        r["down"] = act @ self.weight(p + "ffn_down.weight").T
        r["out"] = x_attn + r["down"]
        return r

    def hidden(self, ids: list[int]) -> F64:
        """The final normalised hidden state ``[T, dim]`` of the tokens ``ids`` at positions 0…T−1."""
        x = np.asarray(self.w["token_embd.weight"][np.asarray(ids)], np.float64)
        for b in range(self.c.blocks):
            x = self.block(b, x)["out"]
        return self.norm(x, self.weight("output_norm.weight"))

    def head(self, h: F64) -> F64:
        """Logits of the final hidden rows ``h`` (the LM head tied to ``token_embd``)."""
        return h @ self.weight("token_embd.weight").T

    def logits(self, ids: list[int]) -> F64:
        """Next-token logits ``[T, vocab]`` at every position."""
        return self.head(self.hidden(ids))

    def generate(self, ids: list[int], new_tokens: int) -> list[int]:
        """Greedy continuation: ``new_tokens`` ids (recomputing the whole sequence each step)."""
        out = list(ids)
        for _ in range(new_tokens):
            out.append(int(np.argmax(self.head(self.hidden(out)[-1:])[0])))
        return out[len(ids):]
