"""Stream data whose slices are partly copies of others, made when read (visa.engines.rows, issue 15)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa.engines import collect
from visa.engines.rows import CopiedRows


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(2, 12), pad=st.sampled_from([0, 2]),
       made_first=st.booleans())
def test_copies_read_as_made_through_collect(seed: int, rows: int, pad: int, made_first: bool) -> None:
    """Random rows, some copies of others: the values (made on reading) equal the rows copied at once, before
    and after Collect's padding and splitting (``CopiedRows.map``), whichever is read first."""
    rng = np.random.default_rng(seed)
    buf = rng.integers(-100, 100, size=(1, 1, rows, 2, 6), dtype=np.int16)
    src_of = np.arange(rows)
    moved = rng.random(rows) < 0.5
    moved[0] = False
    src_of[moved] = rng.integers(0, rows, size=int(moved.sum()))
    src_of[moved] = np.where(moved[src_of[moved]], 0, src_of[moved])  # sources hold their own rows
    want = buf.reshape(rows, -1)[src_of].reshape(buf.shape)
    buf.reshape(rows, -1)[moved] = 77  # what the rows left to copy hold: nothing of theirs
    data = CopiedRows(buf, np.ones(buf.shape, bool), np.flatnonzero(moved), src_of[moved])
    cfg = SimpleNamespace(pad_elements=pad, out_packet=SimpleNamespace(size=(6 + pad) // 2))
    split = data.map(lambda v, k: collect._pad_split(cfg, v, k, 4))  # type: ignore[arg-type]
    padded = np.pad(want, [(0, 0)] * 4 + [(0, pad)]).reshape(1, 1, rows, 4, -1)
    view, owner = split.rows()
    assert np.array_equal(owner, src_of) and not view.flags.writeable
    first, second = (data, split) if made_first else (split, data)
    for d in (first, second):
        assert np.array_equal(d.values, want if d is data else padded)
        assert not d.values.flags.writeable
