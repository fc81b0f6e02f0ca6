"""The differential fuzzer of random kernels (tests/fuzz_kernels.py): fast paths on = off, no byte outside a
step's declared writes changes, a refused step changes nothing.  A few programs here; ``make fuzz`` runs many
(``VISA_FUZZ_CASES``)."""

from __future__ import annotations

import pytest

from tests.fuzz_kernels import budget, compare

#: Programs run by ``make test`` (``make fuzz`` sets ``VISA_FUZZ_CASES``; the seeds continue from here).
CASES = budget(6)


@pytest.mark.parametrize("seed", range(CASES))
def test_random_kernels_fast_equals_reference_and_stay_in_their_footprint(seed: int) -> None:
    out = compare(seed)
    assert len(out.steps) >= 3 and out.dm is not None
