"""``dma.cost-translated-parts``, ``dma.cost-shifted-transfers`` (visa/engines/dma/fast_translates.py) and
``dma.cost-shifted-dm`` (visa/engines/dma/fast_dm_time.py) against the reference's cost model (issue
24): DMAs of several engines and commands (tiles a power-of-two block apart, as a tiled DMA's engines are; moves
into address bits the units leave clear; random strides that are neither) cost the reference's, field by field —
total, parts, every HBM channel's cycles, the reasons — and a tiled one is answered by the path (it does not
merely decline)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, fastpaths, i8
from visa.engines.dma import cost, fast_translates
from visa.engines.dma.config import DmaPlan
from visa.memory import performance as perf
from visa.memory.transfer import address_space

_model = cost._cycles.__wrapped__  # type: ignore[attr-defined]  # (the model, not the plan's cache)
MEDIA = [("hbm", "dm"), ("dm", "hbm"), ("host", "hbm"), ("hbm", "host")]


def _reference(p: DmaPlan) -> Any:
    with fastpaths.disabled("dma.cost-translated-parts", "dma.cost-relative"):
        return _model(p, None)


def _fast(p: DmaPlan) -> Any:
    with fastpaths.only("dma.cost-translated-parts", "dma.cost-shared-load"):
        return _model(p, None)


@st.composite
def plans(draw: Any) -> DmaPlan:
    media = draw(st.sampled_from(MEDIA))
    packet = draw(st.sampled_from([32, 100, 256, 512, 4096]))
    inner = draw(st.lists(st.tuples(st.integers(1, 6), st.sampled_from([256, 512, 2048, 4096, 300, 1 << 13]),
                                    st.sampled_from([32, 256, 4096])), max_size=2))
    tiles = draw(st.sampled_from([1 << 12, 1 << 16, 1 << 20, 1 << 21, 3 << 20, 512, 1024, 4096 + 256]))
    hbm_side = 0 if media[0] == "hbm" else 1
    outer = [draw(st.integers(2, 8)), 0, 0]
    outer[1 + hbm_side] = tiles
    outer[2 - hbm_side] = draw(st.sampled_from([0, 1 << 18, 1 << 12]))
    spatial, commands = [], []
    (spatial if draw(st.booleans()) else commands).append(tuple(outer))
    if draw(st.booleans()):
        commands.append((draw(st.integers(2, 3)), 1 << 24 if hbm_side == 0 else 0, 1 << 24 if hbm_side else 0))
    base = [draw(st.integers(0, 1 << 24)) // 256 * 256 + (1 << 20) for _ in range(2)]
    if draw(st.booleans()):
        base[hbm_side] += draw(st.integers(0, 255))
    return DmaPlan.from_loops(RNGD, i8, media, [*inner, (packet, 1, 1)], (base[0], base[1]), spatial=spatial,
                              commands=commands)


@settings(max_examples=100, deadline=None)
@given(plans())
def test_parts_translated_cost_the_references(p: DmaPlan) -> None:
    assert _fast(p) == _reference(p)


def test_a_tiled_dma_is_answered_by_the_path() -> None:
    """Eight engines each moving 64 KiB, 1 MiB apart in HBM, cost the reference's; and eight parts of 4 MiB, 4 MiB
    apart: the path models one part and gives the merged load of all eight, field by field (each part a group of
    its own, as the cost model asks)."""
    p = DmaPlan.from_loops(RNGD, i8, ("hbm", "dm"), [(16, 4096, 4096), (4096, 1, 1)], (1 << 24, 0),
                           spatial=[(8, 1 << 20, 1 << 19)])
    assert _fast(p) == _reference(p)
    rng = np.random.default_rng(3)
    n = 512
    units = (1 << 24) + rng.integers(0, 1 << 14, n) * 256  # 4 MiB of scattered units: row switches, repeats
    factor = np.where(rng.random(n) < 0.1, 50.0, 1.0)
    seg = np.repeat(np.arange(8, dtype=np.int64), n // 8)
    chips = np.zeros(n, dtype=np.int64)
    parts = [(chips, units + (e << 22), factor, seg, 0) for e in range(8)]
    got = fast_translates.load(RNGD, parts)
    assert got is not None
    want = perf.hbm_load(RNGD, np.concatenate([chips] * 8), np.concatenate([t[1] for t in parts]),
                         np.concatenate([factor] * 8), np.concatenate([seg + 8 * e for e in range(8)]),
                         np.repeat(np.arange(8, dtype=np.int64), 8))
    assert got.busy.tobytes() == want.busy.tobytes() and got.bus.tobytes() == want.bus.tobytes()
    assert got.group_busy is not None and want.group_busy is not None
    assert got.group_busy.tobytes() == want.group_busy.tobytes()
    assert (got.activations, got.transfers, got.rmw) == (want.activations, want.transfers, want.rmw)
    assert got.activations > 0 and len(set(np.flatnonzero(got.busy).tolist())) > 1


def test_moves_into_bits_the_units_use_decline() -> None:
    """Engines 512 bytes apart whose units use bit 9 too (a carry changes the channel bits unevenly): the path
    declines.  With the units' bits 9 and 10 clear (2 KiB apart), the same moves are answered, as the
    reference."""
    chips = np.zeros(64, dtype=np.int64)
    for stride, answered in ((256, False), (2048, True)):
        p = DmaPlan.from_loops(RNGD, i8, ("hbm", "dm"), [(64, stride, 32), (32, 1, 1)], (0, 0),
                               spatial=[(4, 512, 1 << 19)])
        units = np.arange(64, dtype=np.int64) * stride
        parts = [(chips, units + 512 * e, np.ones(64), np.zeros(64, dtype=np.int64), 0) for e in range(4)]
        assert (fast_translates.load(RNGD, parts) is not None) == answered
        assert _fast(p) == _reference(p)


@st.composite
def shifted_plans(draw: Any) -> DmaPlan:
    """DMAs of several engines and commands whose HBM side's parts lie whole 256-byte units apart or not (odd
    moves, moves across a chip's end), with packets aligned or not, reads and writes."""
    media = draw(st.sampled_from(MEDIA + [("hbm", "hbm")]))
    packet = draw(st.sampled_from([4, 32, 100, 256, 300, 512, 4096]))
    inner = draw(st.lists(st.tuples(st.integers(1, 6), st.sampled_from([4, 256, 300, 512, 2048, 1 << 13, 1 << 20]),
                                    st.sampled_from([4, 32, 256, 4096])), max_size=3))
    moves = st.sampled_from([0, 4, 128, 256, 512, 768, 4096 + 256, 1 << 20, 3 << 20, 1 << 33, (1 << 34) - 256, 1 << 35])
    spatial = [(draw(st.integers(2, 8)), draw(moves), draw(moves))] if draw(st.booleans()) else []
    commands = [(draw(st.integers(2, 3)), draw(moves), draw(moves))] if draw(st.booleans()) or not spatial else []
    chip = address_space(RNGD, "hbm").chip_bytes  # (48 GiB: a move may cross a chip's end)
    starts = st.sampled_from([0, 1 << 20, (1 << 34) - (1 << 16), chip - (1 << 16), chip])
    base = [draw(starts) + draw(st.integers(0, 1 << 12)) for _ in range(2)]
    return DmaPlan.from_loops(RNGD, i8, media, [*inner, (packet, 1, 1)], (base[0], base[1]), spatial=spatial,
                              commands=commands)


@settings(max_examples=300, deadline=None)
@given(shifted_plans())
def test_shifted_transfers_cost_the_references(p: DmaPlan) -> None:
    """``dma.cost-shifted-transfers`` and ``dma.cost-shifted-dm``: every command's HBM transfers, DM time and
    DMNs' busy cycles read off the first command's cost what the reference's, field by field, each path alone and
    both, with the parts' load modelled either way and with the DMNs counted either way."""
    with fastpaths.disabled("dma.cost-shifted-transfers", "dma.cost-shifted-dm", "dma.cost-relative"):
        want = _model(p, None)
    with fastpaths.disabled("dma.cost-relative"):
        assert _model(p, None) == want
    with fastpaths.disabled("dma.cost-relative", "dma.cost-translated-parts", "dma.cost-dm-once"):
        assert _model(p, None) == want
    with fastpaths.disabled("dma.cost-relative", "dma.cost-shifted-transfers"):
        assert _model(p, None) == want
    with fastpaths.disabled("dma.cost-relative", "dma.cost-shifted-dm"):
        assert _model(p, None) == want
