"""``fetch.pair-padded-nest`` (visa/engines/fetch_fast.py) against the fetch with the path off (issue 24): an
interleaved pair of DM tensors far apart whose packet ends in padding lanes (``A % 4 # 8``: a bf16 pair widened to
f32 for the Vector Engine's Way4 float cluster) is read as one loop nest — the padded lanes' reach past the element
is no carry into the other tensor.  Values and known-mask equal the path off's (and every path off's), for
the second tensor above or below the first, partly written or not, with and without the masking stage."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.engines.test_heldout2_paths import _interleaved
from visa import AxisSet, Context, PadValue, bf16, f32, fastpaths, i8, i16, i32


def _fetch(dtype: Any, dst: Any, n_e: int, lanes: int, width: int, gap: int, written: int, pad: Any, seed: int
           ) -> tuple[np.ndarray, np.ndarray]:
    out: tuple[np.ndarray, np.ndarray] = _interleaved(None, False, dtype, n_e, f"A / {lanes}, I",
                                                      f"A % {lanes} # {width}", gap, written, seed, dst, pad)
    return out


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from([(bf16, f32), (i8, i8), (i16, i32), (i32, i32)]), n_e=st.sampled_from([16, 64]),
       lanes=st.sampled_from([2, 4]), gap_units=st.sampled_from([-7, -4, 4, 9]), short=st.booleans(),
       pad=st.sampled_from([None, PadValue.Zero, PadValue.Max]), seed=st.integers(0, 99))
def test_padded_pair_nest_is_the_reference(kind: tuple[Any, Any], n_e: int, lanes: int, gap_units: int, short: bool,
                                           pad: Any, seed: int) -> None:
    dtype, dst = kind
    width = 8 if dst.image_bits >= 16 else 32
    gap = gap_units * n_e * dtype.image_bits // 8  # whole tensors apart, above or below
    written = n_e // 2 if short else n_e
    fast = _fetch(dtype, dst, n_e, lanes, width, gap, written, pad, seed)
    with fastpaths.disabled("fetch.pair-padded-nest"):
        want = _fetch(dtype, dst, n_e, lanes, width, gap, written, pad, seed)
    with fastpaths.disabled():
        every_off = _fetch(dtype, dst, n_e, lanes, width, gap, written, pad, seed)
    for got, ref, off in zip(fast, want, every_off, strict=True):
        assert np.array_equal(np.asarray(got), np.asarray(ref)) and np.array_equal(np.asarray(got), np.asarray(off))


def test_the_padded_pair_is_one_nest() -> None:
    """The held-out bf16 multiply's fetch (Element 2048, Time ``A / 4, I``, Packet ``A % 4 # 8``, the tensors
    128 KiB apart) is a loop nest with the path on, none with it off."""
    from visa.engines import fetch as F
    from visa.engines import fetch_fast

    m = AxisSet(A=2048, I=2).m
    cfg = F.plan(Context().hw, bf16, f32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], m["A / 4, I"], m["A % 4 # 8"],
                 interleave=m["I"])
    bases = np.array([0, 8 * (1 << 17)], dtype=np.int64)
    if fastpaths.get("fetch.pair-padded-nest").on:
        assert fetch_fast._nest(cfg, bases, cfg.sequencer.entries) is not None
    with fastpaths.disabled("fetch.pair-padded-nest"):
        assert fetch_fast._nest(cfg, bases, cfg.sequencer.entries) is None
