"""The Reducer's float sum written out by hand, as the brute-force reference of the tests of the contraction's
order (docs/manual-notes.md "Issue 23 (i23d)"): a group of ``n`` (``2^depth``) products is summed by the tree in
adjacent pairs, depth by depth, each sum rounded to f32 (L4386–4388); the groups reach the accumulator in Time
order, the first stored and each later one added to it (L4408, L4415–4431)."""

from __future__ import annotations

import numpy as np


def manual_order(x: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    """``C[..., i, j] = Σ_k x[..., i, k] · w[..., j, k]`` in f32, in the Reducer's order: the contracted ``k`` is
    ``(k / n, k % n)`` — Time and Packet — as in ``align(…, m["K / n"]…, m["K % n"])``."""
    p = x[..., :, None, :].astype(np.float32) * w[..., None, :, :].astype(np.float32)  # exact: bf16 / fp8 products
    groups = []
    for g in range(p.shape[-1] // n):
        level = [p[..., g * n + j] for j in range(n)]
        while len(level) > 1:
            level = [level[2 * i] + level[2 * i + 1] for i in range(len(level) // 2)]
        groups.append(level[0])
    acc = groups[0].copy()
    for c in groups[1:]:
        acc = acc + c
    return acc


def wide_range(values: np.ndarray, rng: np.random.Generator, spread: int = 12) -> np.ndarray:
    """``values`` (a float type) scaled by random powers of two in ``2^-spread .. 2^spread`` (exact): sums of their
    products round differently in different orders."""
    scale = np.exp2(rng.integers(-spread, spread + 1, size=values.shape)).astype(np.float32)
    return (values.astype(np.float32) * scale).astype(values.dtype)
