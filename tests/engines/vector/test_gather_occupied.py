"""``vector.gather-occupied`` (visa/engines/vector/fast_relayout.py): an operand gather by parts over a stream
whose padding slices read nothing (one row per slice, ``m["T # 256"]``) gives the values and known-mask the
reference's index over every position gives — the occupied slices' own rows, and elsewhere the source's first
element, unknown."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from visa import AxisSet, fastpaths
from visa.engines.vector.relayout import apply_gather, plan_gather


@skip_unless("vector.gather-occupied", "vector.gather-by-parts")
@settings(max_examples=25, deadline=None)
@given(rows=st.integers(1, 5), cols=st.sampled_from([8, 16, 24]), per_row=st.booleans(), seed=st.integers(0, 999),
       holes=st.floats(0, 0.5))
def test_gather_occupied_is_the_reference(rows: int, cols: int, per_row: bool, seed: int, holes: float) -> None:
    m = AxisSet(T=rows, D=cols).m
    stream = (m["1"], m["1 # 2"], m["T # 256"], m["D / 8"], m["D % 8"])
    # a per-row statistic (one value a slice, broadcast over the row) or a row of the columns
    source = (m["1"], m["1 # 2"], m["T # 256"], m["1 # 8"] if per_row else m["D"])
    g = plan_gather(source, stream, "test", "VRF operand")
    assert g.occupied is not None and list(g.occupied) == list(range(rows))
    rng = np.random.default_rng(seed)
    shape = (1, 2, 256, source[3].size)
    values = rng.standard_normal(shape).astype(np.float32)
    known = rng.random(shape) >= holes
    got_v, got_k = apply_gather(g, values, known)
    with fastpaths.disabled("vector.gather-occupied"):
        want_v, want_k = apply_gather(g, values, known)
    assert got_v.shape == want_v.shape and np.array_equal(got_v, want_v)
    assert np.array_equal(got_k, want_k)
