"""The timing model's invariants, as properties over random DMAs and passes (design ARCHITECTURE.md principle 8,
issue 22): more bytes never cost fewer cycles; the same parts on more engines are never slower than one after
another; no utilisation exceeds 100%; no track is busy longer than the makespan; a reduction over ``n`` flits
costs ``n`` plus a constant.  Sizes stay small (no sampling in the DMA model, a few operations per schedule)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from visa import RNGD, AccumulationKind, AxisSet, BranchMode, Context, TrfAddress, bf16, i32
from visa import dtypes as dt
from visa.engines.dma import DmaPlan, cycles
from visa.engines.timing import pass_cost
from visa.engines.vector import IntraSliceReduceOpI32
from visa.hw import bandwidth
from visa.testing import place_dm

SL = RNGD.dm.slice_address_space_bytes
DMN = RNGD.dm.slices_per_dmn * SL
MEDIA = [("hbm", "dm"), ("dm", "hbm"), ("hbm", "hbm"), ("dm", "dm")]
#: strides that walk HBM rows, banks and channels, DM slices and DMNs
STRIDES = [8, 64, 256, 512, 1024, 4096, 1 << 13, 1 << 14, 1 << 17, 1 << 21, SL, DMN]


@st.composite
def dma_plans(draw: st.DrawFn) -> tuple[tuple[str, str], list[tuple[int, int, int]], tuple[int, int]]:
    """A DMA's media, its loops (outermost first, the last the packet) and bases, as the manual writes them."""
    media = draw(st.sampled_from(MEDIA))
    packet = draw(st.sampled_from([8, 40, 64, 256, 264, 1024, 4096]))
    loops = [(draw(st.integers(1, 6)), draw(st.sampled_from(STRIDES)), draw(st.sampled_from(STRIDES)))
             for _ in range(draw(st.integers(1, 3)))]
    base = (draw(st.integers(0, 64)) * 8, draw(st.integers(0, 64)) * 8)
    return media, [*loops, (packet, 1, 1)], base


def _cost(media: tuple[str, str], loops: list[tuple[int, int, int]], base: tuple[int, int], **kw: Any) -> int:
    return cycles(DmaPlan.from_loops(RNGD, dt.i8, media, loops, base, **kw)).total


@settings(max_examples=150, deadline=None)
@given(dma_plans(), st.integers(1, 5))
def test_more_bytes_never_cost_fewer_cycles(plan: Any, more: int) -> None:
    """The same DMA with its outermost loop longer moves a superset of its packets: never fewer cycles."""
    media, loops, base = plan
    n, a, b = loops[0]
    assert _cost(media, loops, base) <= _cost(media, [(n + more, a, b), *loops[1:]], base)


@settings(max_examples=150, deadline=None)
@given(dma_plans(), st.integers(2, 4), st.sampled_from([(1 << 18, 2 * DMN), (1 << 20, 8 * DMN), (1 << 14, DMN)]))
def test_more_engines_are_never_slower_than_the_same_parts_serialised(plan: Any, engines: int,
                                                                      stride: tuple[int, int]) -> None:
    """A transfer spread over ``engines`` engines costs no more than its parts one after another: on one engine
    as commands, or as separate transfers (each paying its startup, L2467)."""
    media, loops, base = plan
    spread = _cost(media, loops, base, spatial=[(engines, *stride)])
    as_commands = _cost(media, loops, base, commands=[(engines, *stride)])
    one_by_one = sum(_cost(media, loops, (base[0] + k * stride[0], base[1] + k * stride[1]))
                     for k in range(engines))
    assert spread <= as_commands and spread <= one_by_one


# ------------------------------------------------------------------------------------------ whole schedules

AX = AxisSet(R=64, C=64, T=32, P=8, G=4)
m = AX.m


def _run(ctx: Context, steps: list[tuple[str, int]]) -> None:
    """Random work on one device: DMAs (HBM → DM, DM → HBM), main and sub fetch → commit passes, TRF loads and
    main contractions, at the addresses ``steps`` names (some overlap, which makes hazards)."""
    rng = np.random.default_rng(0)
    x = dt.random_values(i32, (64, 64), rng)
    src = place_dm(ctx, x, i32, m["1"], m["1 # 2"], m["R / 8 # 256"], m["R % 8, C"], 0, axes="R C")
    w = place_dm(ctx, dt.random_values(bf16, (64,), rng), bf16, m["1"], m["1 # 2"], m["1 # 256"], m["C"], 1 << 16,
                 axes="C")
    hbm = src.to_hbm(m["R, C"], ctx.tdma, 0)
    for kind, k in steps:
        at = (k % 4) << 12
        if kind == "load":
            hbm.to_dm(m["1 # 2"], m["R / 8 # 256"], m["R % 8, C"], ctx.tdma, (1 << 17) + at)
        elif kind == "store":
            src.to_hbm(m["R, C"], ctx.tdma, (1 << 20) * (1 + k % 4))
        elif kind in ("main", "sub"):
            tu = ctx.main if kind == "main" else ctx.sub
            (tu.begin(src.view()).fetch(i32, m["R % 8, C / 8"], m["C % 8"])
             .commit(m["R % 8, C"], (1 << 18) + at))
        elif kind == "trf":
            half = TrfAddress.FirstHalf if k % 2 else TrfAddress.SecondHalf
            trf = (ctx.sub.begin(w.view()).fetch(bf16, m["1"], m["C"]).collect(m["C / 16"], m["C % 16"])
                   .to_trf(m["1"], m["C"], half))
            (ctx.main.begin(w.view()).fetch(bf16, m["1"], m["C"]).collect(m["C / 16"], m["C % 16"])
             .align(m["C / 32"], m["C % 32"], trf).contract(m["1"])
             .accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved)
             .cast(bf16, m["1 # 16"]).commit(m["1 # 8"], (3 << 17) + at))


STEPS = st.lists(st.tuples(st.sampled_from(["load", "store", "main", "sub", "trf"]), st.integers(0, 7)),
                 min_size=1, max_size=8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(STEPS)
def test_no_utilisation_exceeds_100_percent_and_no_track_outlasts_the_makespan(steps: list[tuple[str, int]]) -> None:
    ctx = Context.acquire()
    _run(ctx, steps)
    rep = ctx.report()
    for line in [rep.roofline, *(p.roofline for p in rep.passes)]:
        assert line.utilisation <= 1 + 1e-9, str(line)
    for t in rep.tracks:
        assert 0 <= t.busy <= rep.makespan and t.idle >= 0 and t.critical <= t.busy, t
    # concurrent DMAs share the HBM channels: every byte at no more than 1,536 B/cycle per chip
    hbm = sum(op.traffic.get("HBM", 0) for op in ctx.schedule.ops)
    assert hbm / bandwidth(RNGD, "HBM") <= rep.makespan
    for op in ctx.schedule.ops:
        if op.track in ("main", "sub"):  # a command costs at least its overhead and its slowest engine
            assert op.cycles >= pass_cost(RNGD, op.engines).total


def test_concurrent_dmas_share_the_hbm_channels_l2602() -> None:
    """Two DMAs on two engines, each busy 1000 cycles on HBM channel 3 after its startup: the channel serves one
    at a time (L2602, L2980), so the second lasts until the channel has served both; one on another channel
    overlaps freely."""
    from visa.engines.common import EngineReport

    ctx = Context.acquire()

    def dma(lane: str, channel: int) -> Any:
        report = EngineReport("dma", "", 1000, latency=500, hbm_channels=((channel, 1000.0),))
        return ctx.record("tdma", lane, [report], lanes=[(0, lane)])

    a, b, c = dma("dma0", 3), dma("dma1", 3), dma("dma2", 4)
    assert (a.start, a.end) == (0, 1500)
    assert b.start == 0 and b.end == 2500 and b.stretch == 1000 and any("HBM channels" in n for n in b.notes)
    assert (c.start, c.end, c.stretch) == (0, 1500, 0)


# ------------------------------------------------------------------------------------------ reductions


def _reduce_pass(n: int) -> int:
    """Cycles of a Vector Engine pass that reduces ``n`` flits per slice to one (AddSat over Time)."""
    ax = AxisSet(T=n, P=4)
    ctx = Context.acquire()
    x = dt.random_values(i32, (n, 4), np.random.default_rng(n))
    d = place_dm(ctx, x, i32, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"], ax.m["T, P # 8"], 0, axes="T P")
    (ctx.main.begin(d.view()).fetch(i32, ax.m["T"], ax.m["P # 8"]).collect(ax.m["T"], ax.m["P # 8"])
     .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
     .vector_trim_way4(ax.m["P"])
     .vector_intra_slice_reduce("T", ax.m["1"], ax.m["P"], IntraSliceReduceOpI32.AddSat)
     .vector_pad_way8(ax.m["P # 8"]).vector_final().commit(ax.m["P # 8"], 1 << 16))
    return ctx.schedule.ops[-1].cycles


def _accumulate_pass(n: int) -> int:
    """Cycles of a contraction that accumulates ``n`` time steps per slice into one output flit."""
    ax = AxisSet(T=n, K=32)
    ctx = Context.acquire()
    rng = np.random.default_rng(n)
    x = place_dm(ctx, dt.random_values(bf16, (n, 32), rng), bf16, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"],
                 ax.m["T, K"], 0, axes="T K")
    w = place_dm(ctx, dt.random_values(bf16, (32,), rng), bf16, ax.m["1"], ax.m["1 # 2"], ax.m["1 # 256"],
                 ax.m["K"], 1 << 16, axes="K")
    trf = (ctx.sub.begin(w.view()).fetch(bf16, ax.m["1"], ax.m["K"]).collect(ax.m["K / 16"], ax.m["K % 16"])
           .to_trf(ax.m["1"], ax.m["K"], TrfAddress.Full))
    (ctx.main.begin(x.view()).fetch(bf16, ax.m["T"], ax.m["K"]).collect(ax.m["T, K / 16"], ax.m["K % 16"])
     .align(ax.m["T"], ax.m["K"], trf).contract(ax.m["1"])
     .accumulate(ax.m["1"], ax.m["1 # 8"], AccumulationKind.Interleaved)
     .cast(bf16, ax.m["1 # 16"]).commit(ax.m["1 # 8"], 1 << 17))
    return ctx.schedule.ops[-1].cycles


@settings(max_examples=12, deadline=None)
@given(st.integers(3, 600))
def test_a_reduction_over_n_flits_costs_n_plus_a_constant(n: int) -> None:
    """The Vector Engine's reducer (L5566–5571) and the Contraction Engine's accumulator (L4543–4544): the pass
    streams its ``n`` flits once; the first output's delay is within them, not added again."""
    assert _reduce_pass(n) - n == _reduce_pass(2) - 2
    assert _accumulate_pass(n) - 2 * n == _accumulate_pass(2) - 4  # collect delivers two flits per step
