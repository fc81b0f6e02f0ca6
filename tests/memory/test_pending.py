"""Writes an image owes, made only when something needs the bytes (visa.memory.pending, issue 15).

Pending fills (the zeros a reused buffer owes, visa.memory.arena) and pending copies (the replicas a broadcast
DMA leaves to be copied, visa.memory.transfer) must be invisible: whatever reads or writes the image afterwards,
through whichever path, sees exactly what it would had every write been made at once.  Each test runs the same
random program twice — with writes left pending and with every write made at once — and compares every read.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import visa.memory.images as images
import visa.memory.transfer as transfer
from tests.fastpath_switch import skip_unless
from visa import RNGD, axes, fastpaths
from visa.dtypes import i8, i16
from visa.memory.arena import Arena
from visa.memory.images import DenseImage, load_nest, store_nest
from visa.memory.pending import Pending
from visa.memory.transfer import DmEndpoint, HostBuffer, address_space, copy
from visa.memory.units import enabled_units

axes(I=512, J=512, K=1024)  # the GEMM example's

SPACE = address_space(RNGD, "dm")
UNIT = SPACE.unit_bytes
SHAPE = (RNGD.dm.clusters_per_chip, RNGD.dm.slices_per_cluster, RNGD.dm.slice_bytes)
UNITS = SHAPE[0] * SHAPE[1]
SPAN = 4096  # the programs below write bytes [0, SPAN) of the slices


# ------------------------------------------------------------------------------------------------ Pending


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), ops=st.lists(st.integers(0, 3), min_size=1, max_size=10))
def test_pending_writes_read_as_writes_made_at_once(seed: int, ops: list[int]) -> None:
    """Random fills, covered writes, copies and partial makes on a small image: after a final make the bytes
    equal those of the same writes made at once."""
    rng = np.random.default_rng(seed)
    n_units, n = 6, 24
    rows = rng.integers(1, 255, size=(n_units, n), dtype=np.uint8)  # what a dead image left
    want = np.zeros_like(rows)
    p = Pending(n_units)
    p.fill(0, n_units, 0, n)
    for op in ops:
        lo = int(rng.integers(0, n - 1))
        hi = int(rng.integers(lo + 1, n + 1))
        if op == 0:  # a partial make: a reader of [lo, hi)
            p.make(rows, lo, hi)
            assert np.array_equal(rows[:, lo:hi], want[:, lo:hi])
        elif op == 1:  # a write of every unit over [lo, hi), announced
            p.cover(0, n_units, lo, hi)
            p.make(rows, lo, hi)
            val = rng.integers(0, 255, size=(n_units, hi - lo), dtype=np.uint8)
            rows[:, lo:hi] = val
            want[:, lo:hi] = val
        elif op == 2:  # a broadcast: unit 0 and 1 written, the others pending copies of them
            p.cover(0, n_units, lo, hi)
            p.make(rows, lo, hi)
            val = rng.integers(0, 255, size=(2, hi - lo), dtype=np.uint8)
            rows[:2, lo:hi] = val
            dst = np.arange(2, n_units)
            p.copy(dst, dst % 2, lo, hi)
            want[:, lo:hi] = val[np.arange(n_units) % 2]
            owner = p.sources(np.arange(n_units), lo, hi)
            assert owner is not None and np.array_equal(rows[owner, lo:hi], want[:, lo:hi])
        else:  # a write to some units (not announced: everything pending there is made first)
            u = int(rng.integers(0, n_units))
            p.make(rows, lo, hi)
            rows[u, lo:hi] = 9
            want[u, lo:hi] = 9
    p.make(rows, 0, n)
    assert not p and np.array_equal(rows, want)


# ------------------------------------------------------------------------------------------------ DM images



#: The fast paths that leave the GEMM example's copies pending (what the tests of that structure need on).
GEMM_PENDING = ("dma.pending-copies", "collect.replica-load", "fetch.pending-copies", "memory.replicas",
                "fetch.replica-labels")

def _run(program: list[tuple[Any, ...]], defer: bool, monkeypatch: pytest.MonkeyPatch, whole: bool = True
         ) -> list[Any]:
    """Run ``program`` on a DM image (its memory a reused one, owing zeros) and return every read; ``whole``
    reads all of it at the end (else it dies with what is pending)."""
    monkeypatch.setattr(transfer, "DEFER_BYTES", 0)  # (every broadcast left pending, however small)
    monkeypatch.setattr(images, "ARENA", Arena(least=1))
    with contextlib.nullcontext() if defer else fastpaths.disabled("dma.pending-copies"):
        return _program(program, monkeypatch, whole)


def _program(program: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch, whole: bool) -> list[Any]:
    junk = DenseImage(SHAPE, page_bytes=256)  # a dead image's bytes under the next one
    junk.flat_data(0, SPAN).reshape(UNITS, -1)[:, :SPAN] = 0xA5
    junk.mark_written(slice(None), 0, SPAN)
    del junk
    img = DenseImage(SHAPE, page_bytes=256)
    held = [img]  # (the endpoint's reference, dropped with the image at the end)
    dm = DmEndpoint(RNGD, lambda chip: held[0])
    reads: list[Any] = []
    for op in program:
        kind = op[0]
        if kind == "broadcast":  # n copies (slice steps of `step`) of `size` host bytes, from slice u0, byte b
            _, n, step, u0, b, size, seed = op
            src = HostBuffer(np.random.default_rng(seed).integers(0, 256, size=size, dtype=np.uint8))
            copy([(n, 0, step * UNIT), (size, 1, 1)], (0, u0 * UNIT + b), src, dm)
        elif kind == "dm_to_dm":  # slices [u0, u0 + n) bytes [b, b + size) to slices [u1, ...) bytes [b1, ...)
            _, n, u0, b, size, u1, b1 = op
            copy([(n, UNIT, UNIT), (size, 1, 1)], (u0 * UNIT + b, u1 * UNIT + b1), dm, dm)
        elif kind == "load":  # a loop-nest read of the units where `enabled`, 2-byte elements
            _, mask, b, count = op
            en = np.zeros(UNITS, bool)
            en[list(mask)] = True
            got = load_nest(i16, enabled_units(img, en.reshape(SHAPE[:2])), 8 * b, [(count, 1)])
            assert got is not None
            reads.append((got[0].copy(), got[1].copy()))
        elif kind == "store":  # a loop-nest write into some units
            _, mask, b, count, seed = op
            en = np.zeros(UNITS, bool)
            en[list(mask)] = True
            vals = np.random.default_rng(seed).integers(-128, 128, size=(len(set(mask)), count), dtype=np.int8)
            assert store_nest(i8, enabled_units(img, en.reshape(SHAPE[:2])), 8 * b, [(count, 1)], vals,
                              np.ones(vals.shape, bool))
        elif kind == "poison":
            _, b, size = op
            img.poison(b, b + size)
        elif kind == "read":  # the whole span, through the bytes themselves (everything made)
            data, written = img.read_view()
            reads.append((data[..., :SPAN].copy(), written[..., :SPAN].copy()))
    if whole:
        data, written = img.read_view()
        reads.append((data[..., :SPAN + 64].copy(), written[..., :SPAN + 64].copy()))
        del data, written
    held.clear()
    del img, dm
    again = DenseImage(SHAPE, page_bytes=256)  # the memory back from the arena: it reads as fresh
    reads.append(again.read_data()[..., :SPAN + 64].copy())
    return reads


_UNIT = st.integers(0, 40)
_BYTE = st.integers(0, 3000)
_OPS = st.one_of(
    st.tuples(st.just("broadcast"), st.integers(2, 6), st.sampled_from([1, 2, 7]), _UNIT, _BYTE,
              st.integers(1, 1000), st.integers(0, 99)),
    st.tuples(st.just("dm_to_dm"), st.integers(1, 4), _UNIT, _BYTE, st.integers(1, 900), _UNIT, _BYTE),
    st.tuples(st.just("load"), st.lists(st.integers(0, 60), min_size=1, max_size=6), st.integers(0, 2500),
              st.integers(1, 600)),
    st.tuples(st.just("store"), st.lists(st.integers(0, 60), min_size=1, max_size=6), st.integers(0, 3000),
              st.integers(1, 500), st.integers(0, 99)),
    st.tuples(st.just("poison"), _BYTE, st.integers(1, 500)),
    st.tuples(st.just("read")),
)


@settings(max_examples=40, deadline=None)
@given(program=st.lists(_OPS, min_size=1, max_size=7), whole=st.booleans())
def test_pending_copies_and_fills_read_as_made(program: list[tuple[Any, ...]], whole: bool) -> None:
    """Broadcast DMAs (their copies left pending), DM-to-DM moves, loop-nest reads and writes over some slices,
    poison and whole reads, on memory a dead image wrote: every read, and the memory handed to the next image,
    are those of the same program with every write made at once."""
    with pytest.MonkeyPatch.context() as mp:
        pending = _run(program, True, mp, whole)
        made = _run(program, False, mp, whole)
    assert len(pending) == len(made)
    gc.collect()
    for a, b in zip(pending, made, strict=True):
        if isinstance(a, tuple):
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        else:
            assert np.array_equal(a, b) and not a.any()


@skip_unless("dma.pending-copies")
def test_the_gemm_broadcast_leaves_its_copies_pending(arena: Arena, monkeypatch: pytest.MonkeyPatch) -> None:
    """The GEMM example's A (manual L497): 16 slices get the same 64 KiB; one is written, 15 wait, and a fetch-like
    read of all 16 returns the copies without making them."""
    img = DenseImage(SHAPE)
    dm = DmEndpoint(RNGD, lambda chip: img)
    src = np.random.default_rng(3).integers(0, 256, size=1 << 16, dtype=np.uint8)
    copy([(16, 0, UNIT), (1 << 16, 1, 1)], (0, 0), HostBuffer(src), dm)
    assert len(img._pending.copies) == 1 and not img._bytes[0, 1:16].any()
    got = load_nest(i8, enabled_units(img, np.arange(UNITS).reshape(SHAPE[:2]) < 16), 0, [(1 << 16, 1)])
    assert got is not None and np.array_equal(got[0], np.broadcast_to(src.view(np.int8), (16, 1 << 16)))
    assert len(img._pending.copies) == 1  # read from slice 0, nothing copied
    assert np.array_equal(img.read_data()[0, 15, : 1 << 16], src) and not img._pending  # made when read whole


def test_a_dm_to_dm_move_of_unwritten_bytes_is_poison() -> None:
    """Found by the program above (it failed on e50e4b8 with "ndarray is not contiguous"): a DM → DM move of
    two slices' single unwritten byte; the destination stays poison."""
    img = DenseImage(SHAPE, page_bytes=256)
    dm = DmEndpoint(RNGD, lambda chip: img)
    copy([(2, UNIT, UNIT), (1, 1, 1)], (0, 0), dm, dm)
    assert not img.known_bytes(0, 1).any()


def test_a_read_through_the_copies_sees_the_zeros_owed_beside_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broadcast into slices 0–3 of memory a dead image wrote, then a read of slices 0–7: slices 4–7 read the
    zeros still owed there (poison), not what the dead image left, while 1–3 read slice 0's bytes."""
    program = [("broadcast", 4, 1, 0, 0, 1000, 5), ("load", [0, 1, 2, 3, 4, 5, 6, 7], 0, 500)]
    pending = _run(program, True, monkeypatch)
    made = _run(program, False, monkeypatch)
    values, known = pending[0]
    assert np.array_equal(values, made[0][0]) and np.array_equal(known, made[0][1])
    assert known[:4].all() and not known[4:].any() and not values[4:].any()


def _gemm(pending: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray[Any, Any], int, int, int]:
    """The GEMM example's kernel (manual L466–525) on fixed data: its output's bits, its cycles, and the pending
    copies its DM and TRF hold at the end."""
    from tests.memory.gemm_run import run_gemm

    monkeypatch.setenv("VISA_VERIFY_REPLICAS", "0")  # (checking a claim reads every copy: the bits compare here)
    with contextlib.nullcontext() if pending else fastpaths.disabled("dma.pending-copies", "collect.replica-load"):
        ctx, bits = run_gemm(11)
    chip = ctx.memory.chip(0)
    return bits, ctx.schedule.makespan, len(chip.dm._pending.copies), len(chip.trf._pending.copies)


@skip_unless(*GEMM_PENDING)
def test_the_gemm_example_runs_the_same_with_copies_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GEMM example with its replicas left pending (A and B over the slices in DM, B in every TRF) and with
    every copy made: the same output bits and the same cycles; the pending run made none of its copies."""
    got = _gemm(True, monkeypatch)
    with pytest.MonkeyPatch.context() as mp:
        want = _gemm(False, mp)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1] and want[2:] == (0, 0)
    assert got[2:] == (2, 1)  # A and B in DM, B in the TRF: still pending at the end


@skip_unless(*GEMM_PENDING, "fetch.all-known")
def test_the_gemm_weights_stream_keeps_its_copies_unmade(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GEMM example's B (manual L497–509): the fetch over slices left pending copies reads one slice per class
    (visa.engines.rows.CopiedRows), collect passes the structure on, and the TRF load writes one slice per class
    from it: no copy of the stream is made, and the output bits are those of the run with every copy made."""
    from visa.engines import collect
    from visa.engines.rows import CopiedRows

    seen: list[tuple[str, bool]] = []
    load = collect.execute_load

    def spy(cfg: Any, data: Any, *args: Any, **kw: Any) -> None:
        load(cfg, data, *args, **kw)
        made = getattr(data, "_made", lambda: True)  # (after the load: still not made)
        seen.append((type(data).__name__, bool(made())))

    monkeypatch.setattr(collect, "execute_load", spy)
    got = _gemm(True, monkeypatch)
    assert seen == [(CopiedRows.__name__, False)]
    seen.clear()
    with pytest.MonkeyPatch.context() as mp:
        want = _gemm(False, mp)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 12), rows=st.sampled_from([1, 2, 4]),
       classes=st.integers(1, 6))
def test_a_replicated_register_load_writes_what_the_plain_load_writes(seed: int, n: int, rows: int,
                                                                      classes: int) -> None:
    """``collect._load_replicas`` (one slice per class written, the others left pending copies) against the
    plain store of every slice, under random labels whose classes first appear in any order (the 16384³ GEMM's
    did not appear in the order of their labels: the first version wrote one class's rows into another's)."""
    from types import SimpleNamespace

    from visa.engines import collect

    rng = np.random.default_rng(seed)
    e, bank = 16, 4
    of = rng.integers(0, classes, size=n)
    labels = rng.permutation(100)[:classes][of].astype(np.int64)  # label values unrelated to first positions
    per = rng.integers(-128, 128, size=(classes, rows, e), dtype=np.int8)
    values = per[of]  # (slices, rows, elements): a class's slices hold the same rows
    on = np.ones(n, dtype=bool)
    cfg = SimpleNamespace(dtype=i8, memory="trf", element=SimpleNamespace(size=e))
    got, want = DenseImage((1, n, bank, 64)), DenseImage((1, n, bank, 64))
    known = np.ones((n * rows, e), bool)
    if not collect._load_replicas(cfg, got, labels, 0, on, rows, 8 * 8, values, known):  # type: ignore[arg-type]
        return  # (declined: fewer than two slices a class on average, or the rows are not one range of units)
    enabled = np.zeros((1, n, bank), dtype=bool)
    enabled[:, :, :rows] = True
    assert store_nest(i8, enabled_units(want, enabled), 8 * 8, [(e, 1)], values.reshape(-1, e), known)
    np.testing.assert_array_equal(got.read_data(), want.read_data())
    np.testing.assert_array_equal(got.known_bytes(0, 64), want.known_bytes(0, 64))
