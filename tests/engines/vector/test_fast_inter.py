"""``vector.inter-strided`` (visa/engines/vector/fast_inter.py) against the Inter-Slice Block's reference
``execute_inter_reduce`` (issue 24): the same values and known-mask with the path on and off, for reductions
over slices and time steps (L6603–6653), results broadcast over new slice axes (L6654–6672) or left on the
first slice of a dummy ``1 # n`` (L6636–6653), every operator (wrapping and saturating i32 sums, f32 sums and
products rounded in ring order, L6611–6625), and poisoned members."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, f32, fastpaths, i32
from visa.engines import affine
from visa.engines.common import StreamData, StreamLayout
from visa.engines.vector import InterSliceReduceOpF32, InterSliceReduceOpI32, fast_inter
from visa.engines.vector.inter import execute_inter_reduce, plan_inter_reduce

from .helpers import rand_f32, rand_i32

OPS = [InterSliceReduceOpI32.Add, InterSliceReduceOpI32.AddSat, InterSliceReduceOpI32.Max,
       InterSliceReduceOpI32.Min, InterSliceReduceOpF32.Add, InterSliceReduceOpF32.Mul, InterSliceReduceOpF32.Max,
       InterSliceReduceOpF32.Min]

#: (slice, time, slice2, time2): the reduced axes are those of slice/time that slice2/time2 lack
SHAPES = [
    ("G, R", "T", "G, X", "T"),  # ring over R, the sum on every slice of the group (broadcast X)
    ("G, R", "T", "G, 1 # {r}", "T"),  # the sum on the group's first slice
    ("R, G", "T", "1 # {r}, G", "T"),  # the ring outermost
    ("G, R", "U, T", "G, 1 # {r}", "T"),  # reduced over slices and time steps
    ("G, R", "T", "G, X", "U, T"),  # broadcast over a new time axis too
]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(OPS), st.sampled_from(SHAPES), st.sampled_from([1, 2, 4]), st.sampled_from([2, 4, 8]),
       st.integers(1, 3), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_strided_reduce_is_the_reference(op: object, shape: tuple[str, str, str, str], g: int, r: int, t: int,
                                         seed: int, poison: bool, cluster: bool) -> None:
    rng = np.random.default_rng(seed)
    ax = AxisSet(G=g, R=r, X=r, T=t, U=2, L=8, C=2)
    m = ax.m
    s1, t1, s2, t2 = (text.format(r=r) for text in shape)
    dtype = i32 if op.dtype == "i32" else f32
    lay = StreamLayout(dtype, m["1"], m["C"] if cluster else m["1 # 2"], m[s1], m[t1], m["L"])
    cfg = plan_inter_reduce(RNGD, lay, op, m[s2], m[t2])
    shp = lay.shape
    if dtype is i32:
        values = rand_i32(rng, shp) if rng.random() < 0.5 else rng.integers(-9, 9, size=shp).astype(np.int32)
    else:
        values = rand_f32(rng, shp)
    known = rng.random(shp) > 0.1 if poison else np.ones(shp, dtype=bool)
    data = StreamData(values, known)
    fast = fast_inter.execute(cfg, data)
    assert fast is not None, "every layout here is affine"
    with fastpaths.disabled("vector.inter-strided"):
        reference = execute_inter_reduce(cfg, data)
    assert np.array_equal(np.asarray(fast.known), np.asarray(reference.known))
    got, want = np.asarray(fast.values), np.asarray(reference.values)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_a_configuration_that_is_not_affine_takes_the_reference() -> None:
    """A ring whose members are in no mixed-radix order (``affine.factor`` finds none): the fast path declines and
    the engine's result is the reference's."""
    assert affine.factor(np.array([[0, 1, 3, 2]])) is None
    ax = AxisSet(G=2, R=4, T=1, L=8)
    m = ax.m
    lay = StreamLayout(i32, m["1"], m["1 # 2"], m["G, R"], m["T"], m["L"])
    cfg = plan_inter_reduce(RNGD, lay, InterSliceReduceOpI32.AddSat, m["G, 1 # 4"], m["T"])
    members = cfg.members.reshape(cfg.members.shape[0], -1)
    scrambled = type(cfg)(cfg.op, cfg.dtype, cfg.out, cfg.reduced, cfg.broadcast, members[:, [0, 1, 3, 2]],
                          cfg.out_group, cfg.ring, cfg.full)
    x = np.random.default_rng(1).integers(-(2**31), 2**31, size=lay.shape, dtype=np.int64).astype(np.int32)
    data = StreamData(x, np.ones(lay.shape, dtype=bool))
    assert fast_inter.execute(scrambled, data) is None
    on = execute_inter_reduce(scrambled, data)
    with fastpaths.disabled("vector.inter-strided"):
        off = execute_inter_reduce(scrambled, data)
    assert np.array_equal(on.values, off.values) and np.array_equal(on.known, off.known)


@pytest.mark.parametrize("n", [1, 2, 6, 12])
def test_factor_finds_every_mixed_radix(n: int) -> None:
    rng = np.random.default_rng(n)
    sizes = tuple(int(s) for s in rng.integers(1, 5, size=n))
    strides = tuple(int(s) for s in rng.integers(-50, 50, size=n))
    grid = np.zeros(sizes, dtype=np.int64) + 7
    for d, (size, stride) in enumerate(zip(sizes, strides, strict=True)):
        shape = [1] * n
        shape[d] = size
        grid = grid + stride * np.arange(size).reshape(shape)
    f = affine.factor(grid.reshape(1, -1))
    if grid.size == 1:
        return
    assert f is not None
    got_sizes, (got_strides,), (base,) = f
    rebuilt = np.zeros(got_sizes, dtype=np.int64) + base
    for d, (size, stride) in enumerate(zip(got_sizes, got_strides, strict=True)):
        shape = [1] * len(got_sizes)
        shape[d] = size
        rebuilt = rebuilt + stride * np.arange(size).reshape(shape)
    assert np.array_equal(rebuilt.reshape(-1), grid.reshape(-1))
