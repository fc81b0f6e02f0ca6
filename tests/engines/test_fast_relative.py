"""``dma.cost-relative`` (visa/engines/dma/fast_relative.py) against the reference's cost model (issue 24): the
cost of random DMA shapes (skewed and negative strides, packets that cross 256-byte units or cover part of one,
several engines and commands, IndirectLoop offsets) at random places — and the same shape moved to other
blocks, chips and DMNs, which the path answers from its cache with the channels renamed — is the reference's,
field by field (total, parts, every channel's cycles, the reasons)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, fastpaths, i8
from visa.engines.dma import cost, fast_relative
from visa.engines.dma.config import DmaCost, DmaPlan
from visa.memory import performance as perf

_model = cost._cycles.__wrapped__  # type: ignore[attr-defined]  # (the model, not the plan's cache)
MEDIA = [("hbm", "dm"), ("dm", "hbm"), ("host", "hbm"), ("hbm", "host"), ("host", "dm"), ("dm", "host")]
HBM_CHIP = RNGD.hbm.chip_bytes
DM_CHIP = 512 * RNGD.dm.slice_address_space_bytes
DMN = RNGD.dm.slices_per_dmn * RNGD.dm.slice_address_space_bytes

strides = st.one_of(st.sampled_from([0, 32, 256, 512, 4096, 8192, 1 << 13, 1 << 17, 1 << 21, -256, -4096]),
                    st.integers(-3000, 3000), st.integers(1, 1 << 22))
loop = st.tuples(st.integers(1, 6), strides, strides)


def _reference(p: DmaPlan, indirect: Any = None) -> Any:
    with fastpaths.disabled("dma.cost-relative"):
        return _model(p, indirect)


def _fast(p: DmaPlan, indirect: Any = None) -> Any:
    with fastpaths.only("dma.cost-relative"):
        return _model(p, indirect)


def _base(draw: Any, medium: str, chip: int) -> int:
    if medium == "hbm":
        return chip * HBM_CHIP + draw(st.integers(0, 1 << 34)) // draw(st.sampled_from([1, 256, 1 << 16]))
    if medium == "dm":
        return chip * DM_CHIP + draw(st.integers(0, 511)) * RNGD.dm.slice_address_space_bytes + draw(
            st.integers(0, 1 << 18))
    return draw(st.integers(0, 1 << 30))


@st.composite
def plans(draw: Any) -> tuple[DmaPlan, Any]:
    media = draw(st.sampled_from(MEDIA))
    packet = draw(st.sampled_from([1, 4, 32, 100, 256, 300, 4096]))
    loops = [*draw(st.lists(loop, min_size=0, max_size=3)), (packet, 1, 1)]
    spatial = draw(st.lists(loop, max_size=1))
    commands = draw(st.lists(loop, max_size=1))
    chip = draw(st.integers(0, 1))
    base = (_base(draw, media[0], chip) + (1 << 20), _base(draw, media[1], chip) + (1 << 20))
    indirect = None
    if draw(st.booleans()):
        n = draw(st.integers(1, 3))
        indirect = (tuple(draw(st.lists(st.integers(0, 1 << 16), min_size=n, max_size=n))),
                    tuple(draw(st.lists(st.integers(0, 1 << 16), min_size=n, max_size=n))))
    p = DmaPlan.from_loops(RNGD, i8, media, loops, base, spatial=spatial, commands=commands)
    return p, indirect


def _moved(p: DmaPlan, by: tuple[int, int]) -> DmaPlan:
    loops = [(lp.size, lp.src, lp.dst) for lp in p.loops]
    spatial = [(lp.size, lp.src, lp.dst) for lp in p.spatial]
    commands = [(lp.size, lp.src, lp.dst) for lp in p.commands]
    base = (p.base[0] + by[0], p.base[1] + by[1])
    return DmaPlan.from_loops(RNGD, i8, (p.src.medium, p.dst.medium), loops, base, spatial=spatial,
                              commands=commands)


@settings(max_examples=120, deadline=None)
@given(plans(), st.integers(1, 64), st.integers(0, 1), st.integers(1, 8))
def test_random_shapes_cost_the_references_here_and_moved(case: tuple[DmaPlan, Any], blocks: int, chip: int,
                                                          dmns: int) -> None:
    p, indirect = case
    assert _fast(p, indirect) == _reference(p, indirect)
    # the same shape moved by whole aligned blocks of its HBM side, a chip, and whole DMNs of its DM side
    moves = []
    for k, medium in enumerate((p.src.medium, p.dst.medium)):
        got = fast_relative.placement(RNGD, medium, p.base[k], p.base[k])
        if medium == "hbm":
            span = max(1, p.nbytes).bit_length() + 1
            moves.append(blocks << max(span, 8) if got is not None else 0)
        elif medium == "dm":
            moves.append(dmns * DMN)
        else:
            moves.append(blocks * 4096)
    for by in ((moves[0], moves[1]), (chip * _chip(p.src.medium), chip * _chip(p.dst.medium))):
        q = _moved(p, by)
        assert _fast(q, indirect) == _reference(q, indirect)


def _chip(medium: str) -> int:
    return {"hbm": HBM_CHIP, "dm": DM_CHIP}.get(medium, 0)


def test_a_tile_moved_is_a_cache_hit_with_its_channels_renamed() -> None:
    """A 1 KiB tile of HBM moved to the next tiles (8 KiB apart) is modelled once; its channels follow the XOR
    hash (bit 13 and up feed the channel, L2977)."""
    fast_relative._STORE.clear()
    costs = []
    for tile in range(4):
        p = DmaPlan.from_loops(RNGD, i8, ("hbm", "dm"), [(4, 256, 32), (256, 1, 1)],
                               (tile << 13, 1 << 20))
        costs.append(_fast(p))
        assert costs[-1] == _reference(p)
    with fastpaths.only("dma.cost-relative"):
        on = fast_relative.RELATIVE.on  # (off under VISA_FASTPATHS=off: the reference ran, nothing was stored)
    assert len(fast_relative._STORE) == (1 if on else 0)
    assert len({c.channels for c in costs}) > 1  # the tiles use other channels (bits 13–16 feed the hash)
    for kept in fast_relative._STORE.values():  # (a cached model keeps no per-window arrays: 128× its busy cycles)
        assert all(v.windows is None for v in kept if isinstance(v, perf.HbmLoad))


def test_the_channel_hash_is_an_xor_of_disjoint_bits() -> None:
    """What the renaming rests on: ``channel(low + high) = channel(low) ^ channel(high)`` when ``high`` is a
    multiple of ``2^k`` above ``low`` (L2962–2977)."""
    rng = np.random.default_rng(0)
    for k in range(8, 36):
        low = rng.integers(0, 1 << k, size=64)
        high = (rng.integers(0, 1 << (36 - k), size=64)) << k
        assert np.array_equal(perf.hbm_channel(RNGD, low + high),
                              perf.hbm_channel(RNGD, low) ^ perf.hbm_channel(RNGD, high))


def test_two_hbm_sides_run_the_reference() -> None:
    """Two HBM sides share the channels: the path declines (the reference runs)."""
    p = DmaPlan.from_loops(RNGD, i8, ("hbm", "hbm"), [(4, 256, 256), (256, 1, 1)], (0, 1 << 20))
    assert fast_relative.cycles(p, None, cost.model, cost.assemble) is None


def test_the_aligned_transfers_switch_is_part_of_the_key() -> None:
    """``memory.aligned-transfers`` is read inside the model: with the cost path on, toggling it in one process
    models the DMA again (a key of its own, not the other state's cached model), and both equal the reference."""
    from visa.memory import fast_transfers

    p = DmaPlan.from_loops(RNGD, i8, ("hbm", "dm"), [(8, 1 << 13, 512), (512, 1, 1)], (3 << 20, 1 << 20))
    packets = np.arange(8, dtype=np.int64) << 13
    assert fast_transfers.transfers(RNGD, packets, 512, False) is not None  # the aligned path applies here
    fast_relative._STORE.clear()
    cost._cycles.cache_clear()  # type: ignore[attr-defined]
    with fastpaths.only("dma.cost-relative", "memory.aligned-transfers"):
        both = cost.cycles(p)
        states = [(fast_relative.RELATIVE.on, fast_transfers.ALIGNED.on)]
    with fastpaths.only("dma.cost-relative"):
        alone = cost.cycles(p)
        states.append((fast_relative.RELATIVE.on, fast_transfers.ALIGNED.on))
    assert both == alone == _reference(p)
    # one stored model per state of the two switches (none under VISA_FASTPATHS=off: the reference ran)
    assert len(fast_relative._STORE) == len({s for s in states if s[0]})


def test_the_reasons_do_not_depend_on_the_channels_numbers() -> None:
    """Two channels tie as the busiest, one bound by its bus, the other by its banks: the reasons name the
    bank-bound one whichever numbers the channels have (a DMA moved to another block renames them,
    :func:`fast_relative._renamed`), as the reference's text for that DMA."""
    p = DmaPlan.from_loops(RNGD, i8, ("hbm", "dm"), [(4, 256, 32), (256, 1, 1)], (0, 1 << 20))
    base = DmaCost(total=1000, startup=0, issue=4, dm=0, hbm=1000, pcie=0, engines=1, commands=1,
                        packets=4, nbytes=1024)
    busy, bus = np.array([1000.0, 1000.0, 0.0, 0.0]), np.array([1000.0, 400.0, 0.0, 0.0])
    load = perf.HbmLoad(busy, bus, 10, 20, 0)
    texts = set()
    for xor in range(4):
        moved = fast_relative._renamed(load, 0, xor)
        texts.add(cost._why(RNGD, p, base, moved, 1.0, 0, (None, None)))  # type: ignore[arg-type]
    assert len(texts) == 1
    assert any("bank conflicts" in w and "against its bus's 400" in w for w in texts.pop())


@settings(max_examples=120, deadline=None)
@given(plans(), st.integers(0, (1 << 28) - 1), st.integers(0, 1))
def test_a_side_moved_by_bits_its_offsets_miss_costs_the_references(case: tuple[DmaPlan, Any], move: int,
                                                                     chip: int) -> None:
    """``dma.cost-relative-bits``: an HBM side moved by bits none of its offsets has (above the 256-byte unit)
    is modelled once with its channels renamed; the cost there is the reference's, field by field."""
    p, _ = case
    if "hbm" not in (p.src.medium, p.dst.medium) or (p.src.medium, p.dst.medium).count("hbm") > 1:
        return
    k = (p.src.medium, p.dst.medium).index("hbm")
    bits = fast_relative.offset_bits(p.spatial + p.commands + p.loops, k)
    if bits is None:
        return
    unit = RNGD.hbm.access_unit_bytes - 1
    base = p.base[k] & ~(bits & ~unit)  # (a base the path moves: none of the offsets' bits above the unit…)
    if (base & unit) + (bits & unit) > unit:
        base &= ~unit  # (… and its bytes within the unit plus the offsets' stay within it)
    p = _moved(p, (base - p.base[k], 0) if k == 0 else (0, base - p.base[k]))
    by = move & ~(bits | unit) & ~base
    by += chip * HBM_CHIP if base + by + p.nbytes < 2 * HBM_CHIP else 0
    q = _moved(p, (by, 0) if k == 0 else (0, by))
    for r in (p, q):
        lo, hi = fast_relative._span(r.spatial + r.commands + r.loops, k, None)
        if lo == 0 and (hi + r.base[k]) // HBM_CHIP == r.base[k] // HBM_CHIP:
            assert fast_relative.hbm_placement(RNGD, r.base[k], bits, r.base[k], r.base[k] + hi) is not None
    with fastpaths.only("dma.cost-relative", "dma.cost-relative-bits"):
        fast = (_model(p, None), _model(q, None))
    assert fast == (_reference(p), _reference(q))


def test_the_columns_of_a_row_of_tiles_share_a_model() -> None:
    """The peer matmul's rhs tile (4,096 rows of 64 bytes, 16 KiB apart) at the columns ``64 · c``: the bits 6–13
    of the base are missed by the rows' (14 and up) and the packet's (0–5): one model per base within the
    256-byte unit (four), each column's cost the reference's, and other channels (bits 8–13 feed the hash)."""
    fast_relative._STORE.clear()
    costs = []
    for c in range(16):
        p = DmaPlan.from_loops(RNGD, i8, ("hbm", "dm"), [(4096, 1 << 14, 64), (64, 1, 1)], ((1 << 28) + 64 * c, 0))
        with fastpaths.only("dma.cost-relative", "dma.cost-relative-bits"):
            costs.append(_model(p, None))
            on = fast_relative.FINE.on and fast_relative.RELATIVE.on
        assert costs[-1] == _reference(p)
    assert len(fast_relative._STORE) == (4 if on else 0)
    assert len({c.channels for c in costs}) > 1
    assert fast_relative.offset_bits(p.loops, 0) == (1 << 6) - 1 | ((1 << 26) - (1 << 14))
    assert fast_relative.offset_bits(DmaPlan.from_loops(RNGD, i8, ("hbm", "dm"), [(3, 48, 64), (64, 1, 1)],
                                                        (0, 0)).loops, 0) is None  # (rows meet the packet's bits)
