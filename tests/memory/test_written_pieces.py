"""``memory.written-pieces`` (visa/memory/fast_nest.py) against the reference ``nest_elements_written`` (issue 24):
a nest whose widest loop steps past the others' span (two tensors apart) is known written exactly when every
element it visits was (read back element by element), and is so whenever the reference says so; with bytes
between the pieces never written (the reference's "not known to be") and with holes inside a piece."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import fastpaths
from visa.dtypes import i8, i16, i32
from visa.memory.images import DenseImage, load, nest_elements_written, store


@settings(max_examples=120, deadline=None)
@given(dtype=st.sampled_from([i8, i16, i32]), inner=st.integers(1, 6), steps=st.integers(1, 5),
       pieces=st.integers(2, 3), gap=st.integers(0, 40), below=st.booleans(), hole=st.booleans(),
       page=st.sampled_from([8, 32, 64]), seed=st.integers(0, 999))
def test_pieces_answer_as_the_elements_say(dtype: type, inner: int, steps: int, pieces: int, gap: int, below: bool,
                                           hole: bool, page: int, seed: int) -> None:
    nb = dtype.image_bits // 8
    span = steps * inner  # elements of one piece (steps × a run of inner)
    stride = span + gap  # elements from one piece to the next
    loops = ((pieces, -stride if below else stride), (steps, inner), (inner, 1))
    base_el = (pieces - 1) * stride if below else 0
    n_bytes = (pieces * stride + 8) * nb
    img = DenseImage((2, n_bytes), page_bytes=page)
    rng = np.random.default_rng(seed)
    offs = np.array([base_el + p * loops[0][1] + e for p in range(pieces) for e in range(span)], dtype=np.int64)
    vals = rng.integers(dtype.min, dtype.max, size=(2, offs.size), endpoint=True)
    known = np.ones((2, offs.size), dtype=bool)
    if hole:
        known[int(rng.integers(0, 2)), int(rng.integers(0, offs.size))] = False
    store(dtype, img, offs * dtype.image_bits, vals, known)
    bit_base = base_el * dtype.image_bits
    got = nest_elements_written(dtype, img, bit_base, loops)
    with fastpaths.disabled("memory.written-pieces"):
        ref = nest_elements_written(dtype, img, bit_base, loops)
    truth = bool(load(dtype, img, offs * dtype.image_bits)[1].all())
    assert got <= truth and ref <= got  # (exact where it answers; never less than the reference)
    if gap * nb >= page * 2 and span > 1 and fastpaths.get("memory.written-pieces").on:
        assert got == truth  # (each piece's pages written whole or not: the answer is exact)


@settings(max_examples=80, deadline=None)
@given(lead=st.lists(st.integers(1, 40), min_size=1, max_size=3), tail=st.lists(st.integers(1, 5), min_size=1,
                                                                                 max_size=3),
       step=st.integers(1, 3), seed=st.integers(0, 999))
def test_a_split_copy_is_the_copy(lead: list[int], tail: list[int], step: int, seed: int) -> None:
    """``memory.nest-copy-split``: a copy from a strided (and overlapping-read) view, split over its short
    trailing axes, writes every element the plain copy writes, with the same value."""
    from numpy.lib.stride_tricks import as_strided

    from visa.memory.fast_nest import copy_split

    shape = (*lead, *tail)
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**63, size=int(np.prod(shape)) * step + 64, dtype=np.int64).view(np.uint64)
    strides = []
    acc = 8 * step
    for n in reversed(shape):  # (each axis steps past the ones inside it, or overlaps them when step is 1)
        strides.append(acc)
        acc *= n
    src = as_strided(base, shape=shape, strides=tuple(reversed(strides)))
    got, want = np.zeros(shape, np.uint64), np.zeros(shape, np.uint64)
    if not copy_split(got, src):
        np.copyto(got, src)
    np.copyto(want, src)
    assert np.array_equal(got, want)
