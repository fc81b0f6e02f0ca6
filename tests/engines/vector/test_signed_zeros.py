"""f32 ``Max``/``Min`` decide the sign of a pair of zeros (``arith.fmax32``: ``max(+0, −0) = +0``, ``min(+0, −0) =
−0``; neither the manual nor the reference's ``f32::max`` fixes it): numpy's ``fmax`` gave either sign by a lane's
position in its inner loop, so the inter-slice reduce with its fast paths on and off disagreed on a ring of +0 and
−0 (found by a review, session 38).  Checked against the pairwise rule written out, and the reduce on and off."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, f32, fastpaths
from visa.engines.common import StreamData, StreamLayout
from visa.engines.vector import InterSliceReduceOpF32
from visa.engines.vector.arith import clip_f32, combine, fmax32, fmin32, sequential_reduce
from visa.engines.vector.inter import execute_inter_reduce, plan_inter_reduce

#: Zeros of both signs, NaN and a few ordinary values (so that a zero is sometimes, not always, the answer).
VALUES = np.array([0.0, -0.0, 0.0, -0.0, np.nan, 1.0, -1.0, 2.0**-140], dtype=np.float32)


def _pairwise(op: str, a: float, b: float) -> np.uint32:
    """The rule written out: the non-NaN operand, the larger (smaller) value, and +0 above −0."""
    fa, fb = np.float32(a), np.float32(b)
    if np.isnan(fa):
        return np.float32(fb).view(np.uint32)
    if np.isnan(fb):
        return np.float32(fa).view(np.uint32)
    key = (lambda v: (float(v), not np.signbit(v))) if op == "Max" else (lambda v: (-float(v), bool(np.signbit(v))))
    return (fa if key(fa) >= key(fb) else fb).view(np.uint32)


def _bits(x: np.ndarray) -> list[int]:
    return np.asarray(x, np.float32).view(np.uint32).reshape(-1).tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(range(len(VALUES))), min_size=2, max_size=64))
def test_pairs_and_reductions_follow_the_rule(picks: list[int]) -> None:
    x = VALUES[picks]
    a, b = x[: len(x) // 2], x[len(x) // 2: 2 * (len(x) // 2)]
    for op, fn in (("Max", fmax32), ("Min", fmin32)):
        want = [int(_pairwise(op, u, v)) for u, v in zip(a, b, strict=True)]
        assert _bits(fn(a, b)) == want
        assert _bits(combine(op, "f32", a, b)) == want
        assert _bits(clip_f32(op, a, b)) == want
        acc = np.float32(-np.inf if op == "Max" else np.inf)  # from the identity (every member NaN: it)
        for v in x:  # in order, pair by pair: the rule makes the order irrelevant
            acc = np.uint32(_pairwise(op, float(acc), float(v))).view(np.float32)
        assert _bits(sequential_reduce(op, "f32", x[None, :])) == [int(np.float32(acc).view(np.uint32))]


@pytest.mark.parametrize("op", [InterSliceReduceOpF32.Max, InterSliceReduceOpF32.Min])
@pytest.mark.parametrize("ring", ["G, X", "G, 1 # 2"])
def test_the_inter_slice_reduce_of_signed_zeros_is_one_answer(op: InterSliceReduceOpF32, ring: str) -> None:
    """Two slices holding +0 and −0 in every lane: +0 for Max, −0 for Min, with the fast paths on and off."""
    m = AxisSet(G=1, R=2, X=2, T=1, L=8).m
    layout = StreamLayout(f32, m["1"], m["1 # 2"], m["G, R"], m["T"], m["L"])
    values = np.zeros(layout.shape, np.float32)
    values[0, 0, 1] = -0.0
    known = np.ones(layout.shape, bool)

    def run() -> list[int]:
        cfg = plan_inter_reduce(RNGD, layout, op, m[ring], m["T"])
        out = execute_inter_reduce(cfg, StreamData(values, known))
        got = np.asarray(out.values)[np.asarray(out.known)]
        return sorted(set(_bits(got)))

    want = [0] if op is InterSliceReduceOpF32.Max else [0x80000000]
    assert run() == want
    with fastpaths.disabled():
        assert run() == want


@pytest.mark.parametrize("op", ["Max", "Min"])
@pytest.mark.parametrize("constant", [0.0, -0.0, 1.0, -2.5])
def test_a_clip_by_a_constant_decides_zeros_by_the_rule(op: str, constant: float) -> None:
    """A clip by one constant (the operand broadcast against the stream, either side) follows the pairwise rule:
    the sign of zeros is decided when the constant is a zero, and nothing changes when it is not."""
    fn = fmax32 if op == "Max" else fmin32
    x = np.tile(VALUES, 5)
    c = np.float32(constant)
    want = np.array([_pairwise(op, float(v), float(c)) for v in x], dtype=np.uint32)
    assert np.array_equal(fn(x, c).view(np.uint32), want)
    assert np.array_equal(fn(np.asarray(c), x).view(np.uint32),
                          np.array([_pairwise(op, float(c), float(v)) for v in x], dtype=np.uint32))
