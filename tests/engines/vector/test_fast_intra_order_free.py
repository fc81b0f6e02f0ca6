"""``vector.intra-order-free`` (visa/engines/vector/fast_reduce.py): an i32 ``Max`` / ``Min`` intra-slice reduce
over the Packet's four lanes and its time steps in one numpy reduction gives the reference's values, known-mask
and ExecutionIds (the lane tree, then the fold in time order: manual L5363, L5560–5700) — with poison, padding
and several output time steps; f32 and ``AddSat`` take the reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import AxisSet, BranchMode, Context, fastpaths, i32
from visa.engines.common import StreamData
from visa.engines.vector import IntraSliceReduceOpI32
from visa.engines.vector.fast_reduce import ORDER_FREE, by_steps, order_free
from visa.errors import VisaError

from .helpers import collect, layout, rand_i32

#: (slice, time, packet, trimmed packet, reduced axis, output time, output packet, data axes, shape)
CASES = [
    ("A / 2", "R / 4", "R % 4 # 8", "R % 4", "R", "1", "1 # 4", "A R", (8, 16)),  # time and lanes (row max)
    ("A / 2", "A % 2, R / 4", "R % 4 # 8", "R % 4", "R", "A % 2", "1 # 4", "A R", (8, 16)),  # two output steps
    ("A / 2", "R # 12 / 4", "R # 12 % 4 # 8", "R # 12 % 4", "R", "1", "1 # 4", "A R", (8, 10)),  # R padded
    ("A / 2", "R / 4, A % 2", "R % 4 # 8", "R % 4", "R", "A % 2", "1 # 4", "A R", (8, 16)),  # steps interleaved
]


def _reduce(case: tuple[Any, ...], op: Any, x: np.ndarray, poison: int | None) -> Any:
    sl, tm, pk, trimmed, axis, t2, p2, axes, _ = case
    ax = AxisSet(A=case[-1][0], R=case[-1][1])
    m = ax.m
    s = collect(Context.acquire(), layout(ax, i32, "1", "1", sl, tm, pk), x, axes).vector_init()
    b = s.vector_intra_slice_branch(BranchMode.Unconditional)
    n = b.vector_trim_way4(m[trimmed])
    if poison is not None:
        known = np.array(n.data.known)
        known.reshape(-1)[poison % known.size] = False
        n.data = StreamData(n.data.values, known)
    return n.vector_intra_slice_reduce(axis, m[t2], m[p2], op)


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(CASES), op=st.sampled_from([IntraSliceReduceOpI32.Max, IntraSliceReduceOpI32.Min,
                                                         IntraSliceReduceOpI32.AddSat]),
       seed=st.integers(0, 2**16), poison=st.one_of(st.none(), st.integers(0, 1 << 20)))
def test_order_free_reduce_is_the_reference(case: tuple[Any, ...], op: Any, seed: int, poison: int | None) -> None:
    x = rand_i32(np.random.default_rng(seed), case[-1])
    try:
        got = _reduce(case, op, x, poison)
    except VisaError as err:  # (a layout the reducer refuses: refused alike)
        with fastpaths.disabled("vector.intra-order-free"), pytest.raises(type(err)):
            _reduce(case, op, x, poison)
        return
    with fastpaths.disabled("vector.intra-order-free"):
        want = _reduce(case, op, x, poison)
    assert got.data.values.dtype == want.data.values.dtype
    assert np.array_equal(got.data.values, want.data.values) and np.array_equal(got.data.known, want.data.known)
    ids = (got.ve.exec_id, want.ve.exec_id)
    assert (ids[0] is None) == (ids[1] is None) and (ids[0] is None or np.array_equal(*ids))
    assert got.layout == want.layout and str(got.ve) == str(want.ve)


@settings(max_examples=60, deadline=None)
@given(steps=st.integers(1, 9), outs=st.integers(1, 3), seed=st.integers(0, 2**16),
       op=st.sampled_from(["Max", "Min", "AddSat", "Add"]), dtype=st.sampled_from(["i32", "f32"]))
def test_order_free_is_the_tree_then_the_fold(steps: int, outs: int, seed: int, op: str, dtype: str) -> None:
    """At the engine level: ``order_free`` is ``sequential_reduce(tree4(x)[perm])``, or None where it does not
    apply (f32, a sum)."""
    from visa.engines.vector import arith

    rng = np.random.default_rng(seed)
    x = rand_i32(rng, (1, 2, 3, steps * outs, 4))
    if dtype == "f32":
        x = x.view(np.float32)
    perm = rng.permutation(steps * outs).reshape(outs, steps).astype(np.int64)
    got = order_free(op, dtype, x, perm, by_steps)
    if not ORDER_FREE.on or dtype != "i32" or op not in ("Max", "Min"):
        assert got is None
        return
    want = arith.sequential_reduce(op, dtype, by_steps(arith.tree4(op, dtype, x), perm), axis=-1)
    assert got is not None and got.dtype == want.dtype and np.array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(steps=st.integers(60, 140), outs=st.integers(1, 3), seed=st.integers(0, 2**16),
       op=st.sampled_from(["Max", "Min"]), lanes=st.sampled_from([4, 8]), shuffled=st.booleans(),
       block=st.sampled_from([1 << 19, 1, 5000]))
def test_order_free_by_lane_is_the_tree_then_the_fold(steps: int, outs: int, seed: int, op: str, lanes: int,
                                                      shuffled: bool, block: int) -> None:
    """Many steps of four lanes read from wider packets (a strided view, as a padded fetch trimmed to Way4) are
    reduced lane by lane, block by block of outputs (one output a block, a few, all): still
    ``sequential_reduce(tree4(x)[perm])``, also for steps in another order (a gather)."""
    from visa.engines.vector import arith, fast_reduce

    rng = np.random.default_rng(seed)
    x = rand_i32(rng, (1, 2, 3, steps * outs, lanes))[..., :4]
    n = steps * outs
    perm = (rng.permutation(n) if shuffled else np.arange(n)).reshape(outs, steps).astype(np.int64)
    kept, fast_reduce._BLOCK_BYTES = fast_reduce._BLOCK_BYTES, block
    try:
        got = order_free(op, "i32", x, perm, by_steps)
    finally:
        fast_reduce._BLOCK_BYTES = kept
    if not ORDER_FREE.on:
        assert got is None
        return
    want = arith.sequential_reduce(op, "i32", by_steps(arith.tree4(op, "i32", x), perm), axis=-1)
    assert got is not None and got.dtype == want.dtype and np.array_equal(got, want)
