"""The fast paths issue 15's second set of held-out kernels added (docs/manual-notes.md, "Held-out kernels, second
set"), each pinned against the general path it replaces on small inputs.

- An interleaved fetch of two tensors anywhere in the slice (``begin_interleaved``, manual L1843–1868) reads
  through one strided loop nest (``fetch._pair_nest``) instead of one address per stream position.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from visa import AxisSet, Context, fastpaths, i8, i16, i32, testing
from visa import dtypes as dt
from visa.engines import collect as CO
from visa.engines import fetch as F
from visa.engines import fetch_fast
from visa.engines import transpose as T
from visa.engines.common import StreamData, StreamLayout
from visa.engines.vector import (
    InterSliceReduceOpI32,
    IntraSliceReduceOpF32,
    IntraSliceReduceOpI32,
    arith,
    fast_relayout,
)
from visa.engines.vector.inter import execute_inter_reduce, plan_inter_reduce, rank_of, unique_counts, unique_ids
from visa.engines.vector.intra import execute_intra_reduce, plan_intra_reduce
from visa.engines.vector.plan import LaneConfig
from visa.engines.vector.relayout import apply_gather, plan_gather
from visa.errors import VisaError
from visa.mapping.core import symbol
from visa.memory import images as images_mod
from visa.memory import transfer
from visa.memory.images import DenseImage, _hulls, load, load_nest, nest_all_written, store
from visa.memory.known import is_everywhere, known_everywhere
from visa.memory.units import UnitSelection
from visa.stream.vector.pair import _time_steps
from visa.testing import place_dm

DTYPES = (i8, i16, i32)


def _interleaved(monkeypatch: pytest.MonkeyPatch | None, general: bool, dtype: Any, n_e: int, time: str, packet: str,
                 gap: int, written: int, seed: int, dst: Any = None, pad: Any = None) -> Any:
    """Fetch a pair of ``n_e``-element tensors ``gap`` bytes apart (the second written only ``written`` elements
    deep: the rest is poison), through the general path or not; as ``dst`` (default ``dtype``), with the masking
    stage's ``pad`` value when given."""
    with fastpaths.disabled("fetch.loop-nest", "fetch.all-known") if general else contextlib.nullcontext():
        ax = AxisSet(A=n_e, W=written, I=2)
        m = ax.m
        ctx = Context()
        ctx.num_chips = 1
        rng = np.random.default_rng(seed)
        x = dt.random_values(dtype, (2, n_e), rng)
        first = 2048
        a = place_dm(ctx, x[0], dtype, m["1"], m["1 # 2"], m["1 # 256"], m["A"], first)
        place_dm(ctx, x[1][:written], dtype, m["1"], m["1 # 2"], m["1 # 256"], m["W"], first + gap)
        b = place_dm(ctx, x[1], dtype, m["1"], m["1 # 2"], m["1 # 256"], m["A"], first + gap) \
            if written == n_e else type(a).from_addr(ctx, dtype, m["1"], m["1 # 2"], m["1 # 256"], m["A"], first + gap)
        kw = {} if pad is None else {"pad_value": pad}
        s = ctx.main.begin_interleaved(m["I"], a.view(), b.view()).fetch(dst or dtype, m[time], m[packet], **kw)
        return np.asarray(s.data.values).copy(), np.asarray(np.broadcast_to(s.data.known, s.data.values.shape)).copy()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dtype=st.sampled_from(DTYPES), n_e=st.sampled_from([8, 16, 32]), order=st.integers(0, 3),
       gap_units=st.integers(-40, 40), short=st.booleans(), seed=st.integers(0, 99))
def test_interleaved_pair_nest_matches_the_general_path(monkeypatch: pytest.MonkeyPatch, dtype: Any, n_e: int,
                                                        order: int, gap_units: int, short: bool, seed: int) -> None:
    """Values and known-mask of an interleaved fetch equal the general path's, for the two tensors adjacent or
    apart, the interleave axis outside, inside or merged with the element's loop, the second tensor partly
    written."""
    time, packet = [("I, A / 8", "A % 8"), ("A / 8, I", "A % 8"), ("I, A / 4", "A % 4"), ("A / 4, I", "A % 4")][order]
    gap = gap_units * 8 * dtype.image_bits // 8  # whole elements, 32-byte steps for i32
    assume(abs(gap) >= n_e * dtype.image_bits // 8)  # no overlap; the second tensor above or below the first
    written = n_e // 2 if short else n_e
    try:
        want = _interleaved(monkeypatch, True, dtype, n_e, time, packet, gap, written, seed)
    except VisaError:
        assume(False)
    got = _interleaved(monkeypatch, False, dtype, n_e, time, packet, gap, written, seed)
    assert np.array_equal(got[1], want[1])
    assert np.array_equal(np.where(got[1], got[0], 0), np.where(want[1], want[0], 0))


def test_pair_nest_is_a_loop_nest_over_both_tensors() -> None:
    """The AllReduce add's fetch (Element 1024 i32, Time ``I, A / 8``, the tensors 64 KiB apart) is one nest: the
    merged ``I, A / 8`` loop split at the element, its outer half stepping by the gap."""
    ax = AxisSet(A=1024, I=2)
    m = ax.m
    cfg = F.plan(Context().hw, i32, i32, m["1"], m["1 # 2"], m["1 # 256"], m["A"], m["I, A / 8"], m["A % 8"],
                 interleave=m["I"])
    bases = np.array([0, 8 * (1 << 16)], dtype=np.int64)
    got = fetch_fast._nest(cfg, bases, cfg.sequencer.entries)
    assert got is not None
    base, loops = got
    assert base == 0 and tuple(lp for lp in loops if lp[0] > 1) == ((2, (1 << 16) // 4), (128, 8), (8, 1))
    below = fetch_fast._nest(cfg, bases[::-1].copy(), cfg.sequencer.entries)  # the second tensor below the first
    assert below is not None and below[0] == 8 * (1 << 16) and below[1][0] == (2, -(1 << 16) // 4)


@settings(max_examples=80, deadline=None)
@given(loops=st.lists(st.tuples(st.integers(1, 4), st.integers(-40, 40)), min_size=0, max_size=4),
       nb=st.sampled_from([1, 2, 4]), base=st.integers(0, 200), holes=st.lists(st.integers(0, 399), max_size=6))
def test_nest_all_written_asks_only_the_bytes_read(loops: list[tuple[int, int]], nb: int, base: int,
                                                   holes: list[int]) -> None:
    """``nest_all_written`` over the hulls of a nest's steps (``images._hulls``) says True exactly when every byte
    of every word the nest visits was written (brute force over the byte mask), whenever the hulls are the bytes
    read; it never says True when one is unwritten."""
    img = DenseImage((1, 400))
    img.data[...] = 0
    mask = np.ones((1, 400), dtype=bool)
    mask[0, holes] = False
    img.written[...] = mask
    d = {1: i8, 2: i16, 4: i32}[nb]
    words = np.full((), 0, dtype=np.int64)
    for n, s in loops:
        words = words[..., None] + np.arange(n, dtype=np.int64) * s * nb
    start = base + words.reshape(-1)
    if start.min() < 0 or start.max() + nb > 400:
        return
    read = (start[:, None] + np.arange(nb)).reshape(-1)
    every = bool(mask[0, read].all())
    got = nest_all_written(d, img, 8 * base, loops)
    assert not got or every  # sound: never True over an unwritten byte read
    covered = np.zeros(400, dtype=bool)
    for lo, hi in _hulls(tuple((n, s * nb) for n, s in loops if n != 1), nb):
        covered[base + lo: base + hi] = True
    assert covered[read].all()  # the hulls cover every byte read
    if covered.sum() == np.unique(read).size:  # the hulls are exactly the bytes read
        assert got == every


WHOLE = [dt.i8, dt.i16, dt.i32, dt.bf16, dt.f32, dt.f8e4m3, dt.i9, dt.i5]


@settings(max_examples=60, deadline=None)
@given(d=st.sampled_from(WHOLE), n=st.integers(1, 20), base=st.integers(0, 60), units=st.booleans(),
       mask=st.sampled_from(["none", "all", "some"]), seed=st.integers(0, 999))
def test_store_of_a_run_is_the_scatter(d: Any, n: int, base: int, units: bool, mask: str, seed: int) -> None:
    """``store`` of consecutive elements (``fast_images.store_run``, one strided copy; the fast path
    ``memory.image-words``) leaves the bytes, the written-mask and the errors the scatter of every byte leaves,
    on a whole image or a unit selection."""
    rng = np.random.default_rng(seed)
    images = []
    for run in (True, False):
        img = DenseImage((2, 3, 96))
        img.data[...] = np.random.default_rng(seed).integers(0, 256, size=(2, 3, 96), dtype=np.uint8)
        img.written[...] = np.random.default_rng(seed).random((2, 3, 96)) < 0.7
        images.append((run, img))
    target_units = np.array([[True, False, True], [False, True, True]])
    count = int(target_units.sum()) if units else 6
    vals = dt.random_values(d, (count, n), rng)
    sel = None if mask == "none" else np.ones((count, n), bool) if mask == "all" else rng.random((count, n)) < 0.5
    bits = 8 * base + np.arange(n, dtype=np.int64) * d.image_bits
    outcome = []
    for run, img in images:
        with fastpaths.disabled("memory.image-words") if not run else contextlib.nullcontext():
            target = UnitSelection(img, target_units) if units else img
            lead = vals if units else vals.reshape(2, 3, n)
            smask = None if sel is None else (sel if units else sel.reshape(2, 3, n))
            try:
                images_mod.store(d, target, bits, lead, smask)
                outcome.append((img.data.copy(), img.written.copy()))
            except VisaError as err:
                outcome.append((err.describe(),))
    assert len(outcome[0]) == len(outcome[1])
    for a, b in zip(outcome[0], outcome[1], strict=True):
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


@settings(max_examples=60, deadline=None)
@given(t=st.integers(1, 12), start=st.integers(0, 11), step=st.integers(1, 4), count=st.integers(1, 6),
       shuffle=st.booleans(), broadcast=st.booleans(), seed=st.integers(0, 999))
def test_unzip_time_steps_are_the_gather(t: int, start: int, step: int, count: int, shuffle: bool,
                                         broadcast: bool, seed: int) -> None:
    """An unzip group's time steps (``pair._time_steps``: a strided slice when equally spaced) equal the gather
    by index (a read-only view, or a C-contiguous copy); an all-known broadcast stays a broadcast."""
    rng = np.random.default_rng(seed)
    steps = start + step * np.arange(count, dtype=np.int64)
    steps = steps[steps < t]
    assume(steps.size > 0)
    if shuffle:
        steps = rng.permutation(steps)
    arr = known_everywhere((1, 2, 3, t, 4)) if broadcast else rng.integers(0, 100, size=(1, 2, 3, t, 4))
    got = _time_steps(arr, steps)
    want = np.asarray(arr)[:, :, :, steps]
    assert np.array_equal(got, want) and got.shape == want.shape
    assert is_everywhere(got) if broadcast else (got.flags.c_contiguous or not got.flags.writeable)


@settings(max_examples=80, deadline=None)
@given(gin=st.lists(st.integers(0, 60), max_size=40), gout=st.lists(st.integers(0, 60), max_size=40),
       space=st.sampled_from([61, 100, 10**6]))
def test_inter_reduce_group_sets_are_numpys(gin: list[int], gout: list[int], space: int) -> None:
    """The inter-slice reduce's group sets (``inter.unique_ids``: a table of the ids present when the id space is
    small, numpy's ``unique`` otherwise; the sets' differences as the plan takes them), the runs of a sorted array
    (``inter.unique_counts``) and the index of a group (``inter.rank_of``) equal numpy's."""
    a, b = np.array(gin, dtype=np.int64), np.array(gout, dtype=np.int64)
    ins, outs = unique_ids(a, space), unique_ids(b, space)
    got = (ins, outs, np.setdiff1d(ins, outs, assume_unique=True), np.setdiff1d(outs, ins, assume_unique=True))
    ua, ub = np.unique(a), np.unique(b)
    for x, y in zip(got, (ua, ub, np.setdiff1d(ua, ub), np.setdiff1d(ub, ua)), strict=True):
        assert x.tolist() == y.tolist()
    srt = np.sort(a)
    for x, y in zip(unique_counts(srt, space), np.unique(srt, return_index=True, return_counts=True), strict=True):
        assert x.tolist() == y.tolist()
    if ua.size:  # the index of each id in the sorted groups (a running count over a small space)
        ids = np.random.default_rng(space).choice(ua, size=30)
        assert rank_of(ua, ids, space).tolist() == np.searchsorted(ua, ids).tolist()

GATHER_AX = AxisSet(A=4, B=8, C=6, K=2)
GATHER_CASES = [  # (source levels, stream levels): operands a slice holds, separable or not, held or not
    (("1", "K", "A", "1 # 8"), ("1", "K", "A", "B / 4", "B % 4")),  # a VRF operand: one value a slice
    (("1", "K", "A", "B / 4", "B % 4"), ("1", "K", "A", "B / 4", "B % 4")),  # a stash: the stream's own layout
    (("1", "K", "A", "B"), ("1", "K", "A", "B / 4", "B % 4 # 8")),  # an operand along B, padded lanes
    (("1", "K", "A # 8", "B # 16"), ("1", "K", "A # 8", "B / 2", "B % 2 # 4")),  # padding in both
    (("1", "K", "A", "B % 4"), ("1", "K", "A", "B / 4", "B % 4")),  # B / 4 not held: refused
    (("1", "K", "A", "A, B"), ("1", "K", "A", "B / 4", "B % 4")),  # an outer axis inside: not by parts
    (("1", "1 # 2", "A / 2", "A % 2, B"), ("1", "1 # 2", "A / 2", "A % 2, B / 4", "B % 4")),  # not by parts
    (("1", "K", "A", "1 # 8"), ("1", "1 # 2", "K, A", "B / 4", "B % 4")),  # another slice holds it: refused
    (("1", "K", "A", "C"), ("1", "K", "A", "B / 4", "B % 4")),  # an axis the stream lacks: refused
    (("1", "K", "A", "B % 4, B / 4"), ("1", "K", "A", "B / 4", "B % 4")),  # the operand transposed
]


@pytest.mark.parametrize("case", range(len(GATHER_CASES)))
def test_gather_by_parts_is_the_whole_stream_inverse(case: int) -> None:
    """``relayout.plan_gather`` by parts (the fast path ``vector.gather-by-parts``: the slices and the inner levels
    located apart) gives
    the gather, or the refusal, the inverse over the whole stream gives, and applying it reads the same values and
    known-mask at every position read."""
    src_text, stream_text = GATHER_CASES[case]
    m = GATHER_AX.m
    src, stream = tuple(m[t] for t in src_text), tuple(m[t] for t in stream_text)
    outcome = []
    for general in (True, False):
        with fastpaths.disabled("vector.gather-by-parts") if general else contextlib.nullcontext():
            try:
                g = plan_gather(src, stream, "vector_fp_binary", "VRF operand")
                shape = tuple(x.size for x in src)
                rng = np.random.default_rng(case)
                vals = rng.integers(0, 1000, size=shape)
                applied = [apply_gather(g, vals, kn) for kn in (rng.random(shape) < 0.7, known_everywhere(shape))]
                outcome.append((g.index.tolist(), g.used.tolist(),
                                [(np.where(g.used, v, 0).tolist(), (k & g.used).tolist()) for v, k in applied]))
            except VisaError as err:
                outcome.append(err.describe())
    assert outcome[0] == outcome[1]
    if case < 4:  # the separable cases do take the path by parts
        assert fast_relayout.factored(src, stream, frozenset().union(*(s.axes for s in src))) is not None


@settings(max_examples=80, deadline=None)
@given(loops=st.lists(st.tuples(st.integers(1, 4), st.integers(-6, 12)), min_size=1, max_size=3),
       nb=st.sampled_from([1, 2, 4]), base=st.integers(0, 60), page=st.sampled_from([4, 8, 16]),
       writes=st.lists(st.tuples(st.integers(0, 95), st.integers(1, 40)), max_size=4),
       odd=st.booleans(), units=st.booleans())
def test_nest_known_by_page_states_is_the_byte_mask(loops: list[tuple[int, int]], nb: int, base: int, page: int,
                                                   writes: list[tuple[int, int]], odd: bool, units: bool) -> None:
    """``load_nest``'s known-mask when every unit's pages are alike (``images._nest_known`` decides the words by
    one unit's page states and asks the bytes only on mixed pages) equals ``load``'s, byte by byte; also when
    one unit differs (``odd``: the general path)."""
    img = DenseImage((2, 3, 96), page_bytes=page)
    for lo, n in writes:  # the same ranges in every unit: whole pages ALL, partial ones MIXED
        store(i8, img, 8 * lo + 8 * np.arange(min(n, 96 - lo), dtype=np.int64),
              np.ones((2, 3, min(n, 96 - lo)), np.int8))
    if odd:
        store(i8, UnitSelection(img, np.array([[False, True, False], [False, False, False]])),
              np.array([8 * 50], dtype=np.int64), np.ones((1, 1), np.int8))
    d = {1: i8, 2: i16, 4: i32}[nb]
    bits = 8 * base + _nest_addresses(loops) * d.image_bits
    if bits.min() < 0 or bits.max() + d.image_bits > 8 * 96:
        return
    target = UnitSelection(img, np.array([[True, False, True], [False, True, True]])) if units else img
    got = load_nest(d, target, 8 * base, loops)
    want = load(d, target, bits)
    assert got is not None
    count = 4 if units else 6
    assert np.array_equal(got[1].reshape(count, -1), want[1].reshape(count, -1))


def _nest_addresses(loops: list[tuple[int, int]]) -> np.ndarray:
    out = np.zeros((), dtype=np.int64)
    for n, s in loops:
        out = out[..., None] + np.arange(n, dtype=np.int64) * s
    return out.reshape(-1)


INTER_AX = AxisSet(R=4, A=64, T=3)
INTER_CASES = [  # (Slice, Time, Slice2, Time2): full groups, groups with a dummy, a reduce over Time too
    ("A / 8, R # 8", "1", "A / 8, 1 # 8", "1"),
    ("A / 8, R", "1", "A / 8, 1 # 4", "1"),
    ("A / 8 % 4, R", "A / 32", "A / 8 % 4, 1 # 4", "A / 32"),
    ("A / 8, R", "T", "A / 8, 1 # 4", "1"),
]


@settings(max_examples=30, deadline=None)
@given(case=st.integers(0, len(INTER_CASES) - 1), op=st.sampled_from(["AddSat", "Add", "Max"]),
       everywhere=st.booleans(), seed=st.integers(0, 999))
def test_inter_reduce_of_full_groups_is_the_masked_fold(case: int, op: str, everywhere: bool, seed: int) -> None:
    """``execute_inter_reduce`` of a plan whose groups are all full (``cfg.full``: no identity padding, no known
    gather for an all-known stream; the fast path ``vector.reduce-shortcuts``) gives the values and known-mask of the
    masked fold."""
    sl, tm, sl2, tm2 = INTER_CASES[case]
    m = INTER_AX.m
    layout = StreamLayout(i32, m["1"], m["1 # 2"], m[sl], m[tm], m["A % 8"])
    cfg = plan_inter_reduce(Context().hw, layout, getattr(InterSliceReduceOpI32, op), m[sl2], m[tm2])
    assert cfg.full  # (every group of these has its four R)
    shape = (1, 2, m[sl].size, m[tm].size, 8)
    rng = np.random.default_rng(seed)
    vals = rng.integers(-(2**31), 2**31, size=shape, dtype=np.int64).astype(np.int32)
    known = known_everywhere(shape) if everywhere else rng.random(shape) < 0.9
    got = execute_inter_reduce(cfg, StreamData(vals, known))
    with fastpaths.disabled("vector.reduce-shortcuts"):  # (the reference: every group padded and masked)
        want = execute_inter_reduce(cfg, StreamData(vals, known))
    assert np.array_equal(got.known, want.known)
    assert np.array_equal(np.where(want.known, got.values, 0), np.where(want.known, want.values, 0))


TRANSPOSE_CASES = [  # (axes, dtype, in Time, in Packet, out Time, out Packet): the manual's shapes and the bench's
    (dict(C=8, D=8, E=8), dt.i8, "C, D", "E # 32", "C, E", "D # 32"),
    (dict(A=4, B=2), dt.i8, "A", "B # 32", "B", "A # 32"),
    (dict(B=2, C=8, D=4, E=8), dt.i8, "B, C, D", "E # 32", "B, D, E", "C # 32"),
    (dict(C=8, D=4, E=8), dt.bf16, "C, D", "E # 16", "C, E", "D # 16"),
    (dict(C=64, R=8), dt.i8, "C / 8, R", "C % 8 # 32", "C / 8, C % 8", "R # 32"),
]


@pytest.mark.parametrize("case", range(len(TRANSPOSE_CASES)))
def test_transpose_of_an_all_known_stream_is_the_masked_transpose(case: int) -> None:
    """The Transpose Engine and the Collect Engine given an all-known broadcast (the known-mask a pattern, no
    copy) return the values and known-mask they return for the same stream with a materialised mask."""
    sizes, dtype, ti, pi, to, po = TRANSPOSE_CASES[case]
    m = AxisSet(**sizes).m
    cfg = T.plan(Context().hw, dtype, m[ti], m[pi], m[to], m[po])
    rng = np.random.default_rng(case)
    shape = (1, 2, 3, m[ti].size, m[pi].size)
    vals = np.asarray(dt.random_values(dtype, shape, rng)).astype(dtype.storage)
    fast = T.execute(cfg, StreamData(vals, known_everywhere(shape)))
    slow = T.execute(cfg, StreamData(vals, np.ones(shape, dtype=bool)))
    assert np.array_equal(fast.values, slow.values) and np.array_equal(fast.known, slow.known)
    elements = pi.split(" # ")[0]
    cc = CO.plan(Context().hw, dtype, m[ti], m[elements], m[ti], m[pi])
    shape2 = (1, 2, 3, m[ti].size, m[elements].size)
    v2 = np.asarray(dt.random_values(dtype, shape2, rng)).astype(dtype.storage)
    fast2 = CO.execute(cc, StreamData(v2, known_everywhere(shape2)))
    slow2 = CO.execute(cc, StreamData(v2, np.ones(shape2, dtype=bool)))
    assert is_everywhere(fast2.known) and np.array_equal(fast2.values, slow2.values) and bool(slow2.known.all())


INTRA_AX = AxisSet(A=2, B=4, R=4, H=16)
INTRA_CASES = [  # (Time, Packet, axis, out Time, out Packet, op dtype): over Time only, the packet too, padded lanes
    ("R / 2, A % 2, R % 2", "1 # 4", "R", "A % 2", "1 # 4", "i32"),
    ("A, B, R", "1 # 4", "R", "A, B", "1 # 4", "i32"),
    ("H / 4", "H % 4", "H", "1", "1 # 4", "f32"),
    ("A, H / 4", "H % 4", "H", "A", "1 # 4", "f32"),
    ("H / 2", "H % 2 # 4", "H", "1", "1 # 4", "f32"),
]


@settings(max_examples=30, deadline=None)
@given(case=st.integers(0, len(INTRA_CASES) - 1), everywhere=st.booleans(), seed=st.integers(0, 999))
def test_intra_reduce_fast_paths_are_the_masked_fold(case: int, everywhere: bool, seed: int) -> None:
    """``execute_intra_reduce`` of an all-known stream (no poison mask), of a configuration whose every position
    contributes (no identity put in), and of time steps in order (``fast_reduce.by_steps``: a view) — the fast path
    ``vector.reduce-shortcuts`` — gives what the reference gives for the same stream with a materialised mask."""
    ti, pa, axis, ot, op_, kind = INTRA_CASES[case]
    m = INTRA_AX.m
    dtype = i32 if kind == "i32" else dt.f32
    lay = StreamLayout(dtype, m["1"], m["1"], m["1"], m[ti], m[pa])
    op = IntraSliceReduceOpI32.AddSat if kind == "i32" else IntraSliceReduceOpF32.Add
    cfg = plan_intra_reduce(Context().hw, lay, op, axis, m[ot], m[op_], None)
    shape = (1, 1, 1, m[ti].size, m[pa].size)
    rng = np.random.default_rng(seed)
    vals = (rng.integers(-(2**31), 2**31, size=shape, dtype=np.int64).astype(np.int32) if kind == "i32"
            else rng.standard_normal(shape).astype(np.float32))
    known = known_everywhere(shape) if everywhere else rng.random(shape) < 0.9
    if "#" in pa:  # padded lanes hold the identity, known (L5584)
        lanes = m[pa.split(" # ")[0]].size
        vals[..., lanes:] = 0
        if not everywhere:
            known[..., lanes:] = True
    got, _ = execute_intra_reduce(cfg, StreamData(vals, known), None)
    with fastpaths.disabled("vector.reduce-shortcuts"):
        want, _ = execute_intra_reduce(cfg, StreamData(vals, np.array(known)), None)
    assert np.array_equal(np.broadcast_to(got.known, want.known.shape), want.known)
    assert np.array_equal(np.where(want.known, got.values, 0).view(np.uint32), np.where(want.known, want.values,
                                                                                        0).view(np.uint32))


@pytest.mark.parametrize("kind, lanes, width", [("trim", 4, 8), ("split", 4, 8), ("concat", 8, 4), ("pad", 8, 4)])
def test_lane_steps_keep_an_all_known_mask_a_broadcast(kind: str, lanes: int, width: int) -> None:
    """A Narrow or Widen step (``plan.LaneConfig.apply``) of an all-known mask is an all-known broadcast of the
    shape the step gives any array; a mask with an unknown lane, and every value array, go through unchanged."""
    m = AxisSet(L=lanes).m
    step = LaneConfig(kind, m["1"], m["L"])
    rng = np.random.default_rng(lanes)
    shape = (1, 2, 3, 4, width)
    for mask in (np.ones(shape, dtype=bool), known_everywhere(shape), rng.random(shape) < 0.8):
        got = step.apply(mask)
        want = np.pad(mask, [(0, 0)] * 4 + [(0, lanes - width)]) if kind == "pad" else \
            np.ascontiguousarray(mask[..., :lanes]) if kind == "trim" else np.reshape(mask, (1, 2, 3, -1, lanes))
        assert got.shape == want.shape and np.array_equal(got, want)
        assert is_everywhere(got) == (kind != "pad" and bool(want.all()))
    vals = rng.integers(0, 9, size=shape)
    assert np.array_equal(step.apply(vals), step.apply(vals.copy()))


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 6), n=st.integers(1, 40), big=st.booleans(), seed=st.integers(0, 999))
def test_saturating_sum_is_the_step_by_step_fold(rows: int, n: int, big: bool, seed: int) -> None:
    """i32 ``AddSat`` over a ring of any length (``arith.sequential_reduce``: step by step over all rows for a
    short one, int64 sums and a replay of the saturating rows for a long one) is the fold that saturates at
    every step, from 0."""
    rng = np.random.default_rng(seed)
    hi = 2**31 if big else 2**20
    x = rng.integers(-hi, hi, size=(rows, n), dtype=np.int64).astype(np.int32)
    want = np.zeros(rows, dtype=np.int64)
    for k in range(n):
        want = np.clip(want + x[:, k], -(2**31), 2**31 - 1)
    assert arith.sequential_reduce("AddSat", "i32", x).tolist() == want.tolist()


@settings(max_examples=80, deadline=None)
@given(outer=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 6)), max_size=2), run=st.integers(1, 24),
       unit=st.sampled_from([1, 2, 4, 8]), d_off=st.integers(0, 9), s_off=st.integers(0, 9),
       fill=st.booleans(), seed=st.integers(0, 999))
def test_dma_copy_by_words_is_the_copy_by_bytes(outer: list[tuple[int, int]], run: int, unit: int, d_off: int,
                                                s_off: int, fill: bool, seed: int) -> None:
    """A DMA's strided copy a word at a time (``transfer._assign``: 8-, 4- or 2-byte words when the runs and
    strides allow, unaligned too) writes the bytes the copy a byte at a time writes."""
    rng = np.random.default_rng(seed)
    shape = (*(n for n, _ in outer), run)
    span = run
    strides: list[int] = []
    for n, gap in reversed(outer):  # each outer loop steps past the inner ones (no byte written twice)
        step = -(-(span + gap) // unit) * unit
        strides.insert(0, step)
        span = step * (n - 1) + span
    src = rng.integers(0, 256, size=span + s_off + 8, dtype=np.uint8)
    got = rng.integers(0, 256, size=span + d_off + 8, dtype=np.uint8)
    want = got.copy()
    st_ = (*strides, 1)
    transfer._assign(got, d_off, st_, None if fill else src, s_off, st_, shape)
    transfer._view(want, d_off, shape, st_)[...] = 1 if fill else transfer._view(src, s_off, shape, st_)
    assert np.array_equal(got, want)


def test_a_refusal_looks_its_code_up_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal records where it was built and looks its catalogue code up only when ``code`` is read (a
    refusal a planner catches parses no source file); the code is the one the raise site has, also after
    pickling, and ``str()`` shows it."""
    import pickle

    import visa.diagnostics as diagnostics

    calls: list[tuple[str, int]] = []
    real = diagnostics.code_at

    def counting(filename: str, line: int, cls: str) -> str | None:
        calls.append((filename, line))
        return real(filename, line, cls)

    monkeypatch.setattr(diagnostics, "code_at", counting)
    m = AxisSet(A=8).m
    with pytest.raises(VisaError) as err:
        place_dm(Context(), np.arange(8), i8, m["1"], m["1 # 2"], m["1 # 4"], m["A"], 0)  # Slice size: refused
    assert not calls  # built and raised, not yet looked up
    code = err.value.code
    assert calls and code != type(err.value).code and code.startswith("V")
    assert f"[{code}]" in str(err.value) and pickle.loads(pickle.dumps(err.value)).code == code


HOLD_AX = AxisSet(A=4, B=6, C=2)
HOLD_CASES = [  # (levels, axes order): the array's own order, other orders, padding, split axes
    (("A", "B", "C"), "A B C"),
    (("A", "B, C"), "A B C"),
    (("B", "A", "C"), "A B C"),
    (("A", "1 # 2", "B", "C"), "A B C"),
    (("A / 2", "A % 2, B", "C"), "A B C"),
    (("A / 2", "A % 2", "B, C"), "A B C"),
    (("C", "A, B"), "C A B"),
    (("A", "B # 8", "C"), "A B C"),
]


@pytest.mark.parametrize("case", range(len(HOLD_CASES)))
def test_hold_in_the_arrays_own_order_is_the_general_hold(monkeypatch: pytest.MonkeyPatch, case: int) -> None:
    """``testing.hold`` of levels that lay the axes out in the array's own order, unpadded (a reshape), gives the
    values and validity the position-by-position path gives, for those levels and for others."""
    levels, order = HOLD_CASES[case]
    m = HOLD_AX.m
    maps = [m[t] for t in levels]
    x = np.random.default_rng(case).integers(-100, 100, size=tuple(HOLD_AX.m[a].size for a in order.split()))
    calls: list[int] = []
    general = testing._held_index
    with monkeypatch.context() as mp:
        mp.setattr(testing, "_held_index", lambda *a: calls.append(1) or general(*a))
        got = testing.hold(x, i32, maps, order)
    assert (not calls) == (case in (0, 1, 4, 5, 6))  # the array's own order (split or not): no index built
    monkeypatch.setattr(testing, "symbol", lambda name, size: symbol(name + "_", size))  # never the same layout
    want = testing.hold(x, i32, maps, order)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert got[0].dtype == want[0].dtype and not np.shares_memory(got[0], x)
