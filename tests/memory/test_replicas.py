"""Replicas known from how bytes were written (visa.memory.replicas, issue 15).

A claim that units hold the same bytes lets the Contraction Engine skip comparing them, so a wrong claim would
be a silent wrong product.  These tests hold the claims to the bytes: after a broadcast DMA the labels group
exactly the slices that received the same source bytes; every later write path — the random steps of the
per-byte model in ``test_pages`` — takes away what it may have changed; and a write into one replica splits it
from the others.  (The whole suite also runs with ``VISA_VERIFY_REPLICAS=1``: every claim an engine acts on
is compared with the bytes, tests/conftest.py.)
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from tests.memory.test_pages import LEAD, Model, _step
from visa import RNGD
from visa.memory.images import DenseImage
from visa.memory.replicas import combine, period_of, same_in_blocks
from visa.memory.transfer import DmEndpoint, HostBuffer, address_space, copy

UNITS = int(np.prod(LEAD))


def _claims_hold(img: DenseImage, lo: int, hi: int, units: int = UNITS) -> int:
    """Every pair of units the labels call equal over ``[lo, hi)`` holds the same bytes, all written; returns
    how many units share a label with another."""
    labels = img.replica_labels(np.arange(units, dtype=np.int64), lo, hi)
    if labels is None:
        return 0
    data = img.read_data().reshape(units, -1)[:, lo:hi]
    known = img.known_bytes(lo, hi).reshape(units, -1)
    shared = 0
    for label in np.unique(labels[labels >= 0]).tolist():
        members = np.flatnonzero(labels == label)
        shared += members.size if members.size > 1 else 0
        for u in members[1:].tolist():
            np.testing.assert_array_equal(data[u], data[members[0]])
        assert known[members].all()
    return shared


@settings(max_examples=60, deadline=None)
@given(n=st.integers(8, 70), page=st.integers(1, 12), seed=st.integers(0, 2**32 - 1),
       ops=st.lists(st.integers(0, 10), min_size=0, max_size=8))
@skip_unless("memory.replicas")
def test_a_claim_of_replicas_survives_only_what_leaves_the_bytes_equal(n: int, page: int, seed: int,
                                                                         ops: list[int]) -> None:
    rng = np.random.default_rng(seed)
    img = DenseImage((*LEAD, n), page_bytes=page)
    ref = Model(n)
    # units 0, 2, 4 get one block of bytes, units 1, 3 another, unit 5 its own: a broadcast write
    lo = int(rng.integers(0, n // 2))
    hi = int(rng.integers(lo + 1, n + 1))
    keys = np.array([0, 1, 0, 1, 0, 2], np.int64)
    blocks = rng.integers(0, 256, size=(3, hi - lo), dtype=np.uint8)
    flat = img.flat_data(lo, hi).reshape(UNITS, n)
    flat[:, lo:hi] = blocks[keys]
    img.mark_written(slice(None), lo, hi)
    img.record_replicas(np.arange(UNITS, dtype=np.int64), keys, lo, hi)
    ref.data.reshape(UNITS, n)[:, lo:hi] = blocks[keys]
    ref.written.reshape(UNITS, n)[:, lo:hi] = True
    whole = (-(-lo // page) * page, (hi // page) * page if hi < n else n)  # the pages wholly written
    if whole[1] > whole[0]:
        assert _claims_hold(img, *whole) == 5  # the claim is made (units 0, 2, 4 and 1, 3)
    for op in ops:
        _step(img, ref, rng, op)
        for _ in range(3):
            a = int(rng.integers(0, n))
            _claims_hold(img, a, int(rng.integers(a + 1, n + 1)))


@skip_unless("memory.replicas")
def test_a_broadcast_dma_groups_the_slices_it_gave_the_same_bytes() -> None:
    space = address_space(RNGD, "dm")
    img = DenseImage((RNGD.dm.clusters_per_chip, RNGD.dm.slices_per_cluster, RNGD.dm.slice_bytes))
    dm = DmEndpoint(RNGD, lambda chip: img)
    rows = np.arange(4 * 8192, dtype=np.int64).astype(np.uint8).reshape(4, 8192)
    src = HostBuffer(rows.reshape(-1))
    # slices (i, j) for i < 4, j < 8 at slice 8 i + j: row i of the source, read again for every j (stride 0)
    copy([(4, 8192, 8 * space.unit_bytes), (8, 0, space.unit_bytes), (8192, 1, 1)], (0, 0), src, dm)
    labels = img.replica_labels(np.arange(32, dtype=np.int64), 0, 8192)
    assert labels is not None
    assert [len(set(labels[8 * i: 8 * i + 8].tolist())) for i in range(4)] == [1, 1, 1, 1]
    assert len(set(labels.tolist())) == 4
    assert same_in_blocks(labels, 4, 8) and period_of(labels) == 0
    # a write into slice 9 alone (one byte): slice 9 leaves its group; the rest of page 0 is unknown everywhere
    copy([(1, 1, 1)], (0, 9 * space.unit_bytes + 5), HostBuffer(np.array([77], np.uint8)), dm)
    after = img.replica_labels(np.arange(32, dtype=np.int64), 0, 8192)
    assert after is None or not same_in_blocks(after, 4, 8)
    # the page the byte did not reach still groups every slice of a row
    later = img.replica_labels(np.arange(32, dtype=np.int64), 4096, 8192)
    assert later is not None and same_in_blocks(later, 4, 8)


def test_a_dma_that_reads_each_byte_once_claims_nothing() -> None:
    space = address_space(RNGD, "dm")
    img = DenseImage((RNGD.dm.clusters_per_chip, RNGD.dm.slices_per_cluster, RNGD.dm.slice_bytes))
    dm = DmEndpoint(RNGD, lambda chip: img)
    same = np.zeros(4 * 4096, np.uint8)  # equal bytes, but not known to be: nothing is claimed from data
    copy([(4, 4096, space.unit_bytes), (4096, 1, 1)], (0, 0), HostBuffer(same), dm)
    assert img.replica_labels(np.arange(4, dtype=np.int64), 0, 4096) is None


def test_labels_of_tuples_and_periods() -> None:
    a = np.array([0, 1, 0, 1, 0, 1], np.int64)
    b = np.array([5, 6, 5, 6, 5, -3], np.int64)
    both = combine(a, b)
    assert both[0] == both[2] == both[4] and both[1] == both[3] and both[5] < 0
    assert period_of(a) == 2 and period_of(both) == 0


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.lists(st.integers(-3, 3), min_size=3, max_size=3), min_size=1, max_size=12),
       same_columns=st.booleans())
def test_row_classes_are_those_of_unique_rows(rows: list[list[int]], same_columns: bool) -> None:
    from visa.memory.replicas import _classes

    arr = np.array(rows, np.int64)
    if same_columns:
        arr = np.repeat(arr[:, :1], 3, axis=1)
    got = _classes(arr)
    want = np.unique(arr, axis=0, return_inverse=True)[1].reshape(-1)
    for i in range(arr.shape[0]):  # the same partition of the rows (class numbers may differ)
        np.testing.assert_array_equal(got == got[i], want == want[i])


def test_a_held_data_array_ends_every_claim() -> None:
    """``DenseImage.data`` hands out the bytes, to be written at any time: a broadcast recorded after it would
    survive a write through the array (review of issue 15: the image records nothing once it handed them out)."""
    img = DenseImage((*LEAD, 32), page_bytes=8)
    held = img.data
    flat = img.flat_data(0, 32).reshape(UNITS, 32)
    flat[:] = 7
    img.mark_written(slice(None), 0, 32)
    img.record_replicas(np.arange(UNITS, dtype=np.int64), np.zeros(UNITS, np.int64), 0, 32)
    held[0, 1, 3] = 9  # unit 1, a byte of page 0
    assert _claims_hold(img, 0, 32) == 0


def test_a_held_flat_image_cannot_write_past_the_ids() -> None:
    """A flat image is for reading: its bytes are read only (a write through it would reach neither the image's
    written range nor its replica ids)."""
    img = DenseImage((*LEAD, 16), page_bytes=8)
    flat = img.flat_image()
    with pytest.raises(ValueError):
        flat.scatter(np.array([3]), np.array([5], np.uint8))


SPACE = address_space(RNGD, "dm")
DM_SHAPE = (RNGD.dm.clusters_per_chip, RNGD.dm.slices_per_cluster, RNGD.dm.slice_bytes)
DM_UNITS = DM_SHAPE[0] * DM_SHAPE[1]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_random_broadcast_dma_claims_only_equal_bytes(data: st.DataObject) -> None:
    """``transfer._record_replicas`` under random loop nests (review of issue 15): a stride-0 source loop over
    slices, a second slice loop before or after it (the same source again, steps of its own, stepping back,
    overlapping the first), strided or partial inner runs, from the host or from the DM itself (slices the copy
    also writes); every claim is held to the bytes afterwards."""
    img = DenseImage(DM_SHAPE, page_bytes=64)
    dm = DmEndpoint(RNGD, lambda chip: img)
    unit = SPACE.unit_bytes
    n1, d1 = data.draw(st.integers(2, 4)), data.draw(st.sampled_from([1, -1, 2]))
    loops = [(n1, data.draw(st.sampled_from([0, 0, 8])), d1 * unit)]
    if data.draw(st.booleans()):
        n2, s2 = data.draw(st.integers(1, 3)), data.draw(st.sampled_from([0, 8, -8, 1]))
        d2 = data.draw(st.sampled_from([n1 * abs(d1), -n1 * abs(d1), 1, 2 * n1]))
        loops.insert(data.draw(st.integers(0, 1)), (n2, s2, d2 * unit))
    inner, step = data.draw(st.sampled_from([64, 100, 200])), data.draw(st.sampled_from([1, 1, 2]))
    loops.append((inner, step, step))
    byte = data.draw(st.sampled_from([0, 30, 64]))
    u_lo = sum(min(0, (n - 1) * (d // unit)) for n, _, d in loops[:-1])
    u_hi = sum(max(0, (n - 1) * (d // unit)) for n, _, d in loops[:-1])
    s_lo = sum(min(0, (n - 1) * s) for n, s, _ in loops)
    s_hi = sum(max(0, (n - 1) * s) for n, s, _ in loops)
    u0 = data.draw(st.integers(-u_lo, DM_UNITS - 1 - u_hi))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    flat = img.flat_data(0, 2048).reshape(DM_UNITS, -1)  # known bytes under every source and destination
    flat[:, :2048] = rng.integers(0, 4, size=(DM_UNITS, 2048), dtype=np.uint8)
    img.mark_written(slice(None), 0, 2048)
    if data.draw(st.booleans()):
        src: HostBuffer | DmEndpoint = HostBuffer(rng.integers(0, 3, size=s_hi - s_lo + 1, dtype=np.uint8))
        base = -s_lo
    else:
        src = dm
        base = data.draw(st.integers(0, DM_UNITS - 1)) * unit + 512 - s_lo
        assume(512 + s_hi - s_lo < 2048)
    copy(loops, (base, u0 * unit + byte), src, dm)
    for lo, hi in ((0, 2048), (0, 256), (64, 128), (byte, byte + inner * step)):
        _claims_hold(img, lo, hi, DM_UNITS)
