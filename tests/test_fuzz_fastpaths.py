"""The differential fuzzer of random kernels (tests/fuzz_kernels.py): fast paths on = off, no byte outside a
step's declared writes changes, a refused step changes nothing.  A few programs here; ``make fuzz`` runs many
(``VISA_FUZZ_CASES``)."""

from __future__ import annotations

import pytest

from tests.fuzz_kernels import budget, compare, fetch_variant, program
from visa import i8, i16

#: Programs run by ``make test`` (``make fuzz`` sets ``VISA_FUZZ_CASES``; the seeds continue from here).
DEFAULT = 6
CASES = budget(DEFAULT)


@pytest.mark.parametrize("seed", range(CASES))
def test_random_kernels_fast_equals_reference_and_stay_in_their_footprint(seed: int) -> None:
    out = compare(seed)
    assert len(out.steps) >= 3 and out.dm is not None


def test_the_budget_draws_every_kind_of_step_and_two_chips() -> None:
    """The programs ``make test`` runs hold every kind of step (DMAs, streams, switch, GEMM, chip shuffle) and
    programs on one chip and on two."""
    programs = [program(seed) for seed in range(DEFAULT)]
    kinds = {step.kind for steps in programs for step in steps}
    assert kinds == {"h2d", "dma-slices", "dma-tile", "h2d-padded-left", "gemm", "stream", "dm2dm", "stream-view",
                     "switch", "shuffle"}
    assert {steps[0].args["chips"] for steps in programs} == {1, 2}
    fetches = {(fetch_variant(s.args), s.args["dtype"] in (i8, i16)) for steps in programs for s in steps
               if s.kind in ("stream", "stream-view")}
    assert {("masked", True), ("widen", True)} <= fetches  # fetch.masked-known, fetch.widen-read
