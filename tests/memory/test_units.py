"""Fast paths of the byte images: element words, loop nests, unit selections, and the poison rule of streams.

Each fast path must give exactly what the element-by-element path gives (values, written-mask, errors).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import dtypes as dt
from visa.errors import AddressError, DtypeError
from visa.memory.images import DenseImage, load, load_nest, store, store_nest, store_stream
from visa.memory.units import UnitSelection

WHOLE_BYTES = [dt.i8, dt.i16, dt.i32, dt.bf16, dt.f16, dt.f32, dt.f8e4m3, dt.i9, dt.i5]


def _image(rng: np.random.Generator, shape: tuple[int, ...] = (2, 3, 96)) -> DenseImage:
    img = DenseImage(shape)
    img.data[...] = rng.integers(0, 256, size=shape, dtype=np.uint8)
    img.written[...] = rng.random(shape) < 0.8
    return img


def _addresses(loops: list[tuple[int, int]], base: int) -> np.ndarray:
    out = np.full((), base, dtype=np.int64)
    for n, s in loops:
        out = out[..., None] + np.arange(n, dtype=np.int64) * s
    return out.reshape(-1)


def _same(a: tuple[Any, Any] | None, b: tuple[Any, Any] | None) -> None:
    assert a is not None and b is not None
    assert a[0].dtype == b[0].dtype
    np.testing.assert_array_equal(np.ascontiguousarray(a[0]).view(np.uint8), np.ascontiguousarray(b[0]).view(np.uint8))
    np.testing.assert_array_equal(a[1], b[1])


nests = st.lists(st.tuples(st.integers(1, 4), st.integers(-3, 6)), min_size=0, max_size=4)


@settings(max_examples=80, deadline=None)
@given(d=st.sampled_from(WHOLE_BYTES), loops=nests, base=st.integers(0, 40), seed=st.integers(0, 2**16),
       box=st.booleans())
def test_load_nest_is_load_at_the_loop_addresses(d: type[dt.Scalar], loops: list[tuple[int, int]], base: int,
                                                 seed: int, box: bool) -> None:
    rng = np.random.default_rng(seed)
    img = _image(rng)
    if d.bits != d.image_bits:  # i5 and i9 images hold sign extensions
        vals = dt.random_values(d, img.data.shape[:-1] + (96 * 8 // d.image_bits,), rng)
        img.data[...] = dt.to_bytes(d, vals).reshape(img.data.shape)
    units = UnitSelection(img, np.array([[True, True, False], [True, True, False]]) if box
                          else np.array([[True, False, True], [False, True, False]]))
    bits = 8 * base + _addresses(loops, 0) * d.image_bits
    sizes = tuple(n for n, _ in loops)
    if bits.min() < 0 or bits.max() + d.image_bits > 8 * img.nbytes:
        assert load_nest(d, units, 8 * base, loops) is None  # outside the slice: the general path
        return
    try:
        want = load(d, units, bits)
    except DtypeError as err:  # i5/i9 read off their element grid: both paths refuse the same way
        with pytest.raises(DtypeError, match=re.escape(err.message)):
            load_nest(d, units, 8 * base, loops)
        return
    got = load_nest(d, units, 8 * base, loops)
    assert got is not None
    _same((got[0].reshape(units.count, -1), got[1].reshape(units.count, -1)), want)
    assert got[0].shape == (units.count, *sizes)
    whole = load_nest(d, img, 8 * base, loops)
    assert whole is not None
    _same((whole[0].reshape(6, -1), whole[1].reshape(6, -1)), tuple(x.reshape(6, -1) for x in load(d, img, bits)))


@settings(max_examples=80, deadline=None)
@given(d=st.sampled_from(WHOLE_BYTES + [dt.i4]), loops=nests, base=st.integers(0, 40), seed=st.integers(0, 2**16),
       box=st.booleans())
def test_store_nest_is_store_then_poison(d: type[dt.Scalar], loops: list[tuple[int, int]], base: int, seed: int,
                                         box: bool) -> None:
    rng = np.random.default_rng(seed)
    img = _image(rng)
    enabled = (np.array([[True, True, False], [True, True, False]]) if box
               else np.array([[True, False, True], [False, True, False]]))
    bits = 8 * base + _addresses(loops, 0) * d.image_bits
    n = bits.size
    count = int(enabled.sum())
    values = dt.random_values(d, (count, n), rng)
    known = rng.random((count, n)) < 0.7
    other = copy.deepcopy(img)
    done = store_nest(d, UnitSelection(img, enabled), 8 * base, loops, values, known)
    inside = bits.min() >= 0 and bits.max() + d.image_bits <= 8 * img.nbytes
    distinct = np.unique(bits).size == n
    if d.image_bits == 4:
        assert not done  # nibbles share bytes: the element-by-element path
    if not done:  # 4-bit elements, an element outside the slice, or a nest that may visit an element twice
        return
    assert inside and distinct
    store_stream(d, UnitSelection(other, enabled), bits, values, known)
    np.testing.assert_array_equal(img.written, other.written)
    # bytes under poison are undefined (a unit receiving only poison over poison is left as it is)
    np.testing.assert_array_equal(np.where(img.written, img.data, 0), np.where(other.written, other.data, 0))


def test_store_nest_runs_a_sequencer_nest() -> None:
    img = DenseImage((2, 256, 64))
    values = np.arange(2 * 256 * 24, dtype=np.int16).reshape(512, 4, 6) - 3000
    known = np.ones(values.shape, dtype=bool)
    known[7, 1, 2] = False
    assert store_nest(dt.i16, UnitSelection(img, True), 16, [(4, 8), (6, 1)], values, known)  # [4 : 8, 6 : 1] @ 1
    got = load_nest(dt.i16, img, 16, [(4, 8), (6, 1)])
    assert got is not None
    np.testing.assert_array_equal(got[0].reshape(512, 4, 6), np.where(known, values, 0))
    np.testing.assert_array_equal(got[1].reshape(512, 4, 6), known)
    assert not img.written[:, :, :2].any() and not img.written[:, :, 14:18].any()


def test_word_reads_refuse_what_byte_reads_refuse() -> None:
    img = DenseImage((2, 16))
    with pytest.raises(AddressError, match="bytes 14..17 fall outside"):
        load(dt.i32, img, np.array([112]))
    img.data[0, :2] = [0x00, 0x01]  # 256 is no i9 (its top bits are not a sign extension)
    img.written[0, :2] = True
    with pytest.raises(DtypeError, match="sign extension"):
        load(dt.i9, img, np.array([0]))
    with pytest.raises(AddressError, match="byte boundary"):
        store(dt.i16, img, np.array([4]), np.array([1]))


def test_unit_selection_box_and_index_agree() -> None:
    rng = np.random.default_rng(1)
    for enabled in (np.array([[False, True, True], [False, True, True]]),   # a box
                    np.array([[True, False, True], [False, True, False]])):  # not a box
        a = _image(rng)
        b = copy.deepcopy(a)
        sel = UnitSelection(a, enabled)
        assert (sel.box is not None) == bool(enabled[:, 0].sum() == 0)
        idx = np.array([3, 0, 7, 7, 40])
        v, k = sel.gather(idx)
        np.testing.assert_array_equal(v, b.data[enabled][:, idx])
        np.testing.assert_array_equal(k, b.written[enabled][:, idx])
        mask = rng.random((sel.count, 3)) < 0.5
        vals = rng.integers(0, 256, (sel.count, 3), dtype=np.uint8)
        sel.scatter(np.array([5, 9, 11]), vals, mask)
        want = b.data[enabled]
        want[:, [5, 9, 11]] = np.where(mask, vals, want[:, [5, 9, 11]])
        np.testing.assert_array_equal(a.data[enabled], want)
        np.testing.assert_array_equal(a.data[~enabled], b.data[~enabled])


def test_4bit_poison_belongs_to_elements() -> None:
    # bytes of two i4 elements: (known, padding) stays written; (known, poisoned) and (padding, padding) do not
    img = DenseImage((1, 4))
    bits = np.arange(8, dtype=np.int64) * 4
    values = np.array([[1, 2, 3, 4, 5, 6, 7, -8]], dtype=np.int8)
    known = np.array([[True, True, True, False, True, False, False, False]])
    held = np.array([True, True, True, False, True, True, False, False])
    store_stream(dt.i4, img, bits, values, known, held)
    assert img.written[0].tolist() == [True, True, False, False]
    v, k = load(dt.i4, img, bits)
    assert v[0, :3].tolist() == [1, 2, 3] and k[0].tolist() == [True, True, True, True, False, False, False, False]
    store_stream(dt.i4, img, bits, values, known)  # without `held` every unknown element is poison
    assert img.written[0].tolist() == [True, False, False, False]


def test_poison_clears_whatever_wrote_the_bytes() -> None:
    # poison skips the bytes nothing ever wrote; every way of writing counts (methods, views, the raw arrays)
    img = DenseImage((2, 3, 64))
    img.poison(0, 64)  # nothing written yet: nothing to read or clear
    assert img._dirty == (0, 0)
    store(dt.i16, img, np.array([64]), np.array([5]))  # bytes 8, 9 of every unit
    assert store_nest(dt.i8, UnitSelection(img, True), 8 * 20, [(4, 1)], np.ones((6, 4), np.int8), True)
    img._flat_span(30, 31)[1][5 * 64 + 30] = True  # a DMA writing byte 30 of the last unit
    assert img._dirty == (8, 31)
    for lo, hi, left in ((0, 8, 37), (24, 64, 36), (8, 10, 24)):
        img.poison(lo, hi)
        assert int(img._written.sum()) == left
    img.written[0, 0, 50] = True  # whoever takes the raw array may write anywhere
    img.poison(40, 64)
    assert int(img._written.sum()) == 24
    img.poison(0, 64)
    assert not img._written.any()
