"""Stream buffers whose rows without data stay zero between uses (visa.memory.rowpool, issue 15).

The pool must be invisible: every buffer it hands out holds zeros in the rows the caller does not write (the
poison of positions without data, manual L1071–1093), whatever the buffer held before; nothing a caller still
holds is handed out again; and the fetch's streams are the same with the pool as without it.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import AxisSet, Context, fastpaths, i8, i32
from visa import dtypes as dt
from visa.memory.rowpool import ROW_POOL, RowPool
from visa.testing import place_dm


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), steps=st.lists(st.tuples(st.integers(0, 2**8 - 1), st.booleans(),
                                                                  st.booleans(), st.booleans()),
                                                        min_size=1, max_size=12))
def test_rows_without_data_are_zero_and_held_buffers_stay(seed: int, steps: list[tuple[int, bool, bool, bool]]
                                                          ) -> None:
    """Random takes (which rows hold data), writes (the data rows, or every row with ``settle(None)``), and
    arrays kept alive or dropped: each buffer handed out is zero outside its data rows, and an array kept alive
    never changes nor shares memory with a later buffer."""
    pool = RowPool(per_shape=2, least=0)
    rng = np.random.default_rng(seed)
    held: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = []
    for bits, everywhere, keep, other_shape in steps:
        shape = (8, 5) if not other_shape else (8, 3)
        rows = np.array([(bits >> i) & 1 for i in range(8)], dtype=bool)
        buf, loan = pool.take(shape, np.dtype(np.int32), rows)
        assert not buf[~rows].any()
        assert not any(np.shares_memory(buf, h) for h, _ in held)
        assert loan is not None
        if everywhere:  # the caller writes past its data rows (as the fetch's masking does)
            buf[...] = rng.integers(1, 100, size=shape)
        else:
            buf[rows] = rng.integers(1, 100, size=(int(rows.sum()), shape[1]))
        out = loan.settle(None if everywhere else rows)
        assert not out.flags.writeable
        with pytest.raises(ValueError):
            out[0, 0] = 1
        del buf
        if keep:
            held.append((out, out.copy()))
        del out
    for h, snapshot in held:
        assert np.array_equal(h, snapshot)


def test_a_buffer_is_reused_once_free_and_its_old_rows_cleared() -> None:
    pool = RowPool(per_shape=1, least=0)
    rows = np.array([True, True, False, False])
    buf, loan = pool.take((4, 2), np.dtype(np.int16), rows)
    assert loan is not None
    buf[rows] = 9
    out = loan.settle(rows)
    del buf
    again, _ = pool.take((4, 2), np.dtype(np.int16), ~rows)  # held: a new buffer
    assert pool.reused == 0 and not np.shares_memory(again, out)
    del out, again
    third, _ = pool.take((4, 2), np.dtype(np.int16), ~rows)
    assert pool.reused == 1 and not third[rows].any()  # the rows written before, cleared


def test_the_pool_keeps_at_most_its_byte_cap_the_oldest_going_first() -> None:
    """Buffers of many shapes given back (a model's prefill, then its decode steps): the pool keeps at most
    ``max_bytes`` of them, the ones given back last; the memory held is what tracemalloc counts (issue 25)."""
    mib = 1 << 20
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        pool = RowPool(per_shape=4, least=0, max_bytes=3 * mib)
        shapes = [(4, mib // 4 + 64 * k) for k in range(6)]  # six shapes of just over 1 MiB of uint8
        for shape in shapes:
            buf, loan = pool.take(shape, np.dtype(np.uint8), np.ones(4, dtype=bool))
            assert loan is not None
            buf[...] = 1
            loan.settle()
            del buf
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert pool.kept_bytes <= 3 * mib and held <= 3 * mib + (1 << 16)
    assert sorted(shape for shape, _ in pool._kept) == shapes[-2:]  # the last two given back (two fit, not three)
    again, _ = pool.take(shapes[-1], np.dtype(np.uint8), np.zeros(4, dtype=bool))  # reused, cleared
    assert pool.reused == 1 and not again.any()


@pytest.mark.parametrize("dtype", [np.dtype(dt.bf16.storage), np.dtype(np.float32), np.dtype(np.int8)])
def test_rows_are_zeroed_in_every_storage_type(dtype: np.dtype[Any]) -> None:
    """The rows without data are zero bytes (what ``buf[rows] = 0`` writes) for a float and a bfloat16 storage
    too, lent new (a small buffer, no loan) or reused (the stale rows of the last loan cleared)."""
    rows = np.array([True, False, True, False, False])
    buf, loan = RowPool(least=1 << 20).take((5, 3), dtype, rows)
    assert loan is None and not buf.view(np.uint8)[~rows].any()
    pool = RowPool(per_shape=1, least=0)
    buf, loan = pool.take((5, 3), dtype, np.ones(5, dtype=bool))
    assert loan is not None
    buf.view(np.uint8)[...] = 0x3F  # every row written
    out = loan.settle(None)
    del buf, out
    again, _ = pool.take((5, 3), dtype, rows)
    assert pool.reused == 1 and not again.view(np.uint8)[~rows].any()


def test_a_small_or_disabled_pool_lends_nothing() -> None:
    rows = np.array([False, True])
    for pool in (RowPool(least=1 << 20), RowPool(enabled=False, least=0)):
        buf, loan = pool.take((2, 4), np.dtype(np.uint8), rows)
        assert loan is None and not buf[0].any() and buf.flags.writeable
    with fastpaths.disabled("memory.rowpool"):  # (the registry's switch: VISA_FASTPATHS=-memory.rowpool)
        buf, loan = RowPool(least=0, path=fastpaths.get("memory.rowpool")).take((2, 4), np.dtype(np.uint8), rows)
        assert loan is None and not buf[0].any() and buf.flags.writeable


# ------------------------------------------------------------------------------------------------ the fetch

AX = AxisSet(A=64, B=32)
MASKED = AxisSet(A=64, B=31)


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[RowPool]:
    """The fetch's pool, lending buffers of any size."""
    needs("memory.rowpool", "fetch.all-known")
    monkeypatch.setattr(ROW_POOL, "least", 0)
    yield ROW_POOL
    gc.collect()


def _fetch(dtype: Any, slices: str, seed: int, masked: bool = False) -> tuple[np.ndarray[Any, Any], ...]:
    """A fetch over a padded cluster (``1 # 2``) and the slices ``slices``: its values and known-mask."""
    m = (MASKED if masked else AX).m
    ctx = Context()
    ctx.num_chips = 1
    x = dt.random_values(dtype, (64, 31 if masked else 32), np.random.default_rng(seed))
    if masked:  # the innermost packet axis padded: the masking stage writes the pad value in every row
        t = place_dm(ctx, x, dtype, m["1"], m["1 # 2"], m[slices], m["B # 32"], 0, axes="A B")
        s = ctx.main.begin(t.view()).fetch(dtype, m["1"], m["B # 32"])
    else:
        t = place_dm(ctx, x, dtype, m["1"], m["1 # 2"], m[slices], m["B"], 0, axes="A B")
        s = ctx.main.begin(t.view()).fetch(dtype, m["1"], m["B"])
    return s.data.values, s.data.known


@pytest.mark.parametrize("dtype", [i8, i32])
def test_the_fetch_reads_the_same_with_the_pool(pool: RowPool, dtype: Any, reference: Callable[..., None]
                                                ) -> None:
    """Fetches over different slice patterns one after the other, and one that reads padding (the general path)
    in between: each stream equals the one read without the pool; a pooled stream's values are read-only."""
    plans = [("A # 256", False), ("# 128 + A + # 64", False), ("A # 256", True), ("# 32 + A + # 160", False),
             ("A # 256", False), ("# 192 + A", False)]
    got = []
    reused = pool.reused
    for k, (slices, masked) in enumerate(plans):
        values, known = _fetch(dtype, slices, k, masked)
        # (padding read: the general path, a buffer of its own — unless fetch.masked-known reads the unmasked
        # elements as all written, into a pooled buffer too)
        assert values.flags.writeable == (masked and not fastpaths.get("fetch.masked-known").on)
        got.append((values.copy(), np.array(known)))
        del values, known
        gc.collect()
    assert pool.reused >= reused + 3
    reference("memory.rowpool")
    for k, (slices, masked) in enumerate(plans):
        values, known = _fetch(dtype, slices, k, masked)
        assert np.array_equal(values, got[k][0]) and np.array_equal(known, got[k][1])
        assert not values[0, 1].any()  # the padded cluster: poison, 0
