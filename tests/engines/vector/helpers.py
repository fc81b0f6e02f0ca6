"""Shared helpers of the Vector Engine tests: streams from logical arrays, exact reference models."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from visa import AxisSet, Context
from visa import dtypes as dt
from visa.engines.common import StreamLayout
from visa.stream.stages import CollectTensor
from visa.testing import make_stream, stream_logical

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I32_EXTREMES = np.array([I32_MIN, I32_MIN + 1, -1, 0, 1, I32_MAX - 1, I32_MAX, 2**30, -(2**30), 12345],
                        dtype=np.int64)
F32_EXTREMES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40,
                         3.4028235e38, -3.4028235e38, 1.1754944e-38, 3e9, -3e9, 65504.0, 1e-8],
                        dtype=np.float32)


def layout(ax: AxisSet, dtype: type[dt.Scalar], chip: str, cluster: str, slice_: str, time: str,
           packet: str) -> StreamLayout:
    m = ax.m
    return StreamLayout(dtype, m[chip], m[cluster], m[slice_], m[time], m[packet])


def collect(ctx: Context, lay: StreamLayout, array: Any, axes: str | None = None) -> Any:
    """A CollectTensor holding ``array`` (no fetch, no cost)."""
    return make_stream(ctx.main, CollectTensor, lay, array, axes)


def logical(stream: Any, axes: str | None = None, **kw: Any) -> np.ndarray:
    return stream_logical(stream, axes, **kw)


def sat_sum(x: np.ndarray, axis: int) -> np.ndarray:
    """The i32 saturating sum along ``axis``, saturating at each step in index order (the accumulator's and the
    ring's order, L5363–5389, L6738)."""
    v = np.moveaxis(x.astype(np.int64), axis, -1)
    acc = np.zeros(v.shape[:-1], np.int64)
    for k in range(v.shape[-1]):
        acc = np.clip(acc + v[..., k], I32_MIN, I32_MAX)
    return acc.astype(np.int32)


def rand_i32(rng: np.random.Generator, shape: Any, extremes: bool = True) -> np.ndarray:
    x = rng.integers(I32_MIN, I32_MAX, size=shape, endpoint=True, dtype=np.int64)
    if extremes:
        flat = x.reshape(-1)
        k = min(flat.size, I32_EXTREMES.size)
        flat[rng.choice(flat.size, k, replace=False)] = I32_EXTREMES[:k]
    return x.astype(np.int32)


def rand_f32(rng: np.random.Generator, shape: Any, extremes: bool = True) -> np.ndarray:
    x = (rng.standard_normal(size=shape) * 10.0 ** rng.integers(-3, 4, size=shape)).astype(np.float32)
    if extremes:
        flat = x.reshape(-1)
        k = min(flat.size, F32_EXTREMES.size)
        flat[rng.choice(flat.size, k, replace=False)] = F32_EXTREMES[:k]
    return x


def nearest_f32(q: Fraction) -> np.float32:
    """The binary32 value nearest the exact rational ``q`` (ties to even), or ±inf on overflow."""
    with np.errstate(over="ignore"):
        guess = np.float32(float(q))
    if not np.isfinite(guess):
        big = Fraction(2) ** 128 - Fraction(2) ** 103  # the rounding boundary of f32 overflow
        if abs(q) >= big:
            return np.float32(np.inf if q > 0 else -np.inf)
        guess = np.float32(np.copysign(3.4028235e38, float(q)))
    best = guess
    with np.errstate(over="ignore"):
        cands = (np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf)))
    for cand in cands:
        if not np.isfinite(cand):
            continue
        d_c, d_b = abs(Fraction(float(cand)) - q), abs(Fraction(float(best)) - q)
        if d_c < d_b or (d_c == d_b and (int(np.array(cand).view(np.uint32)) & 1) == 0):
            best = cand
    if best == 0 and q < 0:
        return np.float32(-0.0)
    return np.float32(best)


def same_f32(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical up to NaN payloads (every NaN equals every NaN)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | (a.view(np.uint32) == b.view(np.uint32))))
