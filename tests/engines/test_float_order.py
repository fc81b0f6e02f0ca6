"""Float contractions sum in the one order the manual gives, with every fast path on or off (issue 23,
"Reference mode"; docs/manual-notes.md "Issue 23 (i23d)"): the tree adds adjacent pairs depth by depth
(L4386–4388), the accumulator adds the tree's outputs in Time order (L4408, L4415–4431).  Checked against the
order written out by hand (tests/reducer_order.py) on operands whose sums round differently in other orders."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels.test_fast_paths import _shared_gemm
from tests.reducer_order import manual_order, wide_range
from visa import bf16, fastpaths
from visa import dtypes as dt
from visa.engines.contraction import fast_steps, reference


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 5), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_the_tree_adds_adjacent_pairs_and_the_accumulator_in_order(depth: int, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = wide_range(rng.standard_normal((steps, 3, 1 << depth)).astype(np.float32), rng, 20)
    level = [x[..., j] for j in range(1 << depth)]
    while len(level) > 1:
        level = [level[2 * i] + level[2 * i + 1] for i in range(len(level) // 2)]
    trees = level[0]  # (steps, 3)
    assert np.array_equal(reference.tree(x), trees)
    acc = trees[0].copy()
    for t in trees[1:]:
        acc = acc + t
    assert np.array_equal(reference.in_order(trees, (0,)), acc)
    assert np.array_equal(reference.in_order(trees.reshape(1, steps, 3), (0, 1)), acc)


@pytest.mark.parametrize("off", [(), ("contraction.float-steps",), None])
def test_a_bf16_gemm_sums_in_the_reducers_order(off: tuple[str, ...] | None) -> None:
    """64 × 256 · 256 × 32 in bf16 over two slices (a tree of 32 products, 8 accumulation steps): bit for bit the
    order written out, with every fast path on, the float path off, and every path off (``None``)."""
    rng = np.random.default_rng(23)
    x = wide_range(dt.random_values(bf16, (64, 256), rng), rng)
    y = wide_range(dt.random_values(bf16, (256, 32), rng), rng)
    with fastpaths.disabled(*off) if off is not None else fastpaths.disabled():
        got = _shared_gemm(bf16, x, y).astype(np.float32)
    want = manual_order(x, y.T, 32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    # the operands are such that the order shows: numpy's own f32 product differs somewhere
    assert not np.array_equal((x.astype(np.float32) @ y.astype(np.float32)).view(np.uint32), want.view(np.uint32))


def test_the_float_path_is_registered() -> None:
    assert fast_steps.STEPS.name in fastpaths.names()
