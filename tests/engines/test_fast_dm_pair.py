"""``dma.cost-relative-dm-pair`` (visa/engines/dma/fast_relative.py) and ``dma.pcie-same-chip``
(visa/engines/dma/fast_pcie.py) against the reference's cost model (issue 24).

A DM → DM DMA of a random shape (several engines and commands, skewed and negative strides, chip loops) with its
sides on random chips and DMNs, and the same shape moved to other chips and DMNs (answered from the store), costs
the reference's, field by field; and wherever ``same_chip`` says no packet crosses chips, the reference's model
counts no PCIe time."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, fastpaths, i8
from visa.engines.dma import cost, fast_pcie, fast_relative
from visa.engines.dma.config import DmaPlan

_model = cost._cycles.__wrapped__  # type: ignore[attr-defined]  # (the model, not the plan's cache)
DM_CHIP = 512 * RNGD.dm.slice_address_space_bytes
HBM_CHIP = RNGD.hbm.chip_bytes
UNIT = RNGD.dm.slice_address_space_bytes
DMN = RNGD.dm.slices_per_dmn * UNIT

strides = st.one_of(st.sampled_from([0, 32, 256, 4096, UNIT, 2 * UNIT, DMN, 4 * DMN, 64 * UNIT, -UNIT, -32]),
                    st.integers(-3000, 3000))
loop = st.tuples(st.integers(1, 5), strides, strides)


def _reference(p: DmaPlan) -> Any:
    with fastpaths.disabled("dma.cost-relative-dm-pair"):
        return _model(p, None)


def _fast(p: DmaPlan) -> Any:
    with fastpaths.only("dma.cost-relative", "dma.cost-relative-dm-pair", "dma.cost-dm-once"):
        return _model(p, None)


def _plan(media: tuple[str, str], loops: list[tuple[int, int, int]], base: tuple[int, int],
          spatial: list[tuple[int, int, int]], commands: list[tuple[int, int, int]]) -> DmaPlan:
    return DmaPlan.from_loops(RNGD, i8, media, loops, base, spatial=spatial, commands=commands)


@st.composite
def dm_plans(draw: Any) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    packet = draw(st.sampled_from([4, 32, 128, 256, 300, 4096]))
    loops = [*draw(st.lists(loop, max_size=3)), (packet, 1, 1)]
    return loops, draw(st.lists(loop, max_size=1)), draw(st.lists(loop, max_size=1))


@settings(max_examples=150, deadline=None)
@given(dm_plans(), st.integers(0, 3), st.integers(0, 3), st.integers(0, 255), st.integers(0, 255),
       st.integers(0, 4096), st.integers(0, 4096), st.integers(0, 3), st.integers(0, 3), st.integers(0, 64))
def test_dm_pairs_cost_the_references_here_and_moved(shape: Any, a: int, b: int, ua: int, ub: int, ba: int, bb: int,
                                                     a2: int, b2: int, dmns: int) -> None:
    loops, spatial, commands = shape
    base = (a * DM_CHIP + ua * UNIT + ba, b * DM_CHIP + ub * UNIT + bb)
    p = _plan(("dm", "dm"), loops, base, spatial, commands)
    assert _fast(p) == _reference(p)
    # the same shape on other chips (one chip for both when a == b, else two) and moved by whole DMNs
    if a == b:
        b2 = a2
    elif a2 == b2:
        b2 = (a2 + 1) % 4
    q = _plan(("dm", "dm"), loops, (base[0] + (a2 - a) * DM_CHIP, base[1] + (b2 - b) * DM_CHIP), spatial, commands)
    assert _fast(q) == _reference(q)
    r = _plan(("dm", "dm"), loops, (base[0] + dmns * DMN, base[1] + (dmns if a == b else 0) * DMN), spatial,
              commands)
    assert _fast(r) == _reference(r)


def test_a_chip_shuffles_parts_share_one_model() -> None:
    """Four parts of a ring shift (chip c → chip c + 1, 16 slices a part) cost the reference's, from one model."""
    fast_relative._STORE.clear()
    parts = [_plan(("dm", "dm"), [(16, UNIT, UNIT), (8192, 1, 1)],
                   (c * DM_CHIP + 64 * UNIT, (c + 1) % 4 * DM_CHIP + 64 * UNIT), [], [(4, 16 * UNIT, 16 * UNIT)])
             for c in range(4)]
    for p in parts:
        assert _fast(p) == _reference(p)
    with fastpaths.only("dma.cost-relative", "dma.cost-relative-dm-pair"):
        on = fast_relative.PAIR.on and fast_relative.RELATIVE.on
    assert len(fast_relative._STORE) == (1 if on else 0)


MEDIA = [("dm", "dm"), ("hbm", "dm"), ("dm", "hbm"), ("hbm", "hbm")]


def _chip_bytes(medium: str) -> int:
    return DM_CHIP if medium == "dm" else HBM_CHIP


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(MEDIA), dm_plans(), st.integers(0, 3), st.integers(0, 3), st.integers(0, 1 << 16),
       st.integers(0, 1 << 16), st.lists(st.tuples(st.integers(1, 4), st.integers(-1, 2), st.integers(-1, 2)),
                                         max_size=2), st.booleans())
def test_same_chip_only_where_the_model_counts_no_pcie(media: tuple[str, str], shape: Any, a: int, b: int, oa: int,
                                                       ob: int, chip_loops: list[tuple[int, int, int]],
                                                       spatial_chips: bool) -> None:
    loops, spatial, commands = shape
    ca, cb = _chip_bytes(media[0]), _chip_bytes(media[1])
    chips = [(n, s * ca, d * cb) for n, s, d in chip_loops]  # loops over chips (equal steps: no crossing)
    if spatial_chips:
        spatial = [*chips, *spatial]
    else:
        loops = [*chips, *loops]
    p = _plan(media, loops, (a * ca + oa, b * cb + ob), spatial, commands)
    with fastpaths.only("dma.pcie-same-chip"):
        said = fast_pcie.same_chip(p)
    if said:
        with fastpaths.disabled():
            assert _model(p, None).pcie == 0


def test_same_chip_a_shuffles_plan_and_its_refusals() -> None:
    """A layout change on every chip, chip to itself (a loop over 4 chips), is shown not to cross; a chip
    permutation's plan, a host side or a side reaching the next chip is not."""
    own = _plan(("dm", "dm"), [(4, DM_CHIP, DM_CHIP), (16, UNIT, UNIT), (8192, 1, 1)], (0, 32 * UNIT), [], [])
    moved = _plan(("dm", "dm"), [(4, DM_CHIP, DM_CHIP), (16, UNIT, UNIT), (8192, 1, 1)], (0, DM_CHIP), [], [])
    reaching = _plan(("dm", "dm"), [(600, UNIT, UNIT), (64, 1, 1)], (0, 0), [], [])
    host = _plan(("host", "hbm"), [(16, 64, 64), (64, 1, 1)], (0, 0), [], [])
    with fastpaths.only("dma.pcie-same-chip"):
        on = fast_pcie.SAME_CHIP.on
        got = [fast_pcie.same_chip(q) for q in (own, moved, reaching, host)]
    assert got == ([True, False, False, False] if on else [False] * 4)
    with fastpaths.disabled():
        assert _model(own, None).pcie == 0
        assert _model(moved, None).pcie > 0


@pytest.mark.parametrize("base", [(0, 0), (DM_CHIP - UNIT, 0), (0, -UNIT)])
def test_dm_pair_refuses_a_side_over_two_chips(base: tuple[int, int]) -> None:
    p = _plan(("dm", "dm"), [(600, UNIT, UNIT), (64, 1, 1)], base, [], [])
    assert fast_relative.dm_pair(RNGD, p.spatial + p.commands + p.loops, p.base) is None
