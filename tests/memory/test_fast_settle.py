"""``memory.settle-samples`` and ``dma.mask-touched-pages`` (visa.memory.fast_settle, issue 24): a page mask
settled by sampling, and a strided DMA into HBM that makes only the pages it touches exact, leave the same page
states, mask bytes and data as the reference (every page read, every page of the range made exact)."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, fastpaths
from visa.memory.images import PagedImage
from visa.memory.pages import MIXED, PageMask
from visa.memory.transfer import HbmEndpoint, HostBuffer, copy


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), page=st.sampled_from([8, 64, 128, 200]), units=st.integers(1, 3),
       kinds=st.lists(st.integers(0, 4), min_size=1, max_size=12))
def test_settling_by_samples_settles_the_same_pages(seed: int, page: int, units: int, kinds: list[int]) -> None:
    """MIXED pages wholly written, wholly poison, written but for one byte (between the samples), poison but for
    one byte, and mixed: the states and mask bytes after ``settle_range`` are the reference's."""
    n = page * len(kinds) + 5
    got = []
    for on in (True, False):
        mask = np.zeros((units, n), bool)
        pm = PageMask(mask, page=page)
        pm.materialise(slice(None), 0, n)
        r = np.random.default_rng(seed)
        for p, kind in enumerate(kinds):
            a, b = p * page, (p + 1) * page
            if kind == 0:
                mask[:, a:b] = True
            elif kind == 2:
                mask[:, a:b] = True
                mask[:, a + int(r.integers(0, page))] = False
            elif kind == 3:
                mask[:, a + int(r.integers(0, page))] = True
            elif kind == 4:
                mask[:, a:b] = r.random((units, page)) < 0.5
        mask[:, -5:] = r.random((units, 5)) < 0.5  # (the shorter last page)
        with fastpaths.only("memory.settle-samples") if on else fastpaths.disabled("memory.settle-samples"):
            pm.settle_range(slice(None), 0, n)
        got.append((pm.state.copy(), mask.copy()))
    assert np.array_equal(got[0][0], got[1][0]) and np.array_equal(got[0][1], got[1][1])
    assert (got[0][0][:, :-1] != MIXED).all() or {2, 3, 4} & set(kinds)  # (whole and empty pages settled)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), page=st.sampled_from([16, 64, 256]), rows=st.integers(1, 20),
       run=st.integers(1, 40), stride=st.integers(1, 300), start=st.integers(0, 400),
       before=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3000), st.integers(1, 700)), max_size=5))
def test_a_strided_dma_into_hbm_marks_what_the_reference_marks(seed: int, page: int, rows: int, run: int,
                                                               stride: int, start: int,
                                                               before: list[tuple[int, int, int]]) -> None:
    """Rows of ``run`` known bytes ``stride`` apart copied into an HBM region some of whose pages were written
    whole, written in part or poisoned before: data, page states and mask bytes equal the reference's."""
    size = 4096
    stride = max(stride, run)
    got = []
    for on in (True, False):
        rng = np.random.default_rng(seed)
        img = PagedImage(size, page_bytes=page)
        end = HbmEndpoint(RNGD, lambda chip, img=img: img)
        copy([(size, 1, 1)], (0, 0), HostBuffer(np.zeros(size, np.uint8), np.zeros(size, bool)), end)
        for kind, lo, count in before:
            count = min(count, size - lo)
            if kind == 2:
                img.poison(lo, lo + count)
                continue
            known = np.ones(count, bool) if kind == 0 else rng.random(count) < 0.6
            copy([(count, 1, 1)], (0, lo), HostBuffer(rng.integers(0, 256, count, dtype=np.uint8), known), end)
        rows_ = min(rows, (size - start - run) // stride + 1) if start + run <= size else 0
        src = rng.integers(0, 256, rows_ * run, dtype=np.uint8)
        names = ("dma.mask-touched-pages", "memory.settle-samples")
        with fastpaths.only(*names) if on else fastpaths.disabled(*names):
            if rows_:
                copy([(rows_, run, stride), (run, 1, 1)], (0, start), HostBuffer(src), end)
        _, pages, at = img.span(0, size, write=False)
        data, known = img.gather(np.arange(size, dtype=np.int64))
        got.append((data.copy(), known.copy(), pages.state.copy(), pages.mask.copy() if pages.has_mask else None))
    (d0, k0, s0, m0), (d1, k1, s1, m1) = got
    assert np.array_equal(k0, k1) and np.array_equal(np.where(k0, d0, 0), np.where(k1, d1, 0))
    assert np.array_equal(s0, s1)
    assert (m0 is None and m1 is None) or np.array_equal(m0 if m0 is not None else np.zeros_like(m1),
                                                         m1 if m1 is not None else np.zeros_like(m0))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), page=st.sampled_from([8, 64, 200]), units=st.integers(1, 4),
       kinds=st.lists(st.integers(0, 5), min_size=1, max_size=6), data=st.data())
def test_a_range_covering_no_page_whole_is_known_as_the_reference_says(seed: int, page: int, units: int,
                                                                      kinds: list[int], data: st.DataObject) -> None:
    """``memory.edge-pages-unsettled``: ``all_known`` of ranges inside one page or across one page boundary (and any
    other range), over pages ALL, NONE and MIXED (wholly written, poison, a narrow written run, random), gives the
    reference's answer, then the same answers again for every range (the pages it left unsettled included)."""
    n = page * len(kinds) + 3
    r = np.random.default_rng(seed)
    mask0 = np.zeros((units, n), bool)
    for p, kind in enumerate(kinds):
        a, b = p * page, min(n, (p + 1) * page)
        if kind in (0, 4):
            mask0[:, a:b] = True
        elif kind == 2:
            lo = int(r.integers(a, b))
            mask0[:, lo: min(b, lo + 5)] = True
        elif kind == 3:
            mask0[:, a:b] = r.random((units, b - a)) < 0.9
    mask0[:, -3:] = r.random((units, 3)) < 0.7
    ranges = [tuple(sorted(data.draw(st.tuples(st.integers(0, n), st.integers(0, n))))) for _ in range(6)]
    ranges += [(p * page + 1, p * page + 4) for p in range(len(kinds))]
    got = []
    for on in (True, False):
        mask = mask0.copy()
        pm = PageMask(mask, page=page)
        pm.materialise(slice(None), 0, n)
        for p, kind in enumerate(kinds):  # (ALL and NONE pages: marked, not MIXED)
            if kind == 4:
                pm.mark(slice(None), p * page, min(n, (p + 1) * page), True)
            elif kind == 1:
                pm.mark(slice(None), p * page, min(n, (p + 1) * page), False)
        units_sel = np.arange(units, dtype=np.int64)[::2]
        with contextlib.nullcontext() if on else fastpaths.disabled("memory.edge-pages-unsettled"):
            answers = [pm.all_known(us, lo, hi) for _ in range(2) for lo, hi in ranges
                       for us in (slice(None), units_sel)]
        got.append(answers)
        want = [bool(mask0[us, lo:hi].all()) if hi > lo else True for _ in range(2) for lo, hi in ranges
                for us in (slice(None), units_sel)]
        assert answers == want
    assert got[0] == got[1]
