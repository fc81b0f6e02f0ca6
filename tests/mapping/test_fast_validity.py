"""``mapping.validity-memo`` (visa/mapping/fast_validity.py): a mapping's validity kept per exact key is the
reference's ``evaluate().valid`` (L616–620) for random mappings, asked again and again, on and off; the kept answer
is read-only; and two equivalent mappings of different exact keys (L1017–1028) keep their own answers."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from tests.mapping.strategies import Axes, Expr, axes_and_expr, axis_set
from visa import AxisSet, fastpaths
from visa.errors import VisaError
from visa.mapping.fast_validity import validity_of


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axes_and_expr(max_size=300))
def test_the_kept_validity_is_the_reference(case: tuple[Axes, Expr]) -> None:
    axes, e = case
    try:
        mapping = axis_set(axes).m[e.text]
        want = np.asarray(mapping.evaluate().valid, dtype=bool)
    except VisaError:
        return  # (a linear combination has no evaluate(): nothing to keep)
    for _ in range(2):  # (the second answer is the one kept)
        got = validity_of(mapping)
        assert got.dtype == np.bool_ and np.array_equal(got, want)
    with fastpaths.disabled("mapping.validity-memo"):
        off = validity_of(mapping)
    assert np.array_equal(off, want)
    if fastpaths.get("mapping.validity-memo").on:
        assert not got.flags.writeable  # (a shared answer)
    assert off.flags.writeable or off is not got


def test_equivalent_mappings_keep_their_own_answers() -> None:
    m = AxisSet(A=3, B=4).m
    padded, plain = m["A # 4"], m["A"]
    assert validity_of(padded).tolist() == [True, True, True, False]
    assert validity_of(plain).tolist() == [True, True, True]
    assert validity_of(m["A # 4"]).tolist() == [True, True, True, False]
