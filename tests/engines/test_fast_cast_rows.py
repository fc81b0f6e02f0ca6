"""``fetch.cast-occupied`` (visa/engines/fast_cast_rows.py) against the Fetch Adapter's reference cast (L1960–2021;
rows without data are poison, 0, and 0 casts to 0): a bf16 → f32 fetch of rows on some slices of a cluster
(``m["T # 256"]``, one row a slice, as a model's decode step) gives the same stream — values, known-mask — and the
same cycles with the path on and off, also when a byte read was never written (poison in a data row)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, Context, bf16, f32, fastpaths
from visa.testing import place_dm


def _fetch(rows: int, x: np.ndarray, hole: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    m = AxisSet(T=rows, D=24).m
    ctx = Context(RNGD)
    t = place_dm(ctx, x if rows > 1 else x[0], bf16, m["1"], m["1 # 2"], m["T # 256"], m["D"], 0,
                 axes="T D" if rows > 1 else "D")  # (an axis of 1 is no axis)
    if hole:  # a byte of slice 0's row never written: poison there
        enabled = np.zeros((2, 256, 1), dtype=bool)
        enabled[0, 0] = True
        ctx.memory.chip(0).dm.unwrite(np.array([2]), enabled)
    s: Any = ctx.main.begin(t.view()).fetch(f32, m["D / 8"], m["D % 8"])
    values, known = np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy()
    return values, known, tuple(op.cycles for op in ctx.schedule.ops)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 8), st.booleans(), st.integers(0, 2**32 - 1))
def test_cast_occupied_is_the_reference(rows: int, hole: bool, seed: int) -> None:
    needs("fetch.cast-occupied")
    x = np.random.default_rng(seed).standard_normal((rows, 24)).astype(np.float32)
    x[0, :3] = [np.inf, -0.0, np.nan]  # (special values cast as the reference casts them)
    runs = []
    for off in (None, ("fetch.cast-occupied",), ()):  # on; this path off; every path off
        if off is None:
            runs.append(_fetch(rows, x, hole))
        else:
            with fastpaths.disabled(*off):
                runs.append(_fetch(rows, x, hole))
    (v0, k0, c0), *rest = runs
    assert v0.dtype == np.float32 and not bool(k0[0, 0, rows:].any())  # (slices without data: poison)
    for v, k, c in rest:
        assert np.array_equal(v.view(np.uint32), v0.view(np.uint32)) and np.array_equal(k, k0) and c == c0


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 8), st.booleans(), st.integers(0, 2**32 - 1))
def test_cast_stage_occupied_is_the_reference(rows: int, hole: bool, seed: int) -> None:
    """``cast.occupied``: the Cast Engine (f32 → bf16, padded to a flit) on such a stream, committed to DM — the
    stream (values of the converted lanes, known-mask), every DM byte and the cycles are the same with the path on
    and off."""
    needs("cast.occupied")
    m = AxisSet(T=rows, D=24).m
    x = np.random.default_rng(seed).standard_normal((rows, 24)).astype(np.float32) * 1e3
    x[0, :3] = [np.inf, -0.0, 3.0e38]  # (an overflow to inf, a negative zero)

    def run() -> tuple[Any, ...]:
        ctx = Context(RNGD)
        t = place_dm(ctx, x if rows > 1 else x[0], bf16, m["1"], m["1 # 2"], m["T # 256"], m["D"], 0,
                     axes="T D" if rows > 1 else "D")
        if hole:
            enabled = np.zeros((2, 256, 1), dtype=bool)
            enabled[0, 0] = True
            ctx.memory.chip(0).dm.unwrite(np.array([2]), enabled)
        s: Any = ctx.main.begin(t.view()).fetch(f32, m["D / 8"], m["D % 8"]).collect(m["D / 8"], m["D % 8"])
        c = s.cast(bf16, m["D % 8 # 16"])
        v, k = np.asarray(c.data.values).copy(), np.asarray(c.data.known).copy()
        c.commit(m["D"], 4096)
        img = ctx.memory.chip(0).dm
        return v.view(np.uint16), k, np.array(img.read_data()), tuple(op.cycles for op in ctx.schedule.ops)

    base = run()
    with fastpaths.disabled("cast.occupied"):
        ref = run()
    assert np.array_equal(base[0], ref[0]) and np.array_equal(base[1], ref[1]) and base[3] == ref[3]
    assert np.array_equal(base[2], ref[2])  # (every DM byte)
