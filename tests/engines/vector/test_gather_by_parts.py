"""The Vector Engine's operand gather by parts (issue 15: a first launch located a VRF operand at every one of 4M
stream positions; the fast path ``vector.gather-by-parts``, ``fast_relayout.factored``, locates the slices and the
inner levels apart) against the location at every position (``plan_gather_full``, the reference): the same gather,
the same refusals with the same messages, and applying it reads the same values and known-mask (L4977–4984,
L5052–5081); and the fast path ``vector.gather-view`` (a strided view of the source) reads what the gather reads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import needs
from visa import fastpaths
from visa.engines.vector import fast_relayout
from visa.engines.vector.relayout import apply_gather, gather_view, plan_gather, plan_gather_full
from visa.errors import VisaError
from visa.mapping import AxisSet, Mapping
from visa.memory.known import is_everywhere, known_everywhere

SIZES = {"A": 4, "B": 6, "C": 2}


def _pieces(draw: st.DrawFn, axes: list[str]) -> list[str]:
    out = []
    for a in axes:
        n = SIZES[a]
        k = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
        out += [a] if k in (1, n) else [f"{a} / {k}", f"{a} % {k}"]
    return out


def _level(draw: st.DrawFn, items: list[str], m: Any) -> Mapping:
    text = ", ".join(items) if items else "1"
    pad = draw(st.sampled_from([0, 0, 1, 3]))
    size = m[text].size
    return m[f"[{text}] # {size + pad}"] if pad else m[text]


@st.composite
def _gather_case(draw: st.DrawFn) -> tuple[tuple[Mapping, ...], tuple[Mapping, ...]]:
    """Five stream levels over some of A, B, C (split, spread over the levels, padded), and a source whose
    Chip, Cluster and Slice are usually the stream's and whose Element holds some axes (a few sources hold an
    axis the stream lacks, miss one it needs, or put an index in another slice)."""
    m = AxisSet(**SIZES).m
    used = draw(st.lists(st.sampled_from(sorted(SIZES)), min_size=1, max_size=3, unique=True))
    pieces = _pieces(draw, used)
    order = draw(st.permutations(pieces))
    spots = [draw(st.integers(0, 4)) for _ in order]
    levels = tuple(_level(draw, [p for p, s in zip(order, spots, strict=True) if s == k], m) for k in range(5))
    lead = list(levels[:3])
    if draw(st.integers(0, 5)) == 0:  # another slice layout: refused unless it happens to agree
        k = draw(st.integers(0, 2))
        lead[k] = draw(st.sampled_from([m["1"], m["A"], m["B / 2"], m["[C] # 3"]]))
    lead_axes = frozenset().union(*(x.axes for x in lead))
    rest = [a for a in sorted(SIZES) if a not in lead_axes]
    held = draw(st.lists(st.sampled_from(rest), unique=True)) if rest else []
    # an axis cut between the slice levels and Time/Packet (N / r on Slice, N % r along Time): the source's Element
    # often holds the stream's inner pieces of it, all or some of them (h40h, vector.gather-by-parts)
    inner = [p for p, k in zip(order, spots, strict=True) if k >= 3 and p.split(" ")[0] in lead_axes]
    if inner and draw(st.booleans()):
        held = draw(st.permutations(inner))[: draw(st.integers(max(0, len(inner) - 1), len(inner)))] + held
    element = _level(draw, [a for a in held] or ["1"], m)
    return (*lead, element), levels


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        g = fn(*args)
    except VisaError as err:
        return type(err).__name__, (err.describe(), err.call, err.level, err.mapping, err.axis, err.fix)
    shape = tuple(m.size for m in args[0])
    rng = np.random.default_rng(len(shape))
    vals = rng.integers(0, 1000, size=shape)
    read = []
    for kn in (rng.random(shape) < 0.7, known_everywhere(shape)):
        v, k = apply_gather(g, vals, kn)  # read only where used
        read.append((np.where(g.used, v, 0), np.asarray(k & g.used)))
    return "ok", (np.asarray(g.index).copy(), np.asarray(g.used).copy(), read)


def _assert_reference_gather(source: tuple[Mapping, ...], stream: tuple[Mapping, ...]) -> None:
    """The gather planned (by parts when the path takes it; a fresh plan) is the location at every position's:
    the same refusal, or the same index and used mask and the same values and known-mask read."""
    plan_gather.cache_clear()  # type: ignore[attr-defined]
    kind, got = _outcome(plan_gather, source, stream, "vector_fxp", "VRF operand")
    want_kind, want = _outcome(plan_gather_full, source, stream, "vector_fxp", "VRF operand")
    assert kind == want_kind, (kind, want_kind)
    if kind == "ok":
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        for (v, k), (v0, k0) in zip(got[2], want[2], strict=True):
            assert np.array_equal(v, v0) and np.array_equal(k, k0)
    else:
        assert got == want


@settings(max_examples=300, deadline=None)
@given(_gather_case())
def test_gather_by_parts_is_the_gather_at_every_position(case: tuple[tuple[Mapping, ...], tuple[Mapping, ...]]
                                                         ) -> None:
    source, stream = case
    plan_gather.cache_clear()  # type: ignore[attr-defined]
    kind, got = _outcome(plan_gather, source, stream, "vector_fxp", "VRF operand")
    want_kind, want = _outcome(plan_gather_full, source, stream, "vector_fxp", "VRF operand")
    assert kind == want_kind, (kind, want_kind, got if kind != "ok" else want)
    if kind == "ok":
        assert np.array_equal(got[1], want[1])
        assert np.array_equal(got[0], want[0])
        for (v, k), (v0, k0) in zip(got[2], want[2], strict=True):
            assert np.array_equal(v, v0) and np.array_equal(k, k0)
    else:
        assert got == want


def test_a_vrf_operand_broadcast_over_a_long_stream_is_located_once_per_slice() -> None:
    """The case that cost a first launch 150 ms at 2M positions: located over the 512 slices and the 4096 inner
    positions apart, and applied as one read a slice, broadcast."""
    needs("vector.gather-by-parts")
    m = AxisSet(R=512, C=4096).m
    stream = (m["1"], m["R / 256"], m["R % 256"], m["C / 8"], m["C % 8"])
    source = (m["1"], m["R / 256"], m["R % 256"], m["1 # 8"])
    assert fast_relayout.factored(source, stream, frozenset({"R"})) is not None
    g = plan_gather(source, stream, "vector_fxp", "VRF operand")
    assert g.explicit is None and g.inner is not None and g.inner.shape == (512, 8) and g.inner_size == 8
    assert int(g.index[0, 1, 3, 7, 5]) == (1 * 256 + 3) * 8
    vals = np.arange(512 * 8).reshape(1, 2, 256, 8)
    v, k = apply_gather(g, vals, known_everywhere(vals.shape))
    assert v.shape == (1, 2, 256, 512, 8) and v.strides[3:] == (0, 0) and is_everywhere(k)
    assert int(v[0, 1, 3, 7, 5]) == (1 * 256 + 3) * 8


@settings(max_examples=60, deadline=None)
@given(_gather_case(), st.booleans())
def test_the_paths_off_give_the_reference_gather_and_the_view_reads_it(
        case: tuple[tuple[Mapping, ...], tuple[Mapping, ...]], by_parts: bool) -> None:
    """With ``vector.gather-by-parts`` off, ``plan_gather`` is the location at every position (the cache keeps the
    two apart); ``gather_view`` (``vector.gather-view``) reads at every position what ``apply_gather`` reads, and
    nothing with the path off."""
    source, stream = case
    with fastpaths.disabled() if not by_parts else fastpaths.disabled("vector.gather-view"):
        kind, got = _outcome(plan_gather, source, stream, "vector_fxp", "VRF operand")
    want_kind, want = _outcome(plan_gather_full, source, stream, "vector_fxp", "VRF operand")
    assert kind == want_kind
    if kind != "ok":
        return
    g = plan_gather(source, stream, "vector_fxp", "VRF operand")
    shape = tuple(m.size for m in source)
    vals = np.random.default_rng(3).integers(0, 1000, size=shape)
    known = known_everywhere(shape)
    with fastpaths.disabled("vector.gather-view"):
        assert gather_view(g, vals, known) is None
    view = gather_view(g, vals, known)
    if view is not None:
        v, k, split = view
        ref_v, ref_k = apply_gather(g, vals, known)
        assert np.array_equal(np.broadcast_to(v, split).reshape(ref_v.shape), ref_v)
        assert bool(np.all(k)) and bool(np.all(ref_k))


SPLIT = AxisSet(N=64, H=8, M=60, K=62)


@pytest.mark.parametrize(("stream", "element", "parts"), [
    # the tokens of a slice along Time, one scale each (bench_heldout4's quantisation, small): by parts
    (("1", "N / 32", "N % 32 / 4", "N % 4, H / 4", "H % 4"), "N % 4, 1 # 2", True),
    (("1", "N / 32", "N % 32 / 4", "H / 4, N % 4", "H % 4"), "N % 4 # 8", True),
    (("1", "N / 32", "N % 32 / 2", "H / 4, N % 2", "H % 4"), "N % 2, H", True),
    # the Element lacks a digit the stream walks: refused, as at every position
    (("1", "N / 32", "N % 32 / 4", "N % 4, H / 4", "H % 4"), "N % 2, 1 # 4", False),
    (("1", "N / 32", "N % 32 / 4", "N % 4, H / 4", "H % 4"), "1 # 8", False),
    # the inner digit above a slice digit, and a cut that does not divide the axis: located at every position
    (("1", "N / 32", "N % 4 # 8", "N % 32 / 4, H / 4", "H % 4"), "N % 32 / 4", False),
    (("1", "[K # 64] / 32", "[K # 64] % 32 / 4", "[K # 64] % 4, H / 4", "H % 4"), "[K # 64] % 4, 1 # 2", False),
    # a padded axis the inner cut divides: by parts (a slice part and an inner part never add past it)
    (("1", "[M # 64] / 32", "[M # 64] % 32 / 4", "M % 4, H / 4", "H % 4"), "M % 4, 1 # 2", True),
])
def test_an_axis_cut_between_slices_and_time_is_located_by_parts(stream: tuple[str, ...], element: str,
                                                                 parts: bool) -> None:
    """An axis whose digits the slice levels and Time/Packet share (``N / r`` on Slice, ``N % r`` along Time) is
    located by parts when its inner digits lie below the slice digits and divide the axis (h40h): the same gather
    or the same refusal as the location at every position."""
    m = SPLIT.m
    lv = tuple(m[t] for t in stream)
    source = (*lv[:3], m[element])
    src_axes = frozenset().union(*(x.axes for x in source))
    if fastpaths.get("vector.gather-by-parts").on:  # (what the path takes; the outcome is checked either way)
        assert (fast_relayout.factored(source, lv, src_axes) is not None) == parts
    _assert_reference_gather(source, lv)


@st.composite
def _cut_case(draw: st.DrawFn) -> tuple[tuple[Mapping, ...], tuple[Mapping, ...]]:
    """An axis N cut between the slice levels (``N / r``, maybe over Cluster and Slice) and Time/Packet (``N % r``,
    maybe cut again), with H along Time/Packet; the source keeps the stream's slices and holds some of N's inner
    pieces (all, the lower ones, none), maybe H, maybe padded."""
    n = draw(st.sampled_from([8, 12, 16, 24]))
    m = AxisSet(N=n, H=4).m
    r = draw(st.sampled_from([d for d in range(2, n) if n % d == 0]))
    half = n // 2
    if half % r == 0 and draw(st.booleans()):
        lead = (m["1"], m[f"N / {half}"], m[f"N % {half} / {r}"])
    else:
        lead = (m["1"], m["1"], m[f"N / {r}"])
    cut = [f"N % {r}"]
    if r % 2 == 0 and r > 2 and draw(st.booleans()):
        cut = [f"N % {r} / 2", "N % 2"]
    items = draw(st.permutations([*cut, "H / 2", "H % 2"]))
    k = draw(st.integers(0, len(items)))
    time, packet = ", ".join(items[:k]) or "1", ", ".join(items[k:]) or "1"
    held = draw(st.sampled_from([cut, cut[-1:], [], [f"N % {r}"]]))
    if draw(st.booleans()):
        held = [*held, draw(st.sampled_from(["H", "H / 2", "H % 2"]))]
    element = ", ".join(draw(st.permutations(held))) or "1"
    pad = draw(st.sampled_from([0, 0, 2]))
    size = m[element].size
    source = (*lead, m[f"[{element}] # {size + pad}"] if pad else m[element])
    return source, (*lead, m[time], m[packet])


@settings(max_examples=200, deadline=None)
@given(_cut_case())
def test_an_axis_cut_between_slices_and_time_gives_the_reference_gather(
        case: tuple[tuple[Mapping, ...], tuple[Mapping, ...]]) -> None:
    """By parts or not, the same gather (or the same refusal) as the location at every position."""
    source, stream = case
    _assert_reference_gather(source, stream)


@pytest.mark.parametrize(("sizes", "stream", "element"), [
    # overlapping inner digits: N % 4 in Time and N % 2 in Packet reach 3 + 1 = 4, past the slice step 4
    (dict(N=12, H=2), ("1", "1", "N / 4", "N % 4", "N % 2"), "N % 4, N % 2"),
    (dict(N=12, H=2), ("1", "N / 6", "N / 4 % 3", "N % 4", "1"), "N % 4"),
    (dict(N=6, H=2), ("1", "N / 3", "N / 2 # 5", "1", "1"), "H, N % 2 # 5"),
    # slice strides 6 and 8 (not multiples of the least): a slice part plus an inner part reaches padding
    (dict(N=24, H=1), ("1", "N / 6", "N / 8", "1", "N / 3 % 2"), "N / 3 % 2"),
    (dict(N=18, H=1), ("1", "N / 2 % 3", "N / 3 % 2", "N % 2", "N / 18"), "N % 2, N / 18"),
    (dict(N=18, H=3), ("1", "N / 9", "N / 6", "N / 2 % 3, H", "1"), "N / 2 % 3, H"),
])
def test_digits_that_carry_are_not_located_by_parts(sizes: dict[str, int], stream: tuple[str, ...],
                                                     element: str) -> None:
    """Splits whose slice and inner parts carry (found by a review's digit fuzzer: the path accepted reads the
    reference refuses, or marked stream padding as read): the same outcome as the location at every position."""
    m = AxisSet(**sizes).m
    levels = tuple(m[t] for t in stream)
    source = (*levels[:3], m[element])
    _assert_reference_gather(source, levels)
