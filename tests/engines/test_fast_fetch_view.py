"""``fetch.view-memo`` (visa/engines/fast_fetch_view.py): a fetch's view of the DM bytes kept for the image's state
gives the reference's streams (manual L1219–1688, L2022–2049) whatever is written between the fetches — a tensor
placed over the bytes, bytes poisoned or unwritten, a DMA, the image's arrays handed out — with the path on and
off; and with nothing written between, the second fetch takes the first one's view."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, Context, fastpaths, i8, i32
from visa.engines import fast_fetch_view
from visa.engines.fast_dm_read import DmRead
from visa.testing import place_dm

M = AxisSet(C=2, S=256, E=32).m


def _changes(ctx: Context, t: Any, new: np.ndarray) -> list[Callable[[], Any]]:
    """Nothing, or a way to change the bytes (or the state) of the DM image a fetch of ``t`` reads."""
    dm = ctx.memory.chip(0).dm
    return [
        lambda: None,
        lambda: place_dm(ctx, new, i8, M["1"], M["C"], M["S"], M["E"], t.address, axes="C S E"),
        lambda: dm.poison(t.address + 3, t.address + 9),
        lambda: dm.unwrite(np.array([t.address + 4]), np.ones((2, 256, 1), dtype=bool)),
        lambda: place_dm(ctx, new, i8, M["1"], M["C"], M["S"], M["E"], 8192, axes="C S E")
        .view().to_dm(M["C"], M["S"], M["E"], ctx.tdma, t.address + 16),
        lambda: place_dm(ctx, new, i8, M["1"], M["C"], M["S"], M["E"], 8192, axes="C S E"),  # (elsewhere)
        lambda: dm.data,  # (handed out: asked every time since)
    ]


def _run(x: np.ndarray, new: np.ndarray, steps: list[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Fetch ``x`` (i8, plain or with zero point ``zp``) after each change in ``steps``; each stream's values and
    known-mask (the values where known)."""
    ctx = Context(RNGD)
    t = place_dm(ctx, x, i8, M["1"], M["C"], M["S"], M["E"], 1024, axes="C S E")
    out = []
    for change, zp in steps:
        _changes(ctx, t, new)[change]()
        begin = ctx.main.begin(t.view())
        try:
            s = (begin.fetch_with_zero_point(i8, M["E / 32"], M["E % 32"], zp) if zp else
                 begin.fetch(i8, M["E / 32"], M["E % 32"]))
        except Exception as e:  # noqa: BLE001 (a refusal: compared by class and words)
            out.append((np.array([type(e).__name__, str(e)]), np.zeros(0, dtype=bool)))
            continue
        known = np.asarray(s.data.known).copy()
        out.append((np.where(known, np.asarray(s.data.values), 0), known))
    return out


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([0, 0, 3, -2])), min_size=1, max_size=5),
       st.integers(0, 2**32 - 1), st.booleans())
def test_fetches_between_changes_are_the_reference(steps: list[tuple[int, int]], seed: int, edge: bool) -> None:
    """(With ``edge``, the values reach the ends of i8: a zero point takes a difference out of range, which the
    reference refuses, every time, the path kept or not.)"""
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, size=(2, 256, 32)).astype(np.int8)
    if edge:
        x[1, 7, 5], x[0, 3, 0] = -128, 127
    new = rng.integers(-128, 127, size=(2, 256, 32), endpoint=True).astype(np.int8)
    fast = _run(x, new, steps)
    with fastpaths.disabled("fetch.view-memo"):
        reference = _run(x, new, steps)
    with fastpaths.disabled():
        every_off = _run(x, new, steps)
    for (v, k), (rv, rk), (ov, ok) in zip(fast, reference, every_off, strict=True):
        assert np.array_equal(v, rv) and np.array_equal(k, rk)
        assert np.array_equal(v, ov) and np.array_equal(k, ok)


def test_a_second_fetch_takes_the_first_ones_view() -> None:
    needs("fetch.view-memo", "fetch.dm-read", "fetch.all-known")
    ctx = Context(RNGD)
    m = AxisSet(C=2, S=256, E=16).m
    x = np.arange(2 * 256 * 16, dtype=np.int32).reshape(2, 256, 16)
    t = place_dm(ctx, x, i32, m["1"], m["C"], m["S"], m["E"], 0, axes="C S E")
    f = ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"])
    g = ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"])
    assert isinstance(f.data, DmRead) and isinstance(g.data, DmRead)
    assert f.data.source() is g.data.source()
    t2 = place_dm(ctx, -x, i32, m["1"], m["C"], m["S"], m["E"], 0, axes="C S E")  # (a new state of the image)
    h = ctx.main.begin(t2.view()).fetch(i32, m["E / 8"], m["E % 8"])
    assert np.array_equal(np.asarray(h.data.values)[0].reshape(2, 256, 16), -x)
    assert np.array_equal(np.asarray(g.data.values)[0].reshape(2, 256, 16), x)


def test_the_memo_keeps_no_dead_image_alive() -> None:
    """The views are kept per live image (weakly keyed): when the context dies its DM image goes, views and all
    (the memo once held 16 views, and so the bytes of up to 16 dead contexts' DM images: issue 25)."""
    needs("fetch.view-memo", "fetch.dm-read", "fetch.all-known")
    before = {id(image) for image in list(fast_fetch_view._VIEWS.keys())}
    ctx = Context(RNGD)
    m = AxisSet(C=2, S=256, E=16).m
    x = np.arange(2 * 256 * 16, dtype=np.int32).reshape(2, 256, 16)
    t = place_dm(ctx, x, i32, m["1"], m["C"], m["S"], m["E"], 0, axes="C S E")
    for _ in range(2):
        ctx.main.begin(t.view()).fetch(i32, m["E / 8"], m["E % 8"])
    new = [weakref.ref(image) for image in list(fast_fetch_view._VIEWS.keys()) if id(image) not in before]
    assert new  # the view was kept, for the context's image
    del ctx, t
    gc.collect()
    assert all(ref() is None for ref in new)
