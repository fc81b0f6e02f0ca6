"""Error bounds of the :mod:`visa.kernels` kernels, for checking them against numpy (float64) references.

Each bound is derived from the roundings the kernel performs, never tuned.  Notation: ``u = 2⁻²⁴`` (f32 unit
roundoff), ``b = 2⁻⁸`` (bf16: 8 bits of precision, so rounding to nearest is within ``b·|y|``), ``γ_n =
n·u/(1 − n·u)`` (a sum of n terms in any order in f32 is within ``γ_n·Σ|terms|`` of the exact sum).  Below
bf16's least normal (2⁻¹²⁶) its spacing is 2⁻¹³³, so a rounding to bf16 is within ``b·|y| + t`` with ``t =
2⁻¹³⁴`` (issue 23: a bf16-subnormal result is not within ``b·|y|``); every bound ending in one adds ``t``.  bf16
inputs are exact in f32 and a product of two bf16 values is exact in f32.  The simulator's unary functions are
computed in binary64 and rounded once (``visa.engines.vector.arith.fp_unary``): within ``u`` relative.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import numpy.typing as npt

from visa.kernels.gemm import Gemm

__all__ = ["U", "B", "T", "bf16_round", "check", "gamma", "gemm", "rms_norm", "softmax_rel", "softmax", "swiglu",
           "add", "mul", "attention", "weighted_sum", "all_reduce"]

F64 = npt.NDArray[np.float64]
U = 2.0**-24
B = 2.0**-8
T = 2.0**-134


def bf16_round(array: npt.ArrayLike) -> F64:
    """``array`` rounded to bf16 (nearest even), as float64: a host value as the device holds it."""
    return np.asarray(np.asarray(array, np.float32).astype(ml_dtypes.bfloat16), dtype=np.float64)


def check(name: str, got: npt.ArrayLike, want: npt.ArrayLike, bound: npt.ArrayLike, errors: dict[str, float]) -> None:
    """Assert ``|got − want| ≤ bound`` elementwise (naming ``name`` and the worst excess); record the largest error
    under ``name`` in ``errors`` (the worst over the calls)."""
    err = np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64))
    assert np.all(err <= bound), (name, float(np.max(err - bound)))
    errors[name] = max(errors.get(name, 0.0), float(np.max(err)))


def gamma(n: int) -> float:
    """``γ_n = n·u/(1 − n·u)``."""
    return n * U / (1 - n * U)


def gemm(x: F64, w: F64, k_tiles: int) -> F64:
    """:class:`~visa.kernels.Gemm` ``x[M, K] · w[N, K]ᵀ``: f32 accumulation of exact products and of the
    ``k_tiles`` partials (γ_{K + k_tiles}), one rounding to bf16: ``b·|C| + γ·(1 + b)·(|x| |w|ᵀ)``."""
    out: F64 = np.abs(x @ w.T) * B + gamma(x.shape[1] + k_tiles) * (1 + B) * (np.abs(x) @ np.abs(w).T) + T
    return out


def rms_norm(want: F64, cols: int) -> F64:
    """:meth:`~visa.kernels.Rows.rms_norm`: rstd carries γ_cols (Σx²) and four roundings (scale, + ε, √, 1/·);
    two products add 2u: γ_{cols+6} relative in f32, then ``b``."""
    return (B + gamma(cols + 6) * (1 + B)) * np.abs(want) + T


def softmax_rel(cols: int, spread: float, peak: float = 0.0) -> float:
    """Relative f32 error of :meth:`~visa.kernels.Rows.softmax` before the bf16 rounding: ``z − max`` rounds
    (``u·|z − max|`` absolute, so ``e^…`` gains as much relative) and exp rounds (u), in the numerator and in the
    sum (twice), the sum γ_cols, the reciprocal and the product 2u; ``spread = max (max z − z)``.  ``peak``: the
    largest finite ``|z|`` when the scaling ``z = scale·x`` rounds (a scale that is no power of two): each z and
    the max then move by ``u·|z|``, ``z − max`` by up to ``2u·peak`` more (0, the default, for an exact scaling)."""
    return 2 * (U * (1 + spread + 2 * peak) + U) + gamma(cols) + 2 * U


def softmax(want: F64, cols: int, spread: float, peak: float = 0.0) -> F64:
    """:meth:`~visa.kernels.Rows.softmax`: :func:`softmax_rel`, then ``b``."""
    return (B + softmax_rel(cols, spread, peak) * (1 + B)) * want + T


def swiglu(want: F64) -> F64:
    """:meth:`~visa.kernels.Rows.swiglu`: σ (u), ·gate (u), ·up (u), then ``b``; plus the least f32 subnormal
    for products that underflow."""
    return (B + 3 * U * (1 + B)) * np.abs(want) + 2.0**-149 + T


def add(want: F64) -> F64:
    """:meth:`~visa.kernels.Rows.add`: one f32 rounding of the sum, then ``b``."""
    return (B + U * (1 + B)) * np.abs(want) + T


def mul(want: F64) -> F64:
    """:meth:`~visa.kernels.Rows.mul`: one f32 rounding of the product (exact for two bf16), then ``b``; plus the
    least f32 subnormal for a product that underflows."""
    return (B + U * (1 + B)) * np.abs(want) + 2.0**-149 + T


def attention(q: F64, k: F64, v: F64, scale: float, cols: int | None = None) -> tuple[F64, F64]:
    """:class:`~visa.kernels.Attention` ``softmax(q kᵀ·scale) v``: ``(want, bound)``.

    The scores are a GEMM rounded to bf16 (:func:`gemm`, times ``scale``: at most δ); moving every score by at
    most δ moves each probability by a factor within ``e^{±2δ}``; the softmax adds :func:`softmax_rel` and ``b``
    (ρ in all); the second GEMM (K = S) adds ``b·|out| + γ_{S+k_tiles}·(p̂ |v|)``.  ``cols``: the row length the
    device soft-maxes and contracts when it masks positions by a branch log (k and v then hold only the kept
    ones; the masked add exact zeros): default ``len(k)``.
    """
    s = q @ k.T * scale
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    want = p @ v
    # δ and the spread row by row (a row's probabilities move with its own scores' errors only: one large score
    # elsewhere leaves this row's bound tight)
    delta = np.max(gemm(q, k, 1), axis=-1, keepdims=True) * scale
    spread = np.max(s.max(axis=-1, keepdims=True) - s, axis=-1, keepdims=True) + 2 * delta
    n = k.shape[0] if cols is None else cols
    # (scores whose error bound δ is past ~354 make e^{2δ} no float: the bound is then no bound, +inf — never an
    # OverflowError, and never NaN where a probability is 0); softmax_rel(n, spread) = softmax_rel(n, 0) + 2u·spread
    with np.errstate(over="ignore", invalid="ignore"):
        rho = np.where(2 * delta < 709, np.exp(np.minimum(2 * delta, 709)) * (1 + softmax_rel(n, 0.0) + 2 * U * spread)
                       * (1 + B) - 1, math.inf)
    pv = p @ np.abs(v)
    with np.errstate(invalid="ignore", over="ignore"):
        bound = rho * pv + B * (np.abs(want) + rho * pv) + gamma(n + Gemm.k_tiles_of(n)) * (1 + rho) * pv + T
    return want, np.where(np.isnan(bound), math.inf, bound)


def weighted_sum(y: F64, w: F64) -> F64:
    """:meth:`~visa.kernels.moe.TokenRows.weighted_sum` ``Σ_k w[t, k] · y[t, k, d]`` (``y`` ``[T, K, D]``, ``w``
    ``[T, K]``): each product rounds once in f32 (u) and the K-term sum carries γ_K: γ_{K+1}·Σ_k |w y|; plus the
    least f32 subnormal for products that underflow."""
    k = y.shape[1]
    out: F64 = gamma(k + 1) * np.einsum("tkd,tk->td", np.abs(y), np.abs(w)) + 2.0**-149
    return out


def all_reduce(parts: F64, depth: int, cast: bool = True) -> tuple[F64, F64]:
    """:func:`~visa.kernels.collectives.all_reduce` of the chips' ``parts`` (``[n, …]``, the values as the
    device holds them): ``(want, bound)``.  Every chip's sum is a tree of f32 additions ``depth`` deep (log2 n
    for the butterfly, n − 1 for the ring), each rounding once (u): γ_depth·Σ_c |parts[c]|; then one rounding to
    bf16 (``b``) when ``cast``.  bf16 inputs are exact in f32 (the fetch's widening, L1960)."""
    want: F64 = parts.sum(axis=0)
    f32 = gamma(depth) * np.abs(parts).sum(axis=0)
    bound: F64 = (B * (np.abs(want) + f32) + f32 + T) if cast else f32
    return want, bound
