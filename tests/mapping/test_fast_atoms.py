"""``sequencer.atoms-by-digit`` (visa/mapping/fast_atoms.py): the sequencer's per-axis address check decided
digit by digit gives the same configurations and the same refusals as the enumeration (manual L1336–1423,
L1660–1683), for random splits of random axes (the sequencer tests' own cases, compatible or not); it decides
the DMA layouts of the first-launch ring sum; and it leaves to the enumeration what it cannot decide (two digits
that carry into each other, a buffer digit of an axis that is no plain radix)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.mapping.test_sequencer import PROPS, _case
from visa import AxisSet, Mapping, fastpaths
from visa.hw import RNGD
from visa.mapping import sequencer
from visa.mapping.fast_atoms import additive
from visa.mapping.sequencer import derive, derive_many

LIMITS = replace(RNGD.sequencer, max_entries=64)


def _derive(buf: Mapping, time: Mapping, packet: Mapping) -> Any:
    try:
        return derive(buf, time, packet, limits=LIMITS)
    except Exception as e:  # noqa: BLE001 (compared below: the same class and words)
        return type(e), str(e)


@PROPS
@given(st.one_of(_case(compatible=True), _case(compatible=False)))
def test_random_splits_derive_or_refuse_the_same(case: tuple[Mapping, Mapping, Mapping]) -> None:
    fast = _derive(*case)
    with fastpaths.disabled("sequencer.atoms-by-digit"):
        assert _derive(*case) == fast


def _records(buf: Mapping, time: Mapping, packet: Mapping) -> tuple[list[Any], list[Any]]:
    """The records and buffer digits of the one axis the structural derivation checks."""
    b = sequencer._buffer(buf)
    items = sequencer.stream_items(time, packet)
    for it in items:
        sequencer._item_entries(it.dims, b, sequencer._Ctx("t", it.level, it.mapping, buf))
    (atom, recs), = {a: [(t, c, p) for a2, t, c, p in b.records if a2 == a] for a, *_ in b.records}.items()
    return recs, b.factors[atom]


def test_the_ring_sums_dma_layouts_are_decided_by_digit() -> None:
    """The first-launch ring sum's DMAs (benchmarks/bench_first_launch.py): A of 262,144 read in 512-element
    steps, a million combinations the enumeration visits, decided by each digit's 512 values."""
    m = AxisSet(R=4, A=1 << 18).m
    recs, factors = _records(m["A"], m["A / 512"], m["A % 512"])
    assert additive(recs, factors)
    buffers = [m["A"], m["A % 512 / 8, A / 512, A % 8"]]
    configs = derive_many(buffers, m["A / 512"], m["A % 512"])
    with fastpaths.disabled("sequencer.atoms-by-digit"):
        assert derive_many(buffers, m["A / 512"], m["A % 512"]) == configs


def test_digits_that_carry_are_left_to_the_enumeration() -> None:
    """A / 3 and A % 3 over a buffer whose low digit is A % 6: A / 3 steps past the buffer digit's boundary
    (3, 6, 9), so the two stream digits may carry into A / 6; the enumeration decides, the same either way."""
    m = AxisSet(A=12).m
    case = (m["[A % 6] / 2, A % 2, A / 6"], m["A / 3"], m["A % 3"])
    recs, factors = _records(*case)
    assert not additive(recs, factors)
    fast = _derive(*case)
    with fastpaths.disabled("sequencer.atoms-by-digit"):
        assert _derive(*case) == fast
