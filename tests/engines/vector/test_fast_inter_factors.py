"""``vector.inter-factors-digits`` (visa/engines/vector/fast_inter_factors.py): the strided form of an
inter-slice reduce's plan read off the digits is :func:`visa.engines.affine.factor` of the plan's own index arrays
(the members, the valid outputs with their groups), for every layout of the digit plan's tests (L6603–6697:
reductions over slices and time steps, broadcasts, dummies, promotion, an axis over three levels, padding); the
reduce gives the same values and known-mask with the path on and off; and :func:`coarsest` is ``factor`` of the
rows it describes, for random digits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engines.vector.test_fast_inter_plan import LAYOUTS, _plan
from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, fastpaths, i32
from visa.engines import affine
from visa.engines.common import StreamData, StreamLayout
from visa.engines.vector import InterSliceReduceOpI32
from visa.engines.vector.fast_inter_factors import coarsest
from visa.engines.vector.inter import InterReduceConfig, execute_inter_reduce, plan_inter_reduce
from visa.errors import VisaError


def _reference_factors(cfg: InterReduceConfig) -> tuple[object, object]:
    og = cfg.out_group.reshape(-1)
    positions = np.flatnonzero(og >= 0)
    return (affine.factor(cfg.members.reshape(1, -1)),
            affine.factor(np.stack([positions, og[positions]])) if positions.size else None)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(LAYOUTS), st.sampled_from([1, 2, 3]), st.sampled_from([2, 4]), st.sampled_from([2, 4, 6]))
def test_digit_factors_are_the_arrays_factors(layout: tuple[str, ...], g: int, r: int, t: int) -> None:
    needs("vector.inter-plan-digits", "vector.inter-factors-digits")
    cfg = _plan(layout, g, r, t)
    if isinstance(cfg, VisaError) or cfg.factors is None:
        return  # (refused, or the reference plan: nothing read off the digits)
    assert cfg.factors == _reference_factors(cfg)


@pytest.mark.parametrize("layout", LAYOUTS[:9])
def test_the_reduce_is_the_same_with_the_path_off(layout: tuple[str, ...]) -> None:
    m = AxisSet(G=2, R=4, X=4, T=4, U=2, L=8, C=2, A=16).m
    cl, sl, tm, pk, s2, t2 = (text.format(r=4) for text in layout)
    lay = StreamLayout(i32, m["1"], m[cl], m[sl], m[tm], m[pk])
    rng = np.random.default_rng(5)
    values = rng.integers(-(2**31), 2**31, size=lay.shape, dtype=np.int64).astype(np.int32)
    known = rng.random(lay.shape) > 0.05
    out = []
    for off in ((), ("vector.inter-factors-digits",), None):
        with fastpaths.disabled(*off) if off is not None else fastpaths.disabled():
            cfg = plan_inter_reduce(RNGD, lay, InterSliceReduceOpI32.AddSat, m[s2], m[t2])
            res = execute_inter_reduce(cfg, StreamData(values, known))
            out.append((np.asarray(res.values).copy(), np.asarray(res.known).copy()))
    for got in out[1:]:
        assert np.array_equal(got[0], out[0][0]) and np.array_equal(got[1], out[0][1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-6, 12), st.integers(-6, 12)), min_size=0, max_size=6),
       st.integers(-5, 5), st.integers(-5, 5))
def test_coarsest_is_factor(dims: list[tuple[int, int, int]], b0: int, b1: int) -> None:
    spec = [(n, (s, t)) for n, s, t in dims]
    rows = np.array([[b0], [b1]], dtype=np.int64).reshape(2, *([1] * len(spec)))
    for k, (n, (s, t)) in enumerate(spec):
        shape = [1] * len(spec)
        shape[k] = n
        step = np.arange(n, dtype=np.int64).reshape(shape)
        rows = rows + np.stack([step * s, step * t])
    flat = np.broadcast_to(rows, (2, *(n for n, _ in spec))).reshape(2, -1)
    assert coarsest(spec, (b0, b1)) == affine.factor(flat)
