"""Heterogeneous streams (issue 27 item 7): per-slice fetch sequencers (manual L1746–1748) and per-DMN DMA
streams (the heterogeneous aggregate operation, L2482–2504).

- ``ctx.main.begin_heterogeneous(m["G"], views)``: the slices whose Slice coordinate of G is g run their own
  sequencer over ``views[g]``; the stream is one stream; the fetch costs its slowest sequencer.
- ``src.to_dm(…, stream={dmn: (Time, Packet)})``: each DMN moves its part with its own stream; the bytes are the
  logical move's; the cost is the slowest DMN's.
"""

from __future__ import annotations

import numpy as np
import pytest

from visa import AxisSet, Context, HostTensor, i32
from visa.engines.dma.cost import cycles as dma_cycles
from visa.engines.dma.plan import plan as dma_plan
from visa.errors import LayoutError, VisaError
from visa.testing import place_dm

AX = AxisSet(G=4, R=32, D=8)
m = AX.m


def _ctx() -> Context:
    ctx = Context.acquire()
    ctx.num_chips = 1
    return ctx


def test_each_slice_group_runs_its_own_fetch_sequencer_L1748() -> None:
    """Four slice groups, each reading its own eight rows of a table every slice holds (another base address per
    group); a fifth pattern reads its rows transposed (another sequencer, same stream)."""
    ctx = _ctx()
    x = np.arange(32 * 8, dtype=np.int32).reshape(32, 8)
    t = place_dm(ctx, np.broadcast_to(x, (4, 32, 8)), i32, m["1"], m["1 # 2"], m["G # 256"], m["R, D"], 0,
                 axes="G R D")
    views = [t.view().tile(m["R"], 8, m["R = 8, D"], 8 * g) for g in range(4)]
    s = ctx.main.begin_heterogeneous(m["G"], views).fetch(i32, m["R = 8"], m["D"])
    got = s.data.values[0, 0, :4]  # (group, R, D)
    assert np.array_equal(got, x.reshape(4, 8, 8))
    report = s.reports[-1]
    assert dict(report.details)["sequencers"].startswith("heterogeneous: 4 slice groups")
    assert report.cycles == 8  # every group in parallel: eight 32-byte packets each
    out = s.collect(m["R = 8"], m["D"]).commit(m["R = 8, D"], 1 << 14)
    assert np.array_equal(out.logical(axes="G R D"), x.reshape(4, 8, 8))
    op = ctx.schedule.ops[-1]
    assert sum(s.bytes_per_unit for s in op.reads.spans if s.memory == "dm") == 32 * 8 * 4  # every view read


def test_heterogeneous_fetch_refusals_L1748() -> None:
    ctx = _ctx()
    t = place_dm(ctx, np.zeros((4, 32, 8), np.int32), i32, m["1"], m["1 # 2"], m["G # 256"], m["R, D"], 0,
                 axes="G R D")
    views = [t.view().tile(m["R"], 8, m["R = 8, D"], 8 * g) for g in range(3)]
    with pytest.raises(LayoutError, match="4 groups for 3 views") as err:
        ctx.main.begin_heterogeneous(m["G"], views)
    assert err.value.level == "Slice" and err.value.axis == "G"
    with pytest.raises(VisaError):
        ctx.main.begin_heterogeneous(m["G"], [])


def test_each_dmn_moves_its_part_with_its_own_stream_L2482_L2504() -> None:
    """An HBM → DM move over the 64 slices of two DMNs (32 slices each, L2868), DMN 1 with a stream of 4-element
    packets (two per row), DMN 0 row by row: the bytes are the homogeneous move's; the cost is the slowest DMN's."""
    ax = AxisSet(S=64, D=8)
    mm = ax.m
    ctx = _ctx()
    x = np.arange(64 * 8, dtype=np.int32).reshape(64, 8)
    hbm = HostTensor.from_numpy(x, i32, mm["S, D"]).to_hbm(mm["1"], mm["S, D"], ctx.pdma, 0)
    whole = (mm["S"], mm["D"])
    halves = (mm["S, D / 4"], mm["D % 4"])
    streams = {0: whole, 1: halves}
    out = hbm.to_dm(mm["1 # 2"], mm["S # 256"], mm["D"], ctx.tdma, 0, stream=streams)
    assert np.array_equal(out.logical(axes="S D"), x)
    op = ctx.schedule.ops[-1]
    assert "heterogeneous: 2 DMN streams" in op.name
    from visa.engines.dma.config import Side

    src = Side.of("hbm", {"Chip": mm["1"], "Element": mm["S, D"]}, 0)
    dst = Side.of("dm", {"Chip": mm["1"], "Cluster": mm["1 # 2"], "Slice": mm["S # 256"], "Element": mm["D"]}, 0)
    slowest = max(dma_cycles(dma_plan(ctx.hw, i32, src, dst, stream=s)).total for s in (whole, halves))
    assert op.cycles == slowest
    with pytest.raises(LayoutError, match="missing"):
        hbm.to_dm(mm["1 # 2"], mm["S # 256"], mm["D"], ctx.tdma, 4096, stream={0: whole})
    with pytest.raises(VisaError, match="DMN 1"):
        hbm.to_dm(mm["1 # 2"], mm["S # 256"], mm["D"], ctx.tdma, 4096, stream={0: whole, 1: (mm["D"], mm["S"])})
