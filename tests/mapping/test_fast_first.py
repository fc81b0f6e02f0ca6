"""``sequencer.first-plain`` (visa/mapping/fast_first.py): whether a position of a mapping holds an index, read from
its plain digits in Python, is the reference's ``forward(...).valid`` (L596–620, L711) at every position of random
mappings (and past their ends), and at position 0 of random (time, packet) pairs from the digits of both (the
pair's canonical form not built); digits that are not plain answer None.  And the sequencer derivations of the
mapping tests give the same configurations and refusals with the path on and off (tests/mapping/test_sequencer.py,
run with it off by the suite's reference run)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mapping.strategies import Axes, Expr, axes_and_expr, axis_set
from visa.errors import VisaError
from visa.mapping import pair_of
from visa.mapping.evaluate import forward
from visa.mapping.fast_first import valid_at


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axes_and_expr(max_size=300))
def test_valid_at_is_the_references(case: tuple[Axes, Expr]) -> None:
    axes, e = case
    try:
        mapping = axis_set(axes).m[e.text]
        want = np.asarray(forward(mapping.canon, np.arange(-2, mapping.size + 3, dtype=np.int64)).valid)
    except VisaError:
        return  # (a linear combination: forward refuses it; the path answers None there)
    for k, p in enumerate(range(-2, mapping.size + 3)):
        got = valid_at(mapping.canon, p)
        assert got is None or got == bool(want[k]), (e.text, p)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axes_and_expr(max_size=200), axes_and_expr(max_size=60), st.booleans())
def test_the_first_position_of_a_pair_is_the_references(time: tuple[Axes, Expr], packet: tuple[Axes, Expr],
                                                        same_axes: bool) -> None:
    t_axes, t_e = time
    p_axes, p_e = packet
    try:
        t = axis_set(t_axes).m[t_e.text]
        p = (axis_set(t_axes) if same_axes else axis_set(p_axes)).m[p_e.text if not same_axes else t_e.text]
        want = bool(forward(pair_of(t, p).canon, np.zeros(1, dtype=np.int64)).valid[0])
    except VisaError:
        return
    got = valid_at((*t.canon, *p.canon), 0)
    assert got is None or got == want, (t_e.text, p_e.text)


def test_plain_digits_are_answered() -> None:
    from visa import AxisSet

    m = AxisSet(A=12, B=5).m
    assert valid_at(m["A, B"].canon, 0) is True
    assert valid_at(m["A # 16"].canon, 13) is False  # (padding)
    assert valid_at(m["A # 16"].canon, 16) is False  # (past the end)
    assert valid_at(m["A / 4, 1 # 2, A % 4"].canon, 4) is False
