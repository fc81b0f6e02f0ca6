"""The insufficient-input check's shortcut (``sequencer._holds_all``) agrees with enumerating the positions.

``_check_held`` enumerates every position a stream asks of an atom and decomposes it by the buffer's digits
(manual L1660–1683, insufficient input); ``_holds_all`` answers "every position 0..last is held" without
enumerating.  Whenever it answers True, the enumeration must find every position held.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from visa.mapping import canon as C
from visa.mapping.sequencer import _Factor, _holds_all


def _held(factors: list[_Factor], p: int) -> bool:
    """The digit-by-digit decomposition ``_check_held`` runs on one position."""
    rem = p
    for f in sorted(factors, key=lambda f: -f.stride):
        digit = min(rem // f.stride, f.size - 1)
        if digit >= f.count:
            return False
        rem -= digit * f.stride
    return rem == 0


@st.composite
def _factors(draw: st.DrawFn) -> list[_Factor]:
    out, stride = [], 1
    for _ in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 6))
        count = draw(st.integers(1, size))
        stride = draw(st.sampled_from([stride, stride + 1, max(1, stride - 1)]))
        out.append(_Factor(stride, size, count, 1))
        stride *= draw(st.sampled_from([count, size]))
    return out


@given(_factors(), st.integers(0, 80), st.integers(1, 90))
def test_shortcut_implies_every_position_held(factors: list[_Factor], last: int, size: int) -> None:
    atom = C.Sym("A", size)
    if _holds_all(factors, last, atom):
        assert all(_held(factors, p) for p in range(min(last, size - 1) + 1))


def test_shortcut_takes_the_common_layouts() -> None:
    """A whole axis in one digit, and split in two where the low digit holds fewer values than its size."""
    atom = C.Sym("A", 1 << 22)
    assert _holds_all([_Factor(1, 3 << 32, 1 << 22, 1)], (1 << 22) - 1, atom)
    assert _holds_all([_Factor(1, 1 << 20, 8192, 1), _Factor(8192, 512, 512, 8192)], (1 << 22) - 1, atom)
    assert not _holds_all([_Factor(1, 8, 4, 1), _Factor(8, 4, 4, 8)], 31, C.Sym("A", 32))


@given(st.lists(st.tuples(st.integers(1, 7), st.integers(2, 5)), min_size=1, max_size=4), st.integers(1, 40))
def test_positions_in_chunks_are_every_sum(digits: list[tuple[int, int]], chunk: int) -> None:
    """The enumeration in chunks yields the multiset of ``Σ i_k t_k``, whatever the chunk size."""
    import itertools

    from visa.mapping.sequencer import _positions

    got = sorted(int(p) for part in _positions(sorted(digits, reverse=True), chunk) for p in part)
    want = sorted(sum(i * t for i, (t, _) in zip(idx, digits, strict=True))
                  for idx in itertools.product(*(range(c) for _, c in digits)))
    assert got == want
