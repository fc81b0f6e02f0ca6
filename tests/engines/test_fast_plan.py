"""``dma.plan-rebase`` (visa/engines/dma/fast_plan.py) against DMA planning from scratch (issue 24): a plan moved
from another address with the same remainder is the plan the reference derives at the new address — the same
loops, engines, packet, sequencer bases and sides — for HBM → DM, DM → HBM, DM → DM and HBM → HBM moves of
i8, bf16 and i32 tensors at random addresses (the address rules, L2424–2427, looked at modulo a few bytes); and
a misplaced destination is refused with the reference's own message."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, bf16, fastpaths, i8, i32
from visa.engines.dma import fast_plan
from visa.engines.dma.config import Side
from visa.engines.dma.plan import _plan as _derive
from visa.engines.dma.plan import plan
from visa.errors import VisaError

AX = AxisSet(A=64, B=512)
M = AX.m
HBM = {"Chip": M["1"], "Element": M["A, B"]}
DM = {"Chip": M["1"], "Cluster": M["A / 32"], "Slice": M["A % 32, 1 # 8"], "Element": M["B"]}
DM_T = {"Chip": M["1"], "Cluster": M["1 # 2"], "Slice": M["A # 256"], "Element": M["B"]}
MOVES = [("hbm", HBM, "dm", DM), ("dm", DM, "hbm", HBM), ("dm", DM, "dm", DM_T), ("hbm", HBM, "hbm", HBM)]


def _fields(p: Any) -> tuple[Any, ...]:
    return (str(p), p.spatial, p.commands, p.loops, p.base, p.read, p.write, p.src, p.dst, p.time.key,
            p.packet.key, p.explicit, p.src.name, p.dst.name)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MOVES), st.sampled_from([i8, bf16, i32]), st.integers(0, 63), st.integers(0, 63),
       st.integers(1, 20))
def test_a_moved_plan_is_the_plan_derived_there(move: tuple[str, Any, str, Any], dtype: Any, a: int, b: int,
                                                k: int) -> None:
    src_m, src_l, dst_m, dst_l = move
    unit = 64  # a multiple of every alignment; the DM side stays inside a slice's 512 KiB
    step = 1 << 12 if "dm" in (src_m, dst_m) else 1 << 20
    first = (Side.of(src_m, src_l, a * unit, name="x"), Side.of(dst_m, dst_l, b * unit, name="y"))
    far = 1 << 18  # (beyond every tensor's extent here: a plan is moved only that far from the unit's ends)
    moved = (Side.of(src_m, src_l, far + a * unit + k * step, name="x'"),
             Side.of(dst_m, dst_l, far + b * unit + k * step, name="y'"))
    plan(RNGD, dtype, *first)  # the plan at the first addresses (and the home one) is derived and kept
    if fast_plan.REBASE.on:  # (far enough from both ends of the unit: moved, not derived)
        assert fast_plan.plan(RNGD, dtype, *moved, "dma", True, _derive) is not None
    fast = plan(RNGD, dtype, *moved)
    with fastpaths.disabled("dma.plan-rebase"):
        reference = plan(RNGD, dtype, *moved)
    assert _fields(fast) == _fields(reference)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(MOVES), st.sampled_from([i8, bf16, i32]), st.integers(0, 63), st.integers(0, 63),
       st.integers(1, 20), st.booleans())
def test_a_plan_with_one_side_near_an_end_moves_the_other(move: tuple[str, Any, str, Any], dtype: Any, a: int,
                                                          b: int, k: int, keep_src: bool) -> None:
    """``dma.plan-rebase-one-side``: one side within its extent of the unit's start (not moved), the other far
    from both ends at addresses ``k`` steps apart: the plan is the one the reference derives there."""
    src_m, src_l, dst_m, dst_l = move
    unit = 64
    step = 1 << 12 if "dm" in (src_m, dst_m) else 1 << 20
    far = 1 << 18
    near = (a * unit, far + b * unit) if keep_src else (far + a * unit, b * unit)
    for j in (0, k):
        at = (near[0] + (0 if keep_src else j * step), near[1] + (j * step if keep_src else 0))
        sides = (Side.of(src_m, src_l, at[0], name=f"x{j}"), Side.of(dst_m, dst_l, at[1], name=f"y{j}"))
        fast = plan(RNGD, dtype, *sides)
        with fastpaths.disabled("dma.plan-rebase-one-side", "dma.plan-rebase"):
            reference = plan(RNGD, dtype, *sides)
        assert _fields(fast) == _fields(reference)


def test_a_misplaced_destination_is_the_references_refusal() -> None:
    src = Side.of("hbm", HBM, 0, name="x")
    plan(RNGD, i8, src, Side.of("dm", DM, 0, name="y"))
    bad = Side.of("dm", DM, (512 << 10) - 64, name="y")  # runs past the slice's DM
    with pytest.raises(VisaError) as fast:
        plan(RNGD, i8, src, bad)
    with fastpaths.disabled("dma.plan-rebase"), pytest.raises(VisaError) as reference:
        plan(RNGD, i8, src, bad)
    assert str(fast.value) == str(reference.value)


def test_the_period_is_a_multiple_of_every_alignment() -> None:
    d = RNGD.dma
    every = fast_plan.period(RNGD)
    assert every % d.request_bytes == 0 and every % d.hbm_to_dm_align == 0
    assert all(every % v == 0 for t in (d.read_address_align, d.write_address_align, d.packet_align)
               for v in t.values())
