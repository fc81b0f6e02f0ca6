"""``memory.nest-words`` (visa/memory/fast_nest.py) against reading a loop nest element by element (issue 24):
random nests over a written image, of i8, bf16 and i32 elements, read through the whole image and through a
selection of units, give the same values with the path on and off."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from visa import bf16, fastpaths, i8, i32
from visa.memory.images import DenseImage, load_nest_values, store_nest
from visa.memory.units import enabled_units

_loop = st.tuples(st.integers(1, 6), st.integers(-40, 80))


def _read(image: Any, dtype: Any, base: int, loops: list[tuple[int, int]]) -> np.ndarray | None:
    units = image.count if hasattr(image, "units") else 4  # (a selection's units, or the image's)
    values = np.full((units, int(np.prod([n for n, _ in loops]))), 7, dtype=dtype.storage)
    return values if load_nest_values(dtype, image, base, loops, values) else None


@settings(max_examples=80, deadline=None)
@example(i8, [(3, 40), (4, 16)], 16, 0, True, 1)  # an outer loop continuing the run: one run of 64 bytes
@example(i32, [(2, -24), (4, 2)], 2, 8, False, 2)
@example(bf16, [], 4, 3, True, 3)  # the run one word
@given(st.sampled_from([i8, bf16, i32]), st.lists(_loop, min_size=0, max_size=3), st.integers(1, 16),
       st.integers(0, 64), st.booleans(), st.integers(0, 2**32 - 1))
def test_a_nest_read_as_words_is_the_nest_read_by_element(dtype: Any, outer: list[tuple[int, int]], run: int,
                                                         base: int, select: bool, seed: int) -> None:
    img = DenseImage((4, 1024))
    rng = np.random.default_rng(seed)
    img._bytes[...] = rng.integers(0, 256, size=img._bytes.shape, dtype=np.uint8)  # noqa: SLF001
    img._written[...] = True  # noqa: SLF001
    img._pages.mark(slice(None), 0, 1024, True)  # noqa: SLF001
    loops = [*outer, (run, 1)]  # the innermost loop a run of contiguous elements
    image = enabled_units(img, np.array([True, False, True, True])) if select else img
    bit_base = 8 * base + 8 * 512  # (inside the unit whatever the strides' signs)
    fast = _read(image, dtype, bit_base, loops)
    with fastpaths.disabled("memory.nest-words"):
        reference = _read(image, dtype, bit_base, loops)
    assert (fast is None) == (reference is None)
    if fast is not None and reference is not None:
        assert np.array_equal(fast.view(np.uint8), reference.view(np.uint8))


def _write(dtype: Any, loops: list[tuple[int, int]], values: np.ndarray, bit_base: int, units: np.ndarray,
           seed: int) -> tuple[np.ndarray, np.ndarray]:
    img = DenseImage((4, 4096))
    rng = np.random.default_rng(seed)
    img._bytes[...] = rng.integers(0, 256, size=img._bytes.shape, dtype=np.uint8)  # noqa: SLF001
    img._written[:, :2000] = True  # noqa: SLF001  (part of every unit written before)
    img._pages.materialise(slice(None), 0, 4096)  # noqa: SLF001
    img._pages.mark(slice(None), 0, 2000, True)  # noqa: SLF001
    assert store_nest(dtype, enabled_units(img, units), bit_base, loops, values, True)
    return img._bytes.copy(), img._pages.known_span(slice(None), 0, 4096).copy()  # noqa: SLF001


@settings(max_examples=60, deadline=None)
@example(i8, 3, 8, 4, 0, False, 1)  # runs of 8 bytes four times, contiguous: one run of 32
@given(st.sampled_from([i8, bf16, i32]), st.integers(1, 4), st.integers(1, 16), st.integers(1, 4),
       st.integers(0, 40), st.booleans(), st.integers(0, 2**32 - 1))
def test_a_nest_written_as_words_is_the_nest_written_by_element(dtype: Any, outer: int, run: int, middle: int,
                                                               gap: int, padded: bool, seed: int) -> None:
    loops = [(outer, middle * run + gap), (middle, run), (run, 1)]  # (injective: each loop past the one inside)
    rng = np.random.default_rng(seed)
    storage = np.dtype(dtype.storage)
    raw = rng.integers(0, 256, size=(3, outer, middle, run + 2 * padded, storage.itemsize), dtype=np.uint8)
    values = raw.view(storage)[..., 0][..., :run]  # (padded: the last axis a run inside wider rows)
    units = np.array([False, True, True, True])  # (a box of consecutive units)
    base = 8 * 64 + 8 * gap
    fast = _write(dtype, loops, values, base, units, seed)
    with fastpaths.disabled("memory.nest-words"):
        reference = _write(dtype, loops, values, base, units, seed)
    assert np.array_equal(fast[0], reference[0]) and np.array_equal(fast[1], reference[1])
