"""``memory.aligned-transfers`` (visa/memory/fast_transfers.py) against the reference's split of DMA packets into
HBM transfers (L2469, L2981–2985): the same units, cost factors and packet indices, in the same order, for
random packets — aligned, inside a unit, crossing one — of every size, read and written."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, fastpaths
from visa.memory import fast_transfers
from visa.memory.performance import hbm_packet_transfers


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1 << 20), min_size=1, max_size=20), st.sampled_from([1, 8, 32, 224, 256, 300, 512,
                                                                                     1000, 4096]),
       st.sampled_from([1, 32, 256]), st.booleans())
def test_the_transfers_are_the_references(starts: list[int], packet: int, align: int, write: bool) -> None:
    packets = np.array([s // align * align for s in starts], dtype=np.int64)
    with fastpaths.only("memory.aligned-transfers"):
        fast = hbm_packet_transfers(RNGD, packets, packet, write)
    with fastpaths.disabled("memory.aligned-transfers"):
        reference = hbm_packet_transfers(RNGD, packets, packet, write)
    for mine, theirs in zip(fast, reference, strict=True):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)


def test_the_path_declines_a_packet_that_crosses_a_unit() -> None:
    """A 32-byte packet at byte 240 of a unit needs two transfers: the reference splits it."""
    assert fast_transfers.transfers(RNGD, np.array([240], dtype=np.int64), 32, False) is None
    got = fast_transfers.transfers(RNGD, np.array([224, 512], dtype=np.int64), 32, True)
    assert got is not None and got[0].tolist() == [0, 512] and got[1].tolist() == [50.0, 50.0]
