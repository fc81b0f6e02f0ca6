"""``dma.cost-dm-once`` (visa/engines/dma/fast_dm_time.py, issue 24) against the reference DM time of a DMA
command (``cost._dm_time``: DMNs found three times, ``np.unique`` and ``np.intersect1d``): the same time, the same
busy cycles added to the shared per-DMN sums (the same floats, added in the same order), for random sampled packet
addresses on one or both DM sides, sides that share DMNs or not, and a DMA's worth of commands in a row; and a
chip shuffle of the collectives example records the same schedule with the path alone as with it off."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import alone_and_without
from visa import RNGD, fastpaths
from visa.engines.dma import cost
from visa.memory.transfer import address_space

DM_BYTES = address_space(RNGD, "dm").chip_bytes


def _both(media: tuple[str, str], addrs: list[tuple[np.ndarray, np.ndarray]], nbytes: int,
          scale: float) -> tuple[Any, Any]:
    spaces = (address_space(RNGD, media[0]), address_space(RNGD, media[1]))
    out = []
    for on in (True, False):
        shared: dict[int, float] = {}
        with (fastpaths.only("dma.cost-dm-once") if on else fastpaths.disabled("dma.cost-dm-once")):
            times = [cost._dm_time(RNGD, spaces, a, nbytes, scale, shared) for a in addrs]
        out.append((times, list(shared.items())))
    return out[0], out[1]


@settings(max_examples=60, deadline=None)
@given(media=st.sampled_from([("dm", "dm"), ("hbm", "dm"), ("dm", "hbm"), ("hbm", "hbm")]),
       commands=st.integers(1, 4), n=st.integers(0, 40), chips=st.integers(1, 4), nbytes=st.sampled_from([8, 256, 300]),
       scale=st.sampled_from([1.0, 3.0, 0.1, 1 / 7]), seed=st.integers(0, 2**16))
def test_dm_time_is_the_references(media: tuple[str, str], commands: int, n: int, chips: int, nbytes: int,
                                   scale: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    top = chips * DM_BYTES
    addrs = [(rng.integers(0, top, n, dtype=np.int64), rng.integers(0, top, n, dtype=np.int64))
             for _ in range(commands)]
    fast, ref = _both(media, addrs, nbytes, scale)
    assert fast == ref


def test_sides_sharing_a_dmn_add_up() -> None:
    """Reads and writes of one DMN are sequential (L2673): the sides' times add when they share one."""
    a = np.arange(8, dtype=np.int64) * 256
    (times, shared), ref = _both(("dm", "dm"), [(a, a + 1024), (a, a + DM_BYTES)], 256, 1.0)
    assert (times, shared) == ref and times[0] > times[1]


def _shuffle() -> list[tuple[Any, ...]]:
    from examples.collectives import rotation
    from visa import AxisSet, Context, i32
    from visa.testing import place_dm

    m = AxisSet(A=4, K=2, S=256, D=16).m
    ctx = Context(RNGD)
    ctx.num_chips = 4
    x = np.arange(4 * 2 * 256 * 16, dtype=np.int32).reshape(4, 2, 256, 16)
    dm = place_dm(ctx, x, i32, m["A"], m["K"], m["S"], m["D"], 0, axes="A K S D")
    lv = dm.levels
    dm.view().chip_shuffle(list(rotation(4, 1))).to_dm(lv["Cluster"], lv["Slice"], lv["Element"], ctx.tdma, 1 << 12)
    return [(o.track, o.name, o.start, o.cycles) for o in ctx.schedule.ops]


def test_a_chip_shuffle_records_the_same_schedule() -> None:
    alone, without = alone_and_without("dma.cost-dm-once", _shuffle)
    assert alone == without and alone
