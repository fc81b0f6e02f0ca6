"""``contraction.product-into`` (visa/engines/contraction/fast_into.py) against the reference product of
``compute._contract`` (issue 24): for i8 operands with any arrangement of batch, row, contracted and column
labels, and the output's labels in any order, the integers written into the output are the reference's float32
sums converted to i32 — exactly (the Reducer's integer sums, L4384–4548); a kernel's accumulated stream, its
committed bytes and every op's cycles are the same with the path on and off."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engines.test_fast_compute import _every_slice, _two_slices
from visa import fastpaths, i8
from visa.engines.contraction import compute


@st.composite
def _products(draw: st.DrawFn) -> tuple[np.ndarray, list[str], np.ndarray, list[str], list[str], dict[str, int]]:
    """i8 operands over labels b (batch, split), c (a second batch label), m (rows), k (contracted), n, p
    (columns); the output's non-batch labels in a drawn order, the weights' axes in a drawn memory order."""
    sizes = {"b": draw(st.integers(2, 9)), "c": draw(st.integers(1, 2)), "m": draw(st.integers(1, 5)),
             "k": draw(st.integers(1, 70)), "n": draw(st.integers(1, 4)), "p": draw(st.integers(1, 3))}
    la = ["b", *draw(st.permutations(["c", "m", "k"]))]
    lw = ["b", *draw(st.permutations(["c", "k", "n", "p"]))]
    lo = ["b", *draw(st.permutations(["c", "m", "n", "p"]))]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = rng.integers(-128, 128, size=[sizes[x] for x in la]).astype(np.int8)
    w = rng.integers(-128, 128, size=[sizes[x] for x in lw]).astype(np.int8)
    if draw(st.booleans()):  # the weights a strided view (as the TRF window's)
        wide = rng.integers(-128, 128, size=(*w.shape[:-1], 2 * w.shape[-1])).astype(np.int8)
        w = wide[..., ::2]
    return a, la, w, lw, lo, sizes


@settings(max_examples=60, deadline=None)
@given(_products())
def test_the_product_written_into_the_output_is_the_reference(
        case: tuple[np.ndarray, list[str], np.ndarray, list[str], list[str], dict[str, int]]) -> None:
    a, la, w, lw, lo, sizes = case
    reduced = ["k"]
    assert math.prod(sizes.values()) < 10**6
    with fastpaths.disabled("contraction.product-into"):
        want = compute._contract(a, la, w, lw, lo, sizes, reduced, np.float32).astype(np.int32)
    out = np.full([sizes[x] for x in lo], -1, dtype=np.int32)
    got = compute._contract(a, la, w, lw, lo, sizes, reduced, np.float32, out=out)
    if got is not out:  # (not written into: the caller assigns it, as compute._run does)
        out[...] = got
    assert np.array_equal(out, want)
    ids = {lab: k for k, lab in enumerate(sizes)}
    brute = np.einsum(a.astype(np.int64), [ids[x] for x in la], w.astype(np.int64), [ids[x] for x in lw],
                      [ids[x] for x in lo])
    assert np.array_equal(want, brute)


def test_a_kernel_is_the_same_with_the_path_off() -> None:
    """The accumulated stream (values, known), the committed DM bytes and every op's cycles, on and off, for
    two slices and for every slice of the chip (i8, sums exact in float32)."""
    for layout in (_two_slices, _every_slice):
        for poison in (False, True):
            fast, fast_cycles = layout(i8, 64, poison, 7)
            with fastpaths.disabled("contraction.product-into"):
                ref, ref_cycles = layout(i8, 64, poison, 7)
            assert fast_cycles == ref_cycles
            for got, want in zip(fast, ref, strict=True):
                assert got.dtype == want.dtype
                assert np.array_equal(got, want)
