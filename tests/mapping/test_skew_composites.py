"""Skewed axes inside composites (issue 15): the two hypothesis-found defects, pinned (docs/manual-notes.md,
"Skewed axes inside composites").

A skewed axis ``B' = B - A`` is one coordinate of the tensor index (manual L988: "whose coordinate at any
point equals B minus A"); the indices of a pair's halves add coordinate by coordinate (``Index::add``, L711), so
every position of ``B'`` — from any digit, inside any composite — adds up first and ``B = (B' + A) mod |B|`` is
resolved once, over the whole index (L1003).
"""

from __future__ import annotations

import numpy as np

from tests.mapping.reference import ref_map
from visa import AxisSet, i
from visa.mapping import canon as C
from visa.mapping.evaluate import forward


def _skewed(**sizes: int) -> AxisSet:
    return AxisSet(**sizes).skew("B'", "B - A")


def _tree_and_canon_agree(ax: AxisSet, text: str) -> None:
    """The brute-force reading of the tree, the composite-preserving form and the canonical form map alike."""
    e = ax.m[text]
    raw, canon = forward(e.key), forward(e.canon)
    for k in range(e.size):
        want = ref_map(e.node, k)
        got = e.map(k)
        assert (None if got is None else dict(got)) == want, (text, k, str(e))
        for ev in (raw, canon):
            assert bool(ev.valid[k]) == (want is not None)
            if want is not None:
                assert {a: int(v[k]) for a, v in ev.coords.items() if v[k]} == want


def test_a_skewed_axis_in_two_composites_is_one_coordinate_L711_L988() -> None:
    # regression: `[A, B'] / 2` gives B' = 0 and `[B', A] / 2` gives B' = d1; the evaluator (and the reference)
    # resolved B = (B' + A) mod 2 once per composite and added the two Bs, so position 2 (A = 1, B' = 0 + 0)
    # got B = 1 + 1, out of range, and position 3 B = 1 + 0; the canonical form `A, B'` adds the B' positions
    # first: B = (0 + 1) mod 2 = 1 at position 2
    ax = _skewed(A=2, B=2, C=1)
    e = ax.m["[A, B'] / 2, [B', A] / 2"]
    assert str(e) == "A, B'"
    assert [e.map(k) for k in range(4)] == [i(), i(B=1), i(A=1, B=1), i(A=1)]
    for k in range(4):  # B' = B - A at every position (L988)
        got = e.map(k)
        assert got is not None and (got["B"] - got["A"]) % 2 == k % 2
    assert e == ax.m["A, B'"]
    _tree_and_canon_agree(ax, "[A, B'] / 2, [B', A] / 2")


def test_a_skewed_axis_in_a_composite_and_outside_adds_up_L711_L988() -> None:
    ax = _skewed(A=2, B=2)
    # B' outside a composite whose own B' is always 0: the composite adds A only, so the mapping is `B', A`
    e = ax.m["B', [A, B'] / 2"]
    assert e == ax.m["B', A"]
    assert [e.map(k) for k in range(4)] == [i(), i(A=1, B=1), i(B=1), i(A=1)]
    ax4 = _skewed(A=2, B=4)
    for text in ("B' % 2, [A, B'] / 2", "[B', A] / 4, [B' / 2, A] % 2", "[A, B'] / 4, [A, B'] % 2 / 2",
                 "[B' / 2, A] / 2, B' % 2", "[A, B' # 5] / 5, [B', A] / 2"):
        _tree_and_canon_agree(ax4, text)


def test_the_canonical_text_of_a_cut_skewed_digit_parses_back_to_the_same_canon() -> None:
    # regression: `B' = 2 / 2` over |B| = 3 is B' at stride 2, one digit: printed `B' # 4 / 2 % 1`, which parsed
    # back to a composite `[B' # 4] / 2 % 1` (position 0 of a composite holding B' was never cut, since B' = 0
    # still sets B = A)
    ax = _skewed(A=1, B=3)
    e = ax.m["B' = 2 / 2"]
    again = ax.m[str(e)]
    assert str(e) == "B' # 4 / 2 % 1"
    assert again.canon == e.canon and again == e
    assert not any(isinstance(d, C.Dim) and isinstance(d.atom, C.Win) for d in again.canon)
    assert e.map(0) == i()
    ax2 = _skewed(A=2, B=3)
    for text in ("B' = 2 / 2", "A, B' = 2 / 2", "[B' = 2 / 2, A]", "[B' # 4] / 2 % 1, A"):
        got = ax2.m[text]
        back = ax2.m[str(got)]
        assert back.canon == got.canon and back == got, text
        _tree_and_canon_agree(ax2, text)
        assert np.array_equal(forward(got.canon).valid, forward(got.key).valid)


def test_a_skewed_axis_spliced_next_to_itself_keeps_one_canon() -> None:
    # found by a fresh draw: `A', A' = 2 / 2` printed `A', A' # 4 / 2 % 1`, whose composite stayed whole when
    # parsed back (a skew spliced out of a composite next to another digit of the same skew was refused)
    ax = AxisSet(A=3, B=1).skew("A'", "A - B")
    e = ax.m["A', A' = 2 / 2"]
    assert [e.map(k) for k in range(3)] == [i(), i(A=1), i(A=2)]
    again = ax.m[str(e)]
    assert again.canon == e.canon and str(again) == str(e)
    _tree_and_canon_agree(ax, "A', A' = 2 / 2")


def test_a_resize_cut_again_passes_to_its_axis_as_a_modulo_does_L779_L887() -> None:
    # found by a fresh draw: the brute-force reference kept `A = 2` whole under `% 2` (a composite whose
    # positions add up before the resize decides), the canonical form read it as the axis A cut to 2, as it
    # reads `A % 2`; `A = 2` and `A % 2` are one mapping, so both now pass through to A
    ax = AxisSet(A=3)
    e = ax.m["A = 2 % 2, A = 2 % 2"]
    assert e == ax.m["A = 2, A = 2"] and str(ax.m[str(e)]) == str(e)
    assert [e.map(k) for k in range(4)] == [i(), i(A=1), i(A=1), i(A=2)]
    _tree_and_canon_agree(ax, "A = 2 % 2, A = 2 % 2")
    ax6 = AxisSet(A=6)
    assert [ax6.m["A = 4 / 2, A = 4 / 2"].map(k) for k in range(4)] == [i(), i(A=2), i(A=2), i(A=4)]
    _tree_and_canon_agree(ax6, "A = 4 / 2, A = 4 / 2")
    _tree_and_canon_agree(AxisSet(A=2, B=3), "[[A, B] = 4] / 2, [[A, B] = 4] / 2")


def test_a_skewed_axis_in_a_linear_combination_is_resolved_over_the_whole_index_L988_L1006() -> None:
    ax = _skewed(A=2, B=2)
    # found while looking: `maps` resolved B' term by term (B = B' with A = 0 in its own term), and a term of one
    # position holding B' = 0 was dropped with the identity's, so `$(B' = 1 : 2, A : 1)` read `A`
    lin = ax.m["$(A : 1, B' : 1)"]
    assert [lin.maps(k) for k in range(3)] == [[i()], [i(A=1, B=1), i(B=1)], [i(A=1)]]
    for k in range(3):  # B' = B - A in every index at every position (L988)
        assert all((x["B"] - x["A"]) % 2 == k - x["A"] for x in lin.maps(k))
    assert ax.m["$(A : 2, B' : 1)"] == ax.m["A, B'"]  # the mixed-radix combination is the pair (L1010)
    one = ax.m["$(B' = 1 : 2, A : 1)"]
    assert one == ax.m["B' = 1, A"] and [one.maps(k) for k in range(2)] == [[i()], [i(A=1, B=1)]]
    # the union of the terms' indices must lie inside every axis, as map()'s indices do
    assert [ax.m["$(A : 1, A : 1)"].maps(k) for k in range(3)] == [[i()], [i(A=1)], []]
    assert [ax.m["$(B' : 1, B' : 1)"].maps(k) for k in range(3)] == [[i()], [i(B=1)], []]


def test_a_stride_that_does_not_divide_a_composite_prints_as_a_cut() -> None:
    # found while looking: `[# 1 + B + # 1] = 4 / 2` printed `[# 1 + B + # 1] # 6 / 2 = 2`, and parsing that
    # merges the padding into the composite (`[# 1 + B + # 2] / 2 = 2`): equal, but another canonical form
    ax = AxisSet(A=1, B=3)
    e = ax.m["[# 1 + B + # 1] = 4 / 2"]
    assert str(e) == "[# 1 + B + # 1] = 4 / 2"
    assert ax.m[str(e)].canon == e.canon
    assert [e.map(k) for k in range(2)] == [None, i(B=1)]
    _tree_and_canon_agree(ax, "[# 1 + B + # 1] = 4 / 2")


def test_digits_of_a_skewed_axis_past_its_end_are_padding_in_the_canonical_form() -> None:
    # found by a fresh draw once skews could be spliced next to themselves: `A' # 4 / 2, A' = 2` merged into one
    # digit of A' counting 4 positions of an axis of 3, printed `A'` (size 3, not 4); a skewed digit is now
    # clamped to the axis as a plain one is (its position 3 holds nothing either way)
    ax = AxisSet(A=3, B=1).skew("A'", "A - B")
    for text, want in (("A' # 4 / 2, A' = 2", "A' # 4"), ("A' # 6 / 2, A' = 2", "A' # 6")):
        e = ax.m[text]
        assert str(e) == want
        again = ax.m[str(e)]
        assert again.size == e.size and again == e and again.canon == e.canon
        _tree_and_canon_agree(ax, text)
    assert [ax.m["A' # 4 / 2, A' = 2"].map(k) for k in range(4)] == [i(), i(A=1), i(A=2), None]
