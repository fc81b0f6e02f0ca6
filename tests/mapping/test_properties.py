"""Property tests of the mapping algebra against brute force (ARCHITECTURE.md "Tests")."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from tests.mapping.reference import ref_map
from tests.mapping.strategies import Axes, Expr, axes_and_expr, axis_set
from visa import AxisSet, Mapping
from visa.errors import VisaError

EXAMPLES = int(os.environ.get("VISA_EXAMPLES", "150"))
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse(axes: Axes, e: Expr) -> Mapping:
    return axis_set(axes).m[e.text]


#: Random draws that found defects of skewed axes inside composites (issue 15; tests/mapping/test_skew_composites.py).
TWO_COMPOSITES = ({"A": 2, "B": 2, "C": 1, "B'": "B - A"}, Expr("[A, B'] / 2, [B', A] / 2", 4, False))
CUT_SKEW = ({"A": 1, "B": 3, "B'": "B - A"}, Expr("B' = 2 / 2", 1, True))
SKEW_TWICE = ({"A": 3, "B": 1, "A'": "A - B"}, Expr("A', A' = 2 / 2", 3, False))
RESIZED_TWICE = ({"A": 3}, Expr("A = 2 % 2, A = 2 % 2", 4, False))
SKEW_MERGED = ({"A": 3, "B": 1, "A'": "A - B"}, Expr("A' # 4 / 2, A' = 2", 4, False))


@FAST
@given(axes_and_expr())
@example(TWO_COMPOSITES)
@example(CUT_SKEW)
@example(SKEW_TWICE)
@example(RESIZED_TWICE)
def test_canonical_form_maps_as_the_tree(case: tuple[Axes, Expr]) -> None:
    axes, e = case
    got = _parse(axes, e)
    assert got.size == e.size
    ev = got.evaluate()
    for k in range(got.size):
        want = ref_map(got.node, k)
        have = got.map(k)
        assert (None if have is None else dict(have)) == want, (e.text, k, str(got))
        assert bool(ev.valid[k]) == (want is not None)


@FAST
@given(axes_and_expr())
@example(TWO_COMPOSITES)
@example(CUT_SKEW)
@example(SKEW_TWICE)
@example(RESIZED_TWICE)
@example(SKEW_MERGED)
def test_canonical_text_parses_back_to_an_equal_mapping(case: tuple[Axes, Expr]) -> None:
    axes, e = case
    got = _parse(axes, e)
    again = axis_set(axes).m[str(got)]
    assert again == got
    if got.evaluate().valid.any():  # a mapping of padding only has several spellings of "nothing"
        assert again.canon == got.canon
        assert str(again) == str(got)
    assert hash(again) == hash(got)


@FAST
@given(axes_and_expr(), st.data())
def test_stride_modulo_decomposition_holds(case: tuple[Axes, Expr], data: st.DataObject) -> None:
    axes, e = case
    ax = axis_set(axes)
    E = ax.m[e.text]
    divs = [d for d in range(1, E.size + 1) if E.size % d == 0]
    n = data.draw(st.sampled_from(divs))
    scope = {"E": E}
    split = Mapping.parse(f"{{E}} / {n}, {{E}} % {n}", ax, scope)
    assert split == E  # manual L1024
    for k in range(E.size):
        assert split.map(k) == E.map(k)


@FAST
@given(axes_and_expr(), axes_and_expr())
def test_equivalence_is_brute_force_equality(a: tuple[Axes, Expr], b: tuple[Axes, Expr]) -> None:
    axes = {**a[0], **b[0]}
    assume(all(a[0].get(k, v) == v for k, v in b[0].items()))
    ax = axis_set(axes)
    x, y = ax.m[a[1].text], ax.m[b[1].text]
    same = x.size == y.size and all(x.map(k) == y.map(k) for k in range(x.size))
    assert (x == y) == same
    if same:
        assert hash(x) == hash(y)


@FAST
@given(axes_and_expr())
def test_pair_laws(case: tuple[Axes, Expr]) -> None:
    axes, e = case
    ax = axis_set(axes)
    E = ax.m[e.text]
    scope = {"E": E}
    assert Mapping.parse("{E}, 1", ax, scope) == E == Mapping.parse("1, {E}", ax, scope)  # L1022
    assert Mapping.parse("{E} / 1", ax, scope) == E  # L1026
    assert Mapping.parse(f"{{E}} # {E.size}", ax, scope) == E
    assert Mapping.parse(f"{{E}} = {E.size}", ax, scope) == E
    mod1 = Mapping.parse("{E} % 1", ax, scope)
    if E.map(0) is not None:
        assert mod1 == ax.m["1"]  # L1027
    else:  # position 0 of E is left padding: E % 1 keeps it (docs/manual-notes.md, "modulo by one")
        assert mod1.size == 1 and mod1.map(0) is None


def _skewed(x: Mapping, written: str) -> bool:
    """Whether the expression as written names a skewed axis (its canonical text may hide one inside a
    composite: ``[1, C'] / 2`` is one position, yet C' = C - B still ties C to B)."""
    for sep in "[],/%#=$():":
        written = written.replace(sep, " ")
    return any(x.axis_set.skew_of(name) is not None for name in written.split())


@FAST
@given(axes_and_expr(depth=2), axes_and_expr(depth=2))
def test_pair_projection_and_associativity(a: tuple[Axes, Expr], b: tuple[Axes, Expr]) -> None:
    assume(all(a[0].get(k, v) == v for k, v in b[0].items()))
    ax = axis_set({**a[0], **b[0]})
    A, B = ax.m[a[1].text], ax.m[b[1].text]
    scope = {"A": A, "B": B}
    # The projections need position 0 of the dropped half to hold an index (docs/manual-notes.md), and no
    # skewed axis there: B' = B - A is a coordinate of the whole index (L988), so a dropped B' still sets B.
    if B.map(0) is not None and not _skewed(B, b[1].text):
        assert Mapping.parse(f"[{{A}}, {{B}}] / {B.size}", ax, scope) == A  # L1025
    if A.map(0) is not None and not _skewed(A, a[1].text):
        assert Mapping.parse(f"[{{A}}, {{B}}] % {B.size}", ax, scope) == B
    assert Mapping.parse("{A}, {B}, {A}", ax, scope) == Mapping.parse("[{A}, {B}], {A}", ax, scope)  # L1026


@FAST
@given(axes_and_expr())
def test_inverse_finds_every_held_index(case: tuple[Axes, Expr]) -> None:
    axes, e = case
    E = _parse(axes, e)
    ev = E.evaluate()
    pos, held = E.locate(ev.coords, (E.size,))
    assert held[ev.valid].all()
    back = E.evaluate(pos)
    for name, arr in ev.coords.items():
        assert np.array_equal(back.coord(name)[ev.valid], arr[ev.valid])


@FAST
@given(axes_and_expr())
@example(TWO_COMPOSITES)
@example(CUT_SKEW)
@example(SKEW_MERGED)
def test_validity_is_the_evaluations_mask(case: tuple[Axes, Expr]) -> None:
    """``validity()`` (issue 15: without the coordinates) is ``evaluate().valid`` and the brute-force map."""
    axes, e = case
    E = _parse(axes, e)
    got = E.validity()
    assert got.dtype == np.bool_ and got.shape == (E.size,) and got.flags.writeable
    assert np.array_equal(got, E.evaluate().valid)
    assert got.tolist() == [ref_map(E.node, k) is not None for k in range(E.size)]


_ALPHABET = st.sampled_from(list("AB1234#%/=,[]{}$():+ *@!-' ") + ["A", "B", "C", "indirect", "12", "0"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_ALPHABET, max_size=14).map("".join))
def test_parser_gives_a_mapping_or_a_visa_error(text: str) -> None:
    ax = AxisSet(A=4, B=6)
    try:
        got = ax.m[text]
    except VisaError:
        return
    assert isinstance(got, Mapping)
    assert got.size >= 1


# ---------------------------------------------------------------------------------------------------------
# issue 23, finding 6: a composite used whole in each half of a pair follows Pair::map (L710–714, L775–777)
# ---------------------------------------------------------------------------------------------------------


def test_pairs_of_padded_composites_follow_pair_map_l710() -> None:
    # Pair::map: L::map(i / R::SIZE)? + R::map(i % R::SIZE)?; a position in either half's padding is None (L775)
    e = AxisSet(E=3).m["[# 1 + E] # 5, [# 1 + E] # 5"]
    assert e.map(1) is None  # the left half's position 0 is left padding
    assert e.map(6) == {} and e.map(7) == {"E": 1} and e.map(12) == {"E": 2} and e.map(13) is None
    ab = AxisSet(A=2, B=3).m["[A, B] # 7, [A, B] # 7"]
    assert ab.map(9) is None  # (A 0, B 1) + (A 0, B 2): B = 3 is past its end
    assert ab.map(8) == {"B": 2} and ab.map(7 * 3) == {"A": 1} and ab.map(7 * 3 + 3) is None  # A = 2: past


def _pair_map(p: Mapping, k: int) -> dict[str, int] | None:
    """``Pair::map`` of ``p, p`` at ``k`` as the manual writes it (L710–714), indices inside their axes."""
    left, right = p.map(k // p.size), p.map(k % p.size)
    if left is None or right is None:
        return None
    out = dict(left + right)
    sizes = p.axis_set.sizes
    if any(not 0 <= v < sizes[a] for a, v in out.items()):
        return None
    return {a: v for a, v in out.items() if v}


@FAST
@given(axes_and_expr(depth=2, max_size=12), st.integers(0, 3), st.integers(0, 2), st.booleans())
def test_a_composite_used_whole_twice_maps_as_pair_map(case: tuple[Axes, Expr], extra: int, left: int,
                                                       resized: bool) -> None:
    """``[P] # n, [P] # n`` (or ``# l + [P]``, or ``[P] = SIZE``) for a random composite P of plain axes that no
    stride cuts: the canonical form and the suite's brute-force reference both give Pair::map's answer."""
    axes, e = case
    assume(all(isinstance(v, int) for v in axes.values()))  # skewed axes resolve over the whole index (L988)
    assume("/" not in e.text)  # a composite a stride cuts adds positions across digits (ARCHITECTURE.md)
    ax = axis_set(axes)
    inner = ax.m[e.text]
    right = f" + # {extra}" if extra else ""
    whole = f"[{e.text}] = {inner.size}" if resized else f"# {left} + [{e.text}]{right}" if left else \
        f"[{e.text}] # {inner.size + extra}"
    p = ax.m[whole]
    both = ax.m[f"[{whole}], [{whole}]"]
    for k in range(both.size):
        want = _pair_map(p, k)
        got = both.map(k)
        assert (None if got is None else dict(got)) == want, (whole, k, str(both))
        assert ref_map(both.node, k) == want, (whole, k)
