"""The differential fuzzer of random kernels (tests/fuzz_kernels.py): fast paths on = off, no byte outside a
step's declared writes changes, a refused step changes nothing.  A few programs here; ``make fuzz`` runs many
(``VISA_FUZZ_CASES``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fuzz_kernels import (
    _gemm_dtype,
    budget,
    compare,
    fetch_variant,
    inter_variant,
    padded_variant,
    pooled_small,
    program,
    run,
    wide_gemm,
)
from visa import bf16, i8, i16

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
    # an i8 stream widened to i32, reduced over its slices, the sum broadcast (vector.inter-shared,
    # commit.shared-rows)
    assert any(s.kind == "stream" and s.args["vector"] and inter_variant(s.args) and fetch_variant(s.args) == "widen"
               and s.args["dtype"] is i8 for steps in programs for s in steps)


def _first_with_gemm(dtype: Any) -> int:
    """The first seed past the default budget whose program holds a GEMM of ``dtype``."""
    return next(s for s in range(DEFAULT, DEFAULT + 1000)
                if any(st.kind == "gemm" and _gemm_dtype(st.args) is dtype for st in program(s)))


@pytest.mark.parametrize("dtype", [bf16, i8])
def test_a_program_with_a_gemm_of_each_type(dtype: Any) -> None:
    """Float GEMMs too are the same bits with the fast paths on and off (f32 sums in the Reducer's order, issue
    23), and equal the order written out by hand (tests/reducer_order.py, checked inside the run)."""
    out = compare(_first_with_gemm(dtype))
    assert out.dm is not None


def test_a_program_with_the_gemm_examples_weight_blocks() -> None:
    """A bf16 GEMM shaped as the GEMM example's (4 weight blocks a TRF Row, the activations broadcast over them:
    32 lanes, ``contraction.float-tree32-bf16dp`` on a CPU with VDPBF16PS) is the same bits on and off."""
    seed = next(s for s in range(DEFAULT, DEFAULT + 1000)
                if any(st.kind == "gemm" and wide_gemm(st.args) for st in program(s)))
    out = compare(seed)
    assert any(step.startswith("gemm: done") for step in out.steps)


def test_a_program_with_a_padded_stream_in_pooled_buffers() -> None:
    """A stream whose packet is half padding (not masked: the sub context) in a program whose stream buffers the
    row pool lends, small as they are (``fetch.padded-known``; a new pooled buffer: ``fetch.padded-cut-read``)."""
    for seed in range(DEFAULT, DEFAULT + 1000):  # (the first such program whose padded stream is done)
        steps = program(seed)
        padded = [i for i, st in enumerate(steps) if st.kind == "stream" and padded_variant(st.args)]
        if pooled_small(steps) and padded and any(run(steps).steps[i] == "stream: done" for i in padded):
            break
    out = compare(seed)
    assert any(out.steps[i] == "stream: done" for i in padded)
