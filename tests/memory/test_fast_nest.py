"""``memory.nest-words`` (visa/memory/fast_nest.py) against reading a loop nest element by element (issue 24):
random nests over a written image, of i8, bf16 and i32 elements, read through the whole image and through a
selection of units, give the same values with the path on and off."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from visa import bf16, fastpaths, i8, i32
from visa.memory.images import DenseImage, load_nest_values
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
