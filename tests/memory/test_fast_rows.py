"""``dma.gather-rows`` (visa.memory.fast_rows, issue 24): a gather's rows moved as one batch leave the DM image,
the HBM image and the schedule exactly as the reference's row-by-row copies do — rows unordered and repeated,
tables partly poisoned or partly never made, destinations owing zeros and pending copies, rows that do not cover
their units; and a gather's refusals are the same (manual L1684–1688)."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import visa.memory.images as images
import visa.memory.transfer as transfer
from benchmarks.bench_heldout4 import gather_kernel
from tests.fastpath_switch import skip_unless
from visa import RNGD, AxisSet, Context, HostTensor, bf16, fastpaths, i32, launch
from visa.errors import VisaError
from visa.memory import fast_rows
from visa.memory.arena import Arena
from visa.memory.images import DenseImage, PagedImage
from visa.memory.transfer import DmEndpoint, HbmEndpoint, HostBuffer, address_space, copy

SPACE = address_space(RNGD, "dm")
UNIT = SPACE.unit_bytes
SHAPE = (RNGD.dm.clusters_per_chip, RNGD.dm.slices_per_cluster, RNGD.dm.slice_bytes)
SPAN = 4096
TABLE = 1 << 20  # the table's HBM address


def _gather(loops: list[tuple[int, int, int]], sb: np.ndarray, db: np.ndarray, src: Any, dst: Any) -> bool:
    """What :func:`visa.engines.dma.indirect.execute` does with the rows; whether the batch was taken."""
    if fast_rows.copy_rows(loops, sb, db, src, dst):
        return True
    for s, d in zip(sb.tolist(), db.tolist(), strict=True):
        copy(loops, (s, d), src, dst)
    return False


def _run(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], bool]:
    monkeypatch.setattr(transfer, "DEFER_BYTES", 0)  # (every broadcast left pending)
    monkeypatch.setattr(images, "ARENA", Arena(least=1))
    junk = DenseImage(SHAPE, page_bytes=256)  # a dead image's bytes under the next one: zeros owed
    junk.flat_data(0, SPAN).reshape(-1, SHAPE[-1])[:, :SPAN] = 0xA5
    junk.mark_written(slice(None), 0, SPAN)
    del junk
    img = DenseImage(SHAPE, page_bytes=256)
    hbm = PagedImage(1 << 30)
    dm, hb = DmEndpoint(RNGD, lambda chip: img), HbmEndpoint(RNGD, lambda chip: hbm)
    rng = np.random.default_rng(case["seed"])
    for n, u0, b, size in case["broadcasts"]:  # pending copies under the rows
        src = HostBuffer(rng.integers(0, 256, size=size, dtype=np.uint8))
        copy([(n, 0, UNIT), (size, 1, 1)], (0, u0 * UNIT + b), src, dm)
    for b, size in case["poison"]:
        img.poison(b, b + size)
    p, k, run, gap, off, rows, made = (case[x] for x in ("p", "k", "run", "gap", "off", "rows", "made"))
    sj = run + gap
    sp = k * sj + case["pad"]
    rb = p * sp + case["pad"]
    table = rng.integers(0, 256, size=rows * rb, dtype=np.uint8)
    written = rng.random(table.size) >= case["holes"]
    copy([(made * rb, 1, 1)], (0, TABLE), HostBuffer(table[: made * rb], written[: made * rb]), hb)
    ids = np.asarray(case["ids"], np.int64) % rows
    dstride = run if case["covers"] else run + 2
    loops = [(p, sp, UNIT), (k, sj, dstride), (run, 1, 1)]
    order = np.asarray(case["order"], np.int64)[: ids.size]
    sb = TABLE + ids * rb
    db = case["u0"] * UNIT + off + order * p * case.get("spread", 1) * UNIT  # (spread 2: runs of units apart)
    taken = _gather(loops, sb, db, hb, dm)
    data, mask = img.read_view()
    reads: list[Any] = [data[..., : SPAN + 64].copy(), mask[..., : SPAN + 64].copy(), hbm.regions()]
    del data, mask
    reads.append(hbm.gather(np.arange(TABLE, TABLE + rows * rb, dtype=np.int64)))
    return reads, taken


@st.composite
def _cases(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(2, 8))
    run = draw(st.sampled_from([1, 2, 8, 32, 100]))
    k = draw(st.integers(1, 4))
    rows = draw(st.integers(1, 12))
    return {
        "seed": draw(st.integers(0, 99)), "p": draw(st.integers(1, 3)), "k": k, "run": run,
        "gap": draw(st.sampled_from([0, 0, 4, 16])), "pad": draw(st.sampled_from([0, 8])),
        "off": draw(st.sampled_from([0, 64, 1000])), "rows": rows,
        "made": draw(st.sampled_from([rows, rows, max(1, rows - 1)])),  # (the last rows never made: a gap)
        "holes": draw(st.sampled_from([0.0, 0.0, 0.01])),  # (poisoned table bytes)
        "covers": True,
        "ids": draw(st.lists(st.integers(0, 99), min_size=n, max_size=n)),  # (repeated, unordered)
        "order": draw(st.permutations(range(8))),  # (the destination rows, unordered)
        "u0": draw(st.integers(0, 8)), "spread": draw(st.sampled_from([1, 2])),
        "broadcasts": draw(st.lists(st.tuples(st.integers(2, 6), st.integers(0, 30), st.integers(0, 3000),
                                              st.integers(1, 1000)), max_size=2)),
        "poison": draw(st.lists(st.tuples(st.integers(0, 3000), st.integers(1, 800)), max_size=1)),
    }


@settings(max_examples=40, deadline=None)
@given(case=_cases(), covers=st.booleans())
def test_rows_in_a_batch_leave_the_images_as_row_by_row(case: dict[str, Any], covers: bool) -> None:
    """Every byte and written flag of the DM (what was pending, poisoned and written there included) and the
    HBM table's regions and bytes are those of the rows copied one by one."""
    case = {**case, "covers": covers}
    with pytest.MonkeyPatch.context() as mp:
        fast, taken = _run(case, mp)
        with fastpaths.disabled("dma.gather-rows"):
            ref, _ = _run(case, mp)
    gc.collect()
    for a, b in zip(fast, ref, strict=True):
        if isinstance(a, tuple):
            assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        elif isinstance(a, list):
            assert a == b
        else:
            assert np.array_equal(a, b)
    if taken:  # (only rows covering their units are batched)
        assert covers or case["k"] == 1


@skip_unless("dma.gather-rows")
def test_the_batch_is_taken_for_known_rows_over_whole_units() -> None:
    """The paged-KV shape (rows of whole units, known bytes): the batch is taken; a poisoned table is not."""
    case = {"seed": 1, "p": 2, "k": 2, "run": 32, "gap": 0, "pad": 0, "off": 0, "rows": 6, "made": 6,
            "holes": 0.0, "covers": True, "ids": [5, 0, 5, 3], "order": [3, 1, 0, 2], "u0": 2, "broadcasts": [],
            "poison": []}
    with pytest.MonkeyPatch.context() as mp:
        assert _run(case, mp)[1]
        assert not _run({**case, "holes": 0.01}, mp)[1]


PAGED = AxisSet(Pool=40, K=2, PB=16, HD=16, NB=32)


def _launch(ids: np.ndarray, poison_row: int | None) -> tuple[Any, ...]:
    """The paged gather of ``ids`` (a pool row never written when ``poison_row``): the output's bytes and
    written-state (or the refusal), the DM image's, and the schedule's records."""
    m = PAGED.m
    ctx = Context.acquire()
    rng = np.random.default_rng(7)
    ps = HostTensor.rand(bf16, m["Pool, K, PB, HD"], rng)
    ph = ps.to_hbm(m["1"], m["Pool, K, PB, HD"], ctx.pdma, 0)
    if poison_row is not None:
        row = 2 * 16 * 16 * 2
        ctx.memory.chip(0).hbm.poison(poison_row * row, (poison_row + 1) * row)
    th = HostTensor.from_numpy(ids.astype(np.int32), i32, m["NB"]).to_hbm(m["1"], m["NB"], ctx.pdma, 1 << 24)
    try:
        out = launch(gather_kernel(PAGED), ctx, ph, th)
    except VisaError as err:
        return (type(err).__name__, str(err))
    ops = [(o.track, o.name, o.start, o.cycles, o.deps, o.waits_for, o.traffic, [e.config for e in o.engines])
           for o in ctx.schedule.ops]
    dm = ctx.memory.chip(0).dm
    state = (dm.read_data()[..., :4096].tobytes(), dm.known_bytes(0, 4096).tobytes())
    try:
        got: Any = out.to_host(m["NB, K, PB, HD"], ctx.pdma).numpy(axes="NB K PB HD").view(np.uint16).tolist()
    except VisaError as err:
        got = (type(err).__name__, str(err))
    return got, ops, state


@pytest.mark.parametrize("ids, poison_row", [
    (np.arange(32)[::-1] % 40, None),  # unordered
    (np.random.default_rng(2).integers(0, 40, 32), None),  # repeated
    (np.r_[np.arange(31), 40], None),  # out of range: refused, naming the position
    (np.r_[np.arange(30), -1, 3], None),
    (np.arange(32) % 7, 3),  # a poisoned block read
])
@pytest.mark.parametrize("path", ["dma.gather-rows", "dma.written-whole-gather"])
def test_a_paged_gather_is_the_same_with_and_without_the_batch(ids: np.ndarray, poison_row: int | None,
                                                              path: str) -> None:
    """Output bits (or the refusal, word for word; a poisoned block's poison), cycles and schedule records with
    ``dma.gather-rows`` (the rows as one batch) and ``dma.written-whole-gather`` (the new tensor not poisoned
    first) on and off."""
    on = _launch(ids, poison_row)
    with fastpaths.disabled(path):
        off = _launch(ids, poison_row)
    assert on == off
