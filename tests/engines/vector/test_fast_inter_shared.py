"""``vector.inter-shared`` (visa/engines/vector/fast_inter_shared.py) and ``cast.shared-rows``
(visa/engines/fast_shared.py) against the references (issue 24): an inter-slice reduce whose result is broadcast
over a new slice axis (L6654–6672) gives :class:`~visa.engines.shared.SharedRows` — one row per class of equal
slices — whose values and known-mask are the reference's, for every operator (L6611–6625), poisoned members, and
a time broadcast too; the Cast Engine (L6756–6819) converts the shared rows to the reference's bytes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, f32, fastpaths, i8, i32
from visa.engines import cast, fast_shared
from visa.engines.common import StreamData, StreamLayout
from visa.engines.shared import SharedRows
from visa.engines.vector import InterSliceReduceOpF32, InterSliceReduceOpI32, fast_inter_shared
from visa.engines.vector.inter import execute_inter_reduce, plan_inter_reduce

from .helpers import rand_f32, rand_i32

OPS = [InterSliceReduceOpI32.Add, InterSliceReduceOpI32.AddSat, InterSliceReduceOpI32.Max,
       InterSliceReduceOpI32.Min, InterSliceReduceOpF32.Add, InterSliceReduceOpF32.Mul, InterSliceReduceOpF32.Max,
       InterSliceReduceOpF32.Min]

#: (slice, time, slice2, time2): every output broadcasts the group's result over the new slice axis X
SHAPES = [("G, R", "T", "G, X", "T"), ("R, G", "T", "X, G", "T"), ("G, R", "T", "G, X", "U, T"),
          ("G, R", "U, T", "G, X", "T")]

REFERENCE = ("vector.inter-shared", "vector.inter-strided", "cast.shared-rows")


def _same(a: StreamData, b: StreamData) -> None:
    assert np.array_equal(np.asarray(a.known), np.asarray(b.known))
    got, want = np.asarray(a.values), np.asarray(b.values)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(OPS), st.sampled_from(SHAPES), st.sampled_from([1, 2, 4]), st.sampled_from([2, 4, 8]),
       st.integers(1, 3), st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_a_broadcast_result_is_shared_rows_equal_to_the_reference(op: object, shape: tuple[str, str, str, str],
                                                                  g: int, r: int, t: int, seed: int, poison: bool,
                                                                  cluster: bool) -> None:
    rng = np.random.default_rng(seed)
    m = AxisSet(G=g, R=r, X=r, T=t, U=2, L=8, C=2).m
    s1, t1, s2, t2 = shape
    dtype = i32 if op.dtype == "i32" else f32  # type: ignore[attr-defined]
    lay = StreamLayout(dtype, m["1"], m["C"] if cluster else m["1 # 2"], m[s1], m[t1], m["L"])
    cfg = plan_inter_reduce(RNGD, lay, op, m[s2], m[t2])
    shp = lay.shape
    values = (rand_i32(rng, shp) if dtype is i32 else rand_f32(rng, shp))
    known = rng.random(shp) > 0.1 if poison else np.ones(shp, dtype=bool)
    data = StreamData(values, known)
    fast = fast_inter_shared.execute(cfg, data)  # (the path itself, whatever the environment switches)
    # one row per group of X (and one for the positions of a dummy cluster, all invalid)
    assert isinstance(fast, SharedRows) and fast.rows <= int(np.prod(shp[:3])) // r + 1
    with fastpaths.disabled(*REFERENCE):
        reference = execute_inter_reduce(cfg, data)
    assert not isinstance(reference, SharedRows)
    _same(fast, reference)
    labels = fast.replicas
    assert labels is not None
    flat = np.asarray(reference.values).reshape(labels.size, -1)
    for label in np.unique(labels):  # the labels claim only what holds
        rows = flat[labels == label]
        assert np.array_equal(rows.view(np.uint8), np.broadcast_to(rows[:1], rows.shape).view(np.uint8))
    if dtype is i32 and t == 1:  # the Cast Engine over the shared rows: the reference's narrowing (wrapping)
        plan = cast.plan(RNGD, i32, i8, m["L"], m["L # 32"], m[t2])
        narrowed = cast.execute(plan, fast)
        assert isinstance(narrowed, SharedRows) or not fast_shared.CAST.on
        with fastpaths.disabled(*REFERENCE):
            _same(narrowed, cast.execute(plan, reference))


@pytest.mark.parametrize("slice2", ["G, 1 # 4", "G, R"])
def test_an_output_without_repeated_slices_is_not_shared(slice2: str) -> None:
    """A result left on one slice of the group (``1 # n``, L6636–6653) has distinct rows (the others invalid, one
    class) — shared when at most half are distinct — or, kept per slice (no reduce over slices), none shared."""
    m = AxisSet(G=2, R=4, T=2, L=8).m
    lay = StreamLayout(i32, m["1"], m["1 # 2"], m["G, R"], m["T"], m["L"])
    cfg = plan_inter_reduce(RNGD, lay, InterSliceReduceOpI32.Add, m[slice2], m["1"] if slice2 == "G, R" else m["T"])
    x = np.random.default_rng(3).integers(-100, 100, size=lay.shape).astype(np.int32)
    data = StreamData(x, np.ones(lay.shape, dtype=bool))
    got = fast_inter_shared.execute(cfg, data)
    with fastpaths.disabled(*REFERENCE):
        reference = execute_inter_reduce(cfg, data)
    if got is not None:
        _same(got, reference)
    else:
        _same(execute_inter_reduce(cfg, data), reference)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 24), st.integers(1, 6), st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_unique_rows_equals_numpy_unique(n: int, width: int, values: int, seed: int) -> None:
    """The classes by row hash are numpy's ``unique(axis=0)``: the same sorted rows and the same inverse, with
    repeats and -1 (invalid) entries; with every key forced equal (a collision) the whole-row sort answers."""
    rows = np.random.default_rng(seed).integers(-1, values, size=(n, width)).astype(np.int64)
    want_u, want_i = np.unique(rows, axis=0, return_inverse=True)
    got_u, got_i = fast_inter_shared._unique_rows(rows)
    assert np.array_equal(got_u, want_u) and np.array_equal(got_i, want_i.reshape(-1))
    forced = fast_inter_shared._unique_rows(rows, np.zeros(width, dtype=np.int64))  # one key: the fallback
    assert np.array_equal(forced[0], want_u) and np.array_equal(forced[1], want_i.reshape(-1))
