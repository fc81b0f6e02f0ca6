"""``vector.inter-plan-digits`` (visa/engines/vector/fast_inter_plan.py) against the Inter-Slice Block's reference
plan (issue 24): field by field the same configuration (members in ring order, each output position's group,
ring size, reduced and broadcast axes) with the path on and off, for reductions over slices and time steps
(L6603–6653), results broadcast over new axes (L6654–6672) or left on a dummy's first slice (L6636–6653),
promotion from Time into Slice (L6673–6697), an axis split over Slice, Time and Packet (the first-launch ring sum),
padded axes; the same refusal for layouts that lose or invent an index; and the plain layouts do take the path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, fastpaths, i32
from visa.engines.common import StreamLayout
from visa.engines.vector import InterSliceReduceOpI32, fast_inter_plan, fast_row_classes
from visa.engines.vector.inter import InterReduceConfig, plan_inter_reduce
from visa.errors import VisaError

#: (cluster, slice, time, packet, slice2, time2)
LAYOUTS = [
    ("1 # 2", "G, R", "T", "L", "G, X", "T"),  # broadcast over a new slice axis
    ("1 # 2", "G, R", "T", "L", "G, 1 # {r}", "T"),  # the sum on the group's first slice
    ("C", "R, G", "T", "L", "1 # {r}, G", "T"),  # the ring outermost, two clusters
    ("1 # 2", "G, R", "U, T", "L", "G, 1 # {r}", "T"),  # over slices and time steps
    ("1 # 2", "G, R", "T", "L", "G, X", "U, T"),  # broadcast over a new time axis too
    ("1 # 2", "A % 4 / 2, R", "A / 4", "A % 2 # 8", "A % 4 / 2, 1 # {r}", "A / 4"),  # A split over three levels
    ("1 # 2", "G, R", "U, T", "L", "G, U, 1 # {r}", "T"),  # promotion of U from Time into Slice
    ("1 # 2", "G # 3, R", "T", "L", "G # 3, 1 # {r}", "T"),  # padded G
    ("1 # 2", "R, G", "T", "L", "G, 1 # {r}", "T"),  # the group digit moves
    ("1 # 2", "G, R", "T", "L", "G, 1 # {r}", "T / 2"),  # loses half of T: refused
    ("1 # 2", "G, R", "T", "L", "G # 4, 1 # {r}", "T, X # 2"),  # X is new (broadcast) but padded
]


def _fields(cfg: InterReduceConfig) -> tuple[object, ...]:
    return (cfg.op, cfg.dtype, cfg.out, cfg.reduced, cfg.broadcast, cfg.ring, cfg.full)


def _plan(layout: tuple[str, ...], g: int, r: int, t: int) -> InterReduceConfig | VisaError:
    ax = AxisSet(G=g, R=r, X=r, T=t, U=2, L=8, C=2, A=4 * t)
    m = ax.m
    cl, sl, tm, pk, s2, t2 = (text.format(r=r) for text in layout)
    lay = StreamLayout(i32, m["1"], m[cl], m[sl], m[tm], m[pk])
    try:
        return plan_inter_reduce(RNGD, lay, InterSliceReduceOpI32.Add, m[s2], m[t2])
    except VisaError as e:
        return e


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(LAYOUTS), st.sampled_from([1, 2, 3]), st.sampled_from([2, 4]), st.sampled_from([2, 4, 6]))
def test_digit_plans_are_the_reference(layout: tuple[str, ...], g: int, r: int, t: int) -> None:
    with fastpaths.only("vector.inter-plan-digits"):
        fast = _plan(layout, g, r, t)
    with fastpaths.disabled("vector.inter-plan-digits"):
        ref = _plan(layout, g, r, t)
    if isinstance(ref, VisaError):
        assert type(fast) is type(ref) and str(fast) == str(ref)
        return
    assert isinstance(fast, InterReduceConfig)
    assert _fields(fast) == _fields(ref)
    for a, b in ((fast.members, ref.members), (fast.out_group, ref.out_group)):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("layout", LAYOUTS[:9])
def test_plain_layouts_take_the_path(layout: tuple[str, ...]) -> None:
    ax = AxisSet(G=2, R=4, X=4, T=4, U=2, L=8, C=2, A=16)
    m = ax.m
    cl, sl, tm, pk, s2, t2 = (text.format(r=4) for text in layout)
    src = (m["1"], m[cl], m[sl], m[tm], m[pk])
    dst = (m["1"], m[cl], m[s2], m[t2], m[pk])
    ins = frozenset().union(*(x.axes for x in src))
    outs = frozenset().union(*(x.axes for x in dst))
    assert fast_inter_plan.groups(src, dst, sorted(ins & outs)) is not None


def test_a_layout_losing_an_index_takes_the_reference() -> None:
    ax = AxisSet(G=2, R=4, T=4, L=8)
    m = ax.m
    src = (m["1"], m["1 # 2"], m["G, R"], m["T"], m["L"])
    dst = (m["1"], m["1 # 2"], m["G, 1 # 4"], m["T / 2"], m["L"])
    assert fast_inter_plan.groups(src, dst, ["G", "L", "T"]) is None


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(LAYOUTS), st.sampled_from([1, 2, 3]), st.sampled_from([2, 4]), st.sampled_from([2, 4, 6]))
def test_row_labels_give_numpys_row_classes(layout: tuple[str, ...], g: int, r: int, t: int) -> None:
    """``vector.inter-row-labels``: where the plan labels the output rows, one row per label sorted and ranked
    (``fast_row_classes.from_labels``) is ``np.unique(rows, axis=0, return_inverse=True)`` of the group array."""
    with fastpaths.only("vector.inter-plan-digits", "vector.inter-row-labels"):
        cfg = _plan(layout, g, r, t)
    if isinstance(cfg, VisaError) or cfg.labels is None:
        return
    rows = cfg.out_group.reshape(int(np.prod(cfg.out_group.shape[:3])), -1)
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    got = fast_row_classes.from_labels(rows, cfg.labels)
    assert np.array_equal(got[0], uniq) and np.array_equal(got[1], inverse.reshape(-1))
    # the labels are the rows' constants: their order is np.unique's, the rows read off the digits
    got = fast_row_classes.from_row_constants(cfg.out_rows, cfg.labels)
    assert np.array_equal(got[0], uniq) and np.array_equal(got[1], inverse.reshape(-1))


def test_the_first_launch_ring_sum_labels_its_rows() -> None:
    """The first-launch ring sum's layout (A split over Slice, Time and Packet; the sum on each group's first
    slice, ``1 # 4``): 512 rows in 65 classes, labelled from the digits when the path is on."""
    ring = AxisSet(R=4, A=1 << 18)
    m = ring.m
    lay = StreamLayout(i32, m["1"], m["1 # 2"], m["A % 512 / 8, R"], m["A / 512"], m["A % 8"])
    with fastpaths.only("vector.inter-plan-digits", "vector.inter-row-labels"):
        on = fast_inter_plan.LABELS.on and fast_inter_plan.DIGITS.on
        cfg = plan_inter_reduce(RNGD, lay, InterSliceReduceOpI32.AddSat, m["A % 512 / 8, 1 # 4"], m["A / 512"])
    rows = cfg.out_group.reshape(512, -1)
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    assert uniq.shape[0] == 65
    if on:
        assert cfg.labels is not None
        got = fast_row_classes.from_labels(rows, cfg.labels)
        assert np.array_equal(got[0], uniq) and np.array_equal(got[1], inverse.reshape(-1))
        got = fast_row_classes.from_row_constants(cfg.out_rows, cfg.labels)
        assert np.array_equal(got[0], uniq) and np.array_equal(got[1], inverse.reshape(-1))


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(LAYOUTS), st.sampled_from([1, 2, 3]), st.sampled_from([2, 4]), st.sampled_from([2, 4, 6]),
       st.integers(0, 2**32 - 1))
def test_rows_and_validity_from_the_digits_are_the_group_arrays(layout: tuple[str, ...], g: int, r: int, t: int,
                                                                 seed: int) -> None:
    """``InterReduceConfig.out_rows`` / ``out_valid`` (the digits' :meth:`Groups.out_rows` / :meth:`Groups.out_valid`
    with the paths on, the group array's rows and ``>= 0`` without them): the same arrays as the reference plan's
    ``out_group`` read so, for any rows in any order (the row classes and the strided views read those, not the
    whole group array)."""
    with fastpaths.disabled("vector.inter-plan-digits"):
        ref = _plan(layout, g, r, t)
    if isinstance(ref, VisaError):
        return
    rows_ref = ref.out_group.reshape(int(np.prod(ref.out_group.shape[:3])), -1)
    pick = np.random.default_rng(seed).integers(0, rows_ref.shape[0], size=5)
    for cfg in (_plan(layout, g, r, t), ref):
        assert isinstance(cfg, InterReduceConfig)
        got = cfg.out_rows(pick)
        assert got.dtype == np.int64 and np.array_equal(got, rows_ref[pick])
        valid = cfg.out_valid()
        assert valid.shape == ref.out_group.shape and np.array_equal(valid, ref.out_group >= 0)


def test_the_first_launch_ring_sum_rows_from_the_digits() -> None:
    """The first-launch ring sum's layout: every row and the validity from the digits are the group array's."""
    ring = AxisSet(R=4, A=1 << 18)
    m = ring.m
    lay = StreamLayout(i32, m["1"], m["1 # 2"], m["A % 512 / 8, R"], m["A / 512"], m["A % 8"])
    cfg = plan_inter_reduce(RNGD, lay, InterSliceReduceOpI32.AddSat, m["A % 512 / 8, 1 # 4"], m["A / 512"])
    og = cfg.out_group
    every = np.arange(512)[::-1]
    assert np.array_equal(cfg.out_rows(every), og.reshape(512, -1)[every])
    assert np.array_equal(cfg.out_valid(), og >= 0)
