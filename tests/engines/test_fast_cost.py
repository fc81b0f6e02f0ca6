"""``dma.cost-shared-load`` (visa/engines/dma/fast_cost.py) against the reference's cost model (issue 24): the
cost of DMAs run by several engines — each engine's HBM time read off the whole DMA's load model — is the
reference's, field by field (total, parts, channels, the reasons), for HBM → DM, DM → HBM, DM → DM and
HBM → HBM moves of several types at random addresses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, bf16, fastpaths, i8, i32
from visa.engines.dma import cost
from visa.engines.dma.config import Side
from visa.engines.dma.plan import plan

AX = AxisSet(A=64, B=512)
M = AX.m
HBM = {"Chip": M["1"], "Element": M["A, B"]}
HBM_T = {"Chip": M["1"], "Element": M["B, A"]}
DM = {"Chip": M["1"], "Cluster": M["A / 32"], "Slice": M["A % 32, 1 # 8"], "Element": M["B"]}
DM_T = {"Chip": M["1"], "Cluster": M["1 # 2"], "Slice": M["A # 256"], "Element": M["B"]}
MOVES = [("hbm", HBM, "dm", DM), ("dm", DM, "hbm", HBM), ("dm", DM, "dm", DM_T), ("hbm", HBM, "hbm", HBM),
         ("hbm", HBM, "hbm", HBM_T)]
_reference = cost._cycles.__wrapped__  # type: ignore[attr-defined]  # (the model, not its cache)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(MOVES), st.sampled_from([i8, bf16, i32]), st.integers(0, 255), st.integers(0, 255))
def test_each_engines_hbm_time_is_the_references(move: tuple[str, Any, str, Any], dtype: Any, a: int,
                                                b: int) -> None:
    src_m, src_l, dst_m, dst_l = move
    p = plan(RNGD, dtype, Side.of(src_m, src_l, a * 256, name="x"), Side.of(dst_m, dst_l, b * 256, name="y"))
    fast = _reference(p, None)
    with fastpaths.disabled("dma.cost-shared-load"):
        reference = _reference(p, None)
    assert fast == reference


def test_the_moves_run_on_several_engines() -> None:
    """(The property above is about DMAs whose commands run on several engines: these do.)"""
    engines = [cost.cycles(plan(RNGD, i8, Side.of(s, sl, 0, name="x"), Side.of(d, dl, 0, name="y"))).engines
               for s, sl, d, dl in MOVES]
    assert max(engines) > 1
