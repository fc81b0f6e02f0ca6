"""Review of issue 15 (docs/manual-notes.md, "Review of the skew, host-data and random changes"): the inverse
and the sequencer on mappings with skewed axes, checked against the forward evaluation, and hypothesis-found
defects pinned.

A skewed axis ``B' = B - A`` (manual L988) is resolved as ``B = (B' + A) mod |B|`` (L1003).
"""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, given, settings

from tests.mapping.reference import ref_map
from tests.mapping.strategies import Axes, Expr, axes_and_expr, axis_set
from visa import AxisSet
from visa.errors import IncompatibleShapesError, InsufficientInputError
from visa.mapping.sequencer import derive

EXAMPLES = int(os.environ.get("VISA_EXAMPLES", "100"))


def _held_table(m: object) -> dict[tuple[tuple[str, int], ...], list[int]]:
    from visa import Mapping
    assert isinstance(m, Mapping)
    table: dict[tuple[tuple[str, int], ...], list[int]] = {}
    for k in range(m.size):
        r = ref_map(m.node, k)
        if r is not None:
            table.setdefault(tuple(sorted(r.items())), []).append(k)
    return table


def test_position_of_reads_an_unset_skewing_axis_as_the_forward_map_does() -> None:
    """m["B'"] without A: the evaluator and the reference hold B = B' (A read as 0); the inverse ignored A as
    if A were broadcast and answered position 0 for (A=1, B=0), which holds (A=0, B=0)."""
    ax = AxisSet(A=2, B=2).skew("B'", "B - A")
    m = ax.m["B'"]
    assert [m.map(k) for k in range(2)] == [{}, {"B": 1}]
    assert m.position_of({"A": 0, "B": 1}) == 1
    assert m.position_of({"A": 1, "B": 0}) is None
    assert m.position_of({"A": 1, "B": 1}) is None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(axes_and_expr(max_size=200))
def test_position_of_is_the_brute_force_inverse(case: tuple[Axes, Expr]) -> None:
    """Every index in the box of the mapping's axes: position_of gives a position holding it, or None exactly
    when no position does."""
    axes, e = case
    m = axis_set(axes).m[e.text]
    table = _held_table(m)
    names = sorted(n for n in axes if "'" not in n and n in m.axes)
    for vals in itertools.product(*[range(int(axes[n])) for n in names]):  # type: ignore[call-overload]
        idx = dict(zip(names, vals, strict=True))
        got = m.position_of(idx)
        want = table.get(tuple(sorted((k, v) for k, v in idx.items() if v)))
        if want is None:
            assert got is None, (e.text, idx, got)
        else:
            assert got in want, (e.text, idx, got, want)


def test_sequencer_moves_the_skewed_axis_with_its_skewing_axis() -> None:
    """Buffer m["A', B"] with A' = A - B: streaming B (A = 0) visits positions 0 and 3; the per-atom rule
    read A' as an axis of its own and gave stride 1 (position 1 holds (A=1, B=1)), a silently wrong read."""
    ax = AxisSet(A=2, B=2).skew("A'", "A - B")
    buf = ax.m["A', B"]
    cfg = derive(buf, ax.m["1"], ax.m["B"])
    assert cfg.addresses().tolist() == [0, 3]
    assert [buf.map(int(p)) for p in cfg.addresses()] == [{}, {"B": 1}]
    with pytest.raises(IncompatibleShapesError):  # A then B visits 0, 3, 2, 1: no stride fits B
        derive(buf, ax.m["A"], ax.m["B"])


def test_sequencer_refuses_a_buffer_skewed_by_an_axis_it_does_not_hold() -> None:
    """m["B'"] without A: its positions hold B = (B' + A) mod |B| for an A it does not set; the strides would
    treat A as broadcast while the evaluator reads A = 0 — refused rather than configured."""
    ax = AxisSet(A=2, C=2, B=1).skew("B'", "B - C")
    with pytest.raises(IncompatibleShapesError) as err:
        derive(ax.m["B'"], ax.m["1"], ax.m["C"])
    assert err.value.axis == "C" and "skewed axis B'" in err.value.describe()


def test_sequencer_refuses_a_first_position_of_padding() -> None:
    """A stream asking no axis (m["1"]) of a buffer whose only position is padding (m["[# 1 + 1] / 2"]) was
    given base address 0, which holds no index; the per-atom check sees no atom to check."""
    ax = AxisSet(A=4)
    with pytest.raises(InsufficientInputError):
        derive(ax.m["[# 1 + 1] / 2"], ax.m["1"], ax.m["1"])
    with pytest.raises(InsufficientInputError):
        derive(ax.m["[[A, A], A, # 1 + 1 + # 2] = 200"], ax.m["1"], ax.m["1"])
