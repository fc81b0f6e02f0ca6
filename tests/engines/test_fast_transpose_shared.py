"""``transpose.shared-rows`` (visa/engines/fast_transpose_shared.py, issue 24): a stream whose slices share rows
(SharedRows) transposed once per distinct row gives, row for row, the reference's transpose of the whole stream
(values and known-mask, poison included), still shared."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from visa import dtypes as dt
from visa import fastpaths
from visa.engines import transpose as T
from visa.engines.common import StreamData
from visa.engines.shared import SharedRows
from visa.hw import RNGD
from visa.mapping import AxisSet


@skip_unless("transpose.shared-rows")
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 4), slices=st.sampled_from([4, 8]),
       poison=st.booleans())
def test_shared_rows_transposed_once_each_equal_the_reference(seed: int, rows: int, slices: int,
                                                              poison: bool) -> None:
    m = AxisSet(C=64, K=64).m  # the peer matmul's rhs tile: 8 × 8 blocks transposed
    cfg = T.plan(RNGD, dt.i8, m["C % 64 / 8, K"], m["C % 8 # 32"], m["C % 64 / 8, K / 8, C % 8"], m["K % 8 # 32"])
    rng = np.random.default_rng(seed)
    shape = (1, 1, rows, cfg.in_time, cfg.in_packet)
    values = rng.integers(-128, 128, size=shape, dtype=np.int8)
    known = rng.random(shape) > 0.1 if poison else np.ones(shape, bool)
    owner = rng.integers(0, rows, size=2 * slices).astype(np.int64)
    data = SharedRows(StreamData(values, known), owner, (1, 2, slices))
    got = T.execute(cfg, data)
    assert isinstance(got, SharedRows) and np.array_equal(got.owner, owner)
    with fastpaths.disabled("transpose.shared-rows"):
        want = T.execute(cfg, SharedRows(StreamData(values, known), owner, (1, 2, slices)))
    assert not isinstance(want, SharedRows)
    assert np.array_equal(got.values, want.values) and np.array_equal(got.known, want.known)
