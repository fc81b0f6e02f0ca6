"""The written-mask kept by page (issue 15) against a plain per-byte model.

Random sequences of writes (dense and strided loop nests, scatters of elements, masked ones, 4-bit stores),
poisons, unwrites, whole-range marks and DMA copies run on images with small pages (so that pages, their edges
and words across two pages all occur) and on a reference: a data array and a bool per byte.  After every step
every way of reading agrees with the reference: written bytes hold its data, and an element is known iff all
its bytes were written (manual L134–140).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, fastpaths
from visa import dtypes as dt
from visa.memory.images import DenseImage, PagedImage, load, load_nest, store, store_nest, unwrite
from visa.memory.pages import ALL, MIXED, NONE, PageMask
from visa.memory.transfer import HbmEndpoint, HostBuffer, copy
from visa.memory.units import UnitSelection

TYPES = [dt.i8, dt.i16, dt.i32, dt.bf16, dt.f32, dt.i4]
LEAD = (2, 3)


class Model:
    """The reference: bytes and one written flag per byte, ``(2, 3, n)``."""

    def __init__(self, n: int) -> None:
        self.data = np.zeros((*LEAD, n), np.uint8)
        self.written = np.zeros((*LEAD, n), bool)


def _check(img: DenseImage, ref: Model, rng: np.random.Generator) -> None:
    n = img.nbytes
    # every byte: gather, known_bytes, all_written (whole and a random range)
    idx = np.arange(n, dtype=np.int64)
    data, known = img.gather(idx)
    np.testing.assert_array_equal(known, ref.written)
    np.testing.assert_array_equal(np.where(known, data, 0), np.where(ref.written, ref.data, 0))
    lo = int(rng.integers(0, n))
    hi = int(rng.integers(lo, n + 1))
    np.testing.assert_array_equal(img.known_bytes(lo, hi), ref.written[..., lo:hi])
    assert img.all_written(lo, hi) == bool(ref.written[..., lo:hi].all())
    assert img.all_written(lo, hi, (1, slice(0, 2))) == bool(ref.written[1, :2, lo:hi].all())
    # elements of every type, at every offset: known iff all their bytes were written
    for d in (dt.i8, dt.i16, dt.i32):
        nb = d.image_bits // 8
        offs = np.arange(0, n - nb + 1, dtype=np.int64)
        if not offs.size:
            continue
        vals, k = load(d, img, offs * 8)
        want = np.ones((*LEAD, offs.size), bool)
        for b in range(nb):
            want &= ref.written[..., offs + b]
        np.testing.assert_array_equal(k, want)
        for base in range(min(nb, offs.size)):  # words from every byte: some across two pages
            count = (n - base) // nb
            got = load_nest(d, img, 8 * base, ((count, 1),))
            assert got is not None
            np.testing.assert_array_equal(got[1].reshape(*LEAD, count), want[..., base::nb][..., :count])
            sel = load_nest(d, UnitSelection(img, np.array([[True, False, True], [False, True, False]])),
                            8 * base, ((count, 1),))
            assert sel is not None
            np.testing.assert_array_equal(sel[1].reshape(3, count),
                                          want[[0, 0, 1], [0, 2, 1]][..., base::nb][..., :count])
        raw = np.stack([ref.data[..., offs + b] for b in range(nb)], axis=-1).reshape(-1)
        ref_vals = dt.from_bytes(d, raw, raw.size // nb).reshape(vals.shape)
        np.testing.assert_array_equal(np.where(want, vals, 0), np.where(want, ref_vals, 0))
    # the state's invariant: the mask is exact in MIXED pages and zero elsewhere
    pm = img._pages
    st_ = np.repeat(pm.state, pm.page, axis=1)[:, :n]
    mask = pm.mask
    assert not mask[st_ != MIXED].any()
    np.testing.assert_array_equal((st_ == ALL) | mask, ref.written.reshape(-1, n))
    assert not ((st_ == NONE) & ref.written.reshape(-1, n)).any()


def _store(img: DenseImage, ref: Model, rng: np.random.Generator, sel: bool) -> None:
    """``store`` of random elements at distinct offsets, all units or those ``mask`` selects."""
    d = TYPES[int(rng.integers(len(TYPES)))]
    n = img.nbytes
    bits = d.image_bits
    slots = (8 * n) // bits
    if slots == 0:
        return
    count = int(rng.integers(1, min(slots, 12) + 1))
    pos = np.sort(rng.choice(slots, size=count, replace=False)).astype(np.int64)
    offs = pos * bits
    vals = dt.random_values(d, (*LEAD, count), rng)
    mask = rng.random((*LEAD, count)) < rng.choice([0.6, 1.0]) if sel else None  # (a mask of all True too)
    store(d, img, offs, vals, mask)
    m = np.ones((*LEAD, count), bool) if mask is None else mask
    if bits == 4:
        nib = (dt.to_bits(d, vals).astype(np.int64) & 0xF).astype(np.uint8)
        for u in np.ndindex(*LEAD):
            for j in range(count):
                if not m[u][j]:
                    continue
                byte, high = int(offs[j]) >> 3, (int(offs[j]) >> 2) & 1
                cur = ref.data[u][byte]
                ref.data[u][byte] = (cur & 0x0F) | (nib[u][j] << 4) if high else (cur & 0xF0) | nib[u][j]
                ref.written[u][byte] = True
        return
    nb = bits // 8
    raw = dt.to_bytes(d, vals.reshape(-1)).reshape(*LEAD, count, nb)
    for u in np.ndindex(*LEAD):
        for j in range(count):
            if m[u][j]:
                b = int(offs[j]) // 8
                ref.data[u][b: b + nb] = raw[u][j]
                ref.written[u][b: b + nb] = True


def _nest(img: DenseImage, ref: Model, rng: np.random.Generator, kind: int) -> None:
    """``store_nest``: dense (covering its range) or strided, known all / none / some, on the image or on a
    unit selection (box or not)."""
    d = TYPES[int(rng.integers(len(TYPES) - 1))]  # whole bytes
    nb = d.image_bits // 8
    n = img.nbytes
    if rng.random() < 0.5:  # dense: one run of elements
        count = int(rng.integers(1, max(1, n // nb) + 1))
        loops: list[tuple[int, int]] = [(count, 1)]
    else:  # strided: two loops, an outer stride past the inner run
        a, b = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        loops = [(a, b + int(rng.integers(0, 3))), (b, 1)]
    sizes = [s for s, _ in loops]
    span = sum((s - 1) * t for s, t in loops) * nb + nb
    if span > n:
        return
    base = int(rng.integers(0, n - span + 1))
    enabled = [None, np.array([[True, True, False], [True, True, False]]),
               np.array([[True, False, True], [False, True, False]])][int(rng.integers(3))]
    target = img if enabled is None else UnitSelection(img, enabled)
    units = np.ones(LEAD, bool) if enabled is None else enabled
    count_units = int(units.sum())
    vals = dt.random_values(d, (count_units, *sizes), rng)
    known = {0: np.ones, 1: np.zeros}.get(kind, lambda s, dtype: rng.random(s) < 0.6)(
        (count_units, *sizes), dtype=bool)
    if kind == 3 and count_units:  # a unit receiving only poison
        known[0] = False
    done = store_nest(d, target, 8 * base, loops, vals, known)
    assert done
    off = np.full((), base, np.int64)
    for s, t in loops:
        off = off[..., None] + np.arange(s, dtype=np.int64) * t * nb
    off = off.reshape(-1)
    raw = dt.to_bytes(d, vals.reshape(-1)).reshape(count_units, -1, nb)
    k2 = known.reshape(count_units, -1)
    for i, u in enumerate(zip(*np.nonzero(units), strict=True)):
        at = (off[:, None] + np.arange(nb)).reshape(-1)
        if enabled is not None and not k2[i].any() and not ref.written[u][at].any():
            continue  # only poison over poison: the unit is left as it is
        for j, o in enumerate(off.tolist()):
            ref.data[u][o: o + nb] = raw[i, j] if k2[i, j] else 0
            ref.written[u][o: o + nb] = k2[i, j]


def _step(img: DenseImage, ref: Model, rng: np.random.Generator, op: int) -> None:
    n = img.nbytes
    if op == 0:
        _store(img, ref, rng, sel=False)
    elif op == 1:
        _store(img, ref, rng, sel=True)
    elif op in (2, 3, 4, 5):
        _nest(img, ref, rng, op - 2)
    elif op == 6:  # poison a range
        lo = int(rng.integers(0, n + 1))
        hi = int(rng.integers(lo, n + 1))
        img.poison(lo, hi)
        ref.written[..., lo:hi] = False
    elif op == 7:  # unwrite some elements
        d = TYPES[int(rng.integers(len(TYPES)))]
        slots = (8 * n) // d.image_bits
        if slots:
            pos = np.unique(rng.integers(0, slots, size=4)).astype(np.int64)
            bits = pos * d.image_bits
            where = rng.random((*LEAD, pos.size)) < 0.5
            unwrite(img, bits, where, d)
            for b in range(max(1, d.image_bits // 8)):
                for u in np.ndindex(*LEAD):
                    ref.written[u][(bits[where[u]] >> 3) + b] = False
    elif op == 8:  # a DMA's whole range (mark) over some consecutive units, data copied in
        u0 = int(rng.integers(0, 6))
        u1 = int(rng.integers(u0 + 1, 7))
        lo = int(rng.integers(0, n + 1))
        hi = int(rng.integers(lo, n + 1))
        flat = img.flat_data(0, 0).reshape(6, n)
        fresh = rng.integers(0, 256, size=(u1 - u0, hi - lo), dtype=np.uint8)
        flat[u0:u1, lo:hi] = fresh
        img.mark_written(slice(u0, u1), lo, hi)
        ref.data.reshape(6, n)[u0:u1, lo:hi] = fresh
        ref.written.reshape(6, n)[u0:u1, lo:hi] = True
    elif op == 9:  # a DMA writing the mask byte by byte (a strided copy), then settling
        u0 = int(rng.integers(0, 6))
        lo = int(rng.integers(0, n))
        step = int(rng.integers(1, 4))
        count = int(rng.integers(1, (n - lo - 1) // step + 2))
        bits_ = rng.random(count) < 0.7
        mask = img.mask_for_write(slice(u0, u0 + 1), lo, lo + (count - 1) * step + 1)
        mask[u0 * n + lo: u0 * n + lo + (count - 1) * step + 1: step] = bits_
        img.settle(slice(u0, u0 + 1), lo, lo + (count - 1) * step + 1)
        ref.written.reshape(6, n)[u0, lo: lo + (count - 1) * step + 1: step] = bits_
    elif op == 10:  # elements stored through a selection of units (its scatter and scatter_words), masked or not
        d = TYPES[int(rng.integers(len(TYPES) - 1))]  # whole bytes
        nb = d.image_bits // 8
        slots = n // nb
        if not slots:
            return
        enabled = [np.array([[True, True, False], [True, True, False]]),
                   np.array([[True, False, True], [False, True, False]])][int(rng.integers(2))]
        sel = UnitSelection(img, enabled)
        pos = np.unique(rng.integers(0, slots, size=4)).astype(np.int64)
        offs = pos * nb
        vals = dt.random_values(d, (sel.count, pos.size), rng)
        mask = rng.random((sel.count, pos.size)) < 0.6 if rng.random() < 0.5 else None
        store(d, sel, offs * 8, vals, mask)
        raw = dt.to_bytes(d, vals.reshape(-1)).reshape(sel.count, pos.size, nb)
        for i, u in enumerate(zip(*np.nonzero(enabled), strict=True)):
            for j, o in enumerate(offs.tolist()):
                if mask is None or mask[i, j]:
                    ref.data[u][o: o + nb] = raw[i, j]
                    ref.written[u][o: o + nb] = True


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 70), page=st.integers(1, 20), seed=st.integers(0, 2**32 - 1),
       ops=st.lists(st.integers(0, 10), min_size=1, max_size=12))
def test_written_by_page_is_the_per_byte_mask(n: int, page: int, seed: int, ops: list[int]) -> None:
    rng = np.random.default_rng(seed)
    img = DenseImage((*LEAD, n), page_bytes=page)
    ref = Model(n)
    for op in ops:
        _step(img, ref, rng, op)
        _check(img, ref, rng)
    # handing out the mask makes it exact everywhere, and it is the reference
    np.testing.assert_array_equal(img.written, ref.written)
    np.testing.assert_array_equal(np.where(ref.written, img.data, 0), np.where(ref.written, ref.data, 0))


@settings(max_examples=60, deadline=None)
@given(page=st.integers(1, 20), seed=st.integers(0, 2**32 - 1), ops=st.lists(st.integers(0, 4), min_size=1,
                                                                               max_size=10))
def test_paged_image_by_page_is_the_per_byte_mask(page: int, seed: int, ops: list[int]) -> None:
    """HBM regions: window writes, scatters, poisons and DMA copies (whole known ranges, strided ones, sources
    with poison) against the per-byte model; regions merge with their states."""
    rng = np.random.default_rng(seed)
    size = 200
    img = PagedImage(size, page_bytes=page)
    data = np.zeros(size, np.uint8)
    written = np.zeros(size, bool)
    end = HbmEndpoint(RNGD, lambda chip: img)
    for op in ops:
        lo = int(rng.integers(0, size))
        hi = int(rng.integers(lo, min(size, lo + 60) + 1))
        if op == 0:  # scatter
            idx = np.unique(rng.integers(lo, max(hi, lo + 1), size=5)).astype(np.int64)
            idx = idx[idx < size]
            vals = rng.integers(0, 256, idx.size, dtype=np.uint8)
            img.scatter(idx, vals)
            data[idx], written[idx] = vals, True
        elif op == 1:
            img.poison(lo, hi)
            written[lo:hi] = False
        elif op == 2:  # a copy from the host, every byte known or some poison, dense or strided
            count = hi - lo
            if not count:
                continue
            src = rng.integers(0, 256, count, dtype=np.uint8)
            k = np.ones(count, bool) if rng.random() < 0.5 else rng.random(count) < 0.7
            step = 1 if rng.random() < 0.5 else 2
            m = -(-count // step)
            copy([(m, 1, step)], (0, lo), HostBuffer(src[:m], k[:m]), end)
            data[lo: lo + m * step: step] = src[:m]
            written[lo: lo + m * step: step] = k[:m]
        elif op == 3:  # HBM -> HBM within the image
            count = min(hi - lo, size - hi)
            if count <= 0:
                continue
            dst = int(rng.integers(hi, size - count + 1))
            copy([(count, 1, 1)], (lo, dst), end, end)
            data[dst: dst + count] = data[lo: lo + count]
            written[dst: dst + count] = written[lo: lo + count]
        else:  # reads: every byte, a window
            got, known = img.gather(np.arange(size, dtype=np.int64))
            np.testing.assert_array_equal(known, written)
            np.testing.assert_array_equal(np.where(written, got, 0), np.where(written, data, 0))
        out = HostBuffer(np.zeros(size, np.uint8), written=False)
        copy([(size, 1, 1)], (0, 0), end, out)
        np.testing.assert_array_equal(out.written, written)
        np.testing.assert_array_equal(np.where(written, out.data, 0), np.where(written, data, 0))


def test_page_states_of_a_dense_write() -> None:
    """A known range changes page states only: no mask byte is set in the pages it covers, only at its
    partial ends; a second range that completes an end page settles it."""
    pm = PageMask(np.zeros((1, 64), bool), page=16)
    pm.mark(slice(None), 8, 40, True)
    assert pm.state.tolist() == [[MIXED, ALL, MIXED, NONE]]
    assert pm.mask[0, 16:32].sum() == 0 and pm.mask[0, 8:16].all() and pm.mask[0, 32:40].all()
    pm.mark(slice(None), 0, 8, True)
    assert pm.state.tolist() == [[ALL, ALL, MIXED, NONE]] and not pm.mask[0, :16].any()
    pm.mark(slice(None), 0, 64, False)
    assert pm.state.tolist() == [[NONE] * 4] and not pm.mask.any()


def test_a_write_over_known_pages_leaves_no_mask_behind() -> None:
    """Bytes written again over pages wholly written stay written by page (no mask byte set), so that a later
    poison of the pages leaves nothing known: through words, bytes, masked and unmasked stores.  (The page states
    are the words' structure: the reference, every byte scattered, may leave the pages mixed, with the same bytes.)"""
    img = DenseImage((2, 32), page_bytes=8)
    img.mark_written(slice(None), 0, 32)
    store(dt.i32, img, np.array([0, 64]), np.array([[1, 2], [3, 4]]), np.ones((2, 2), bool))
    store(dt.i8, img, np.array([128]), np.array([[5], [6]]))
    store(dt.i16, UnitSelection(img, np.array([True, False])), np.array([160]), np.array([[7]]), np.ones((1, 1), bool))
    if fastpaths.get("memory.image-words").on:
        assert img.state.tolist() == [[ALL] * 4] * 2 and not img._pages.mask.any()
    assert bool(img.written.all())
    assert load(dt.i32, img, np.array([0, 64]))[0].tolist() == [[1, 2], [3, 4]]
    img.poison(0, 32)
    assert not img.written.any()


def test_the_flat_image_reads_the_same_known_bytes() -> None:
    """``flat_image()`` (a device tensor's ``logical()`` reads through it) sees unit ``u``'s byte ``b`` at
    ``u · nbytes + b``, whether units are whole pages (shared states) or not (made exact first)."""
    for n, page in ((32, 8), (30, 8)):
        img = DenseImage((2, n), page_bytes=page)
        img.mark_written(slice(0, 1), 3, 20)
        store(dt.i8, img, np.array([8 * 25]), np.array([[1], [2]]))
        want = np.zeros((2, n), bool)
        want[0, 3:20] = True
        want[:, 25] = True
        flat = img.flat_image()
        np.testing.assert_array_equal(flat.gather(np.arange(2 * n, dtype=np.int64))[1], want.reshape(-1))
        np.testing.assert_array_equal(img.written, want)


def test_a_mask_given_by_its_shape_is_made_on_first_use() -> None:
    """Issue 24 (peak memory): a region's mask given only by its shape costs nothing while whole ranges are
    written; the first partial page makes it, holding exactly the bytes written since."""
    pm = PageMask((1, 64), page=16)
    pm.mark(slice(None), 0, 48, True)  # whole pages: states only
    assert not pm.has_mask and pm.all_known(slice(None), 0, 48) and pm.none_known(slice(None), 48, 64)
    assert pm.known_at(slice(None), np.array([0, 47, 48]))[0].tolist() == [True, True, False]
    pm.mark(slice(None), 50, 53, True)  # a partial page: the mask is made now
    assert pm.has_mask and pm.state.tolist() == [[ALL, ALL, ALL, MIXED]]
    assert pm.known_span(slice(None), 40, 64)[0].tolist() == [True] * 8 + [False] * 2 + [True] * 3 + [False] * 11
    assert pm.mask[0, :48].sum() == 0  # ALL pages keep no mask bytes


def test_an_adopted_or_read_hbm_region_keeps_no_mask() -> None:
    """A region an HBM image adopted (a host buffer, all known) and then only read never makes its byte mask; a
    write of part of a page makes it, and the bytes read back as written."""
    img = PagedImage(1 << 20, page_bytes=16)
    assert img.adopt(64, np.arange(128, dtype=np.uint8))
    vals, known = img.gather(np.array([63, 64, 191, 192]))
    assert vals.tolist() == [0, 0, 127, 0] and known.tolist() == [False, True, True, False]
    _, pages, at = img.span(64, 192, write=False)
    assert not pages.has_mask and pages.all_known(slice(None), at, at + 128)
    data, written = img.window(200, 203)  # a new region next to it
    data[:] = 9
    written[:] = True
    vals, known = img.gather(np.arange(60, 210))
    assert known.tolist() == [False] * 4 + [True] * 128 + [False] * 8 + [True] * 3 + [False] * 7
    assert vals[4:132].tolist() == list(range(128)) and vals[140:143].tolist() == [9] * 3
