"""The Vector Engine's operand gather on compact arrays (issue 15: a first launch located a VRF operand at every
one of 4M stream positions) against the evaluation at every position (``plan_gather_full``, the old path):
the same gather, the same refusals with the same messages (L4977–4984, L5052–5081)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa.engines.vector.relayout import compact_eval, joint_eval, plan_gather, plan_gather_full, regroup
from visa.errors import VisaError
from visa.mapping import AxisSet, Mapping


@st.composite
def _regroup_case(draw: st.DrawFn) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]:
    digits = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4, 6, 8]), min_size=1, max_size=4)))
    total = int(np.prod(digits))
    levels: list[int] = []
    rest = total
    while rest > 1 and len(levels) < 4:
        n = draw(st.sampled_from([d for d in range(1, rest + 1) if rest % d == 0]))
        levels.append(n)
        rest //= n
    levels.append(rest)
    if draw(st.booleans()):
        levels.insert(draw(st.integers(0, len(levels))), 1)
    varies = draw(st.lists(st.booleans(), min_size=len(digits), max_size=len(digits)))
    shape = tuple(d if v else 1 for d, v in zip(digits, varies, strict=True))
    arr = np.arange(int(np.prod(shape))).reshape(shape)
    return arr, digits, tuple(levels)


@settings(max_examples=150, deadline=None)
@given(_regroup_case())
def test_regroup_is_the_broadcast_reshape_kept_compact(case: tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]
                                                       ) -> None:
    arr, digits, levels = case
    got = regroup(arr, digits, levels)
    want = np.broadcast_to(arr, digits).reshape(levels)
    if got is None:  # only when the factorisations do not nest
        return
    assert got.ndim == len(levels)
    assert all(g in (1, n) for g, n in zip(got.shape, levels, strict=True))
    assert np.array_equal(np.broadcast_to(got, levels), want)
    for k, n in enumerate(levels):  # compact: size 1 along every level over which the values do not vary
        if got.shape[k] == n and n > 1:
            assert not (np.diff(want, axis=k) == 0).all()


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
    element = _level(draw, [a for a in held] or ["1"], m)
    return (*lead, element), levels


def _outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    try:
        g = fn(*args)
    except VisaError as err:
        return type(err).__name__, (err.describe(), err.call, err.level, err.mapping, err.axis, err.fix)
    return "ok", (np.broadcast_to(g.index, g.used.shape).copy(), np.asarray(g.used).copy())


@settings(max_examples=300, deadline=None)
@given(_gather_case())
def test_compact_gather_is_the_gather_at_every_position(case: tuple[tuple[Mapping, ...], tuple[Mapping, ...]]
                                                        ) -> None:
    source, stream = case
    plan_gather.cache_clear()  # type: ignore[attr-defined]
    kind, got = _outcome(plan_gather, source, stream, "vector_fxp", "VRF operand")
    want_kind, want = _outcome(plan_gather_full, source, stream, "vector_fxp", "VRF operand")
    assert kind == want_kind, (kind, want_kind, got if kind != "ok" else want)
    if kind == "ok":
        assert np.array_equal(got[1], want[1])
        assert np.array_equal(got[0], want[0])
    else:
        assert got == want


@settings(max_examples=100, deadline=None)
@given(_gather_case())
def test_compact_eval_broadcasts_to_the_joint_evaluation_where_valid(
        case: tuple[tuple[Mapping, ...], tuple[Mapping, ...]]) -> None:
    _, stream = case
    shape = tuple(x.size for x in stream)
    got = compact_eval(stream)
    coords, valid = joint_eval(stream)
    assert got is not None  # splits of an axis always nest with the levels
    assert np.array_equal(np.broadcast_to(got[1], shape), valid)
    assert set(got[0]) == set(coords)
    for a, c in coords.items():  # compact coordinates are read only where the stream is valid
        assert np.array_equal(np.broadcast_to(got[0][a], shape)[valid], c[valid])


def test_a_vrf_operand_broadcast_over_a_long_stream_is_located_once_per_slice() -> None:
    """The case that cost a first launch 150 ms at 2M positions: the compact index varies only by slice."""
    m = AxisSet(R=512, C=4096).m
    stream = (m["1"], m["R / 256"], m["R % 256"], m["C / 8"], m["C % 8"])
    source = (m["1"], m["R / 256"], m["R % 256"], m["1 # 8"])
    coords, valid = compact_eval(stream) or ({}, None)
    assert coords["R"].shape == (1, 2, 256, 1, 1) and coords["C"].shape == (1, 1, 1, 512, 8)
    g = plan_gather(source, stream, "vector_fxp", "VRF operand")
    assert g.index.shape == (1, 2, 256, 512, 8) and g.index.strides[3:] == (0, 0)
    assert int(g.index[0, 1, 3, 7, 5]) == (1 * 256 + 3) * 8
