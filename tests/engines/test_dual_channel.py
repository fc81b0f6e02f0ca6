"""Dual channel mode (manual L2119–2142, L3046–3053; issue 27 item 1): ``ctx.main.begin(view, dual_channel=True)``.

The main and sub contexts' channels combine into a 64-byte data path: the channel engines (fetch at a full
32-byte fetch size, switch, collect) move twice the bytes per cycle, so a fetch-bound pass takes half the
cycles; the sub context is unavailable meanwhile, so an independent sub-context pass issued during it waits.
The bytes computed are the same in either mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import AccumulationKind, AxisSet, Context, TrfAddress, i8, i32
from visa.engines import channel
from visa.engines.common import EngineReport
from visa.errors import TypestateError, VisaError
from visa.hw import RNGD
from visa.testing import place_dm, place_trf

AX = AxisSet(J=8192, N=8, B=2048)
m = AX.m


def _gemv(dual: bool) -> tuple[Context, Any, Any]:
    """A fetch-bound contraction pass: 8192 i8 activations against 8 TRF rows (two 32-byte flits per 64-byte
    computation packet, so the single-channel fetch takes twice the aligner's steps)."""
    ctx = Context.acquire()
    ctx.num_chips = 1
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, 8192).astype(np.int8)
    w = rng.integers(-128, 128, (8, 8192)).astype(np.int8)
    xd = place_dm(ctx, x, i8, m["1"], m["1 # 2"], m["1 # 256"], m["J"], 0)
    trf = place_trf(ctx, w, i8, m["1"], m["1 # 2"], m["1 # 256"], m["N"], m["J"], TrfAddress.Full, axes="N J")
    out = (ctx.main.begin(xd.view(), dual_channel=dual)
           .fetch(i8, m["J / 64, J % 64 / 32"], m["J % 32"]).collect(m["J / 64, J % 64 / 32"], m["J % 32"])
           .align(m["J / 64"], m["J % 64"], trf).contract(m["1"])
           .accumulate(m["1"], m["N"], AccumulationKind.Interleaved).commit(m["N"], 1 << 14))
    want = w.astype(np.int64) @ x.astype(np.int64)
    assert np.array_equal(out.logical(axes="N").astype(np.int64), want)
    return ctx, ctx.schedule.ops[-1], out


def test_a_fetch_bound_pass_takes_half_the_cycles_in_dual_channel_L2137_L2142() -> None:
    _, single, _ = _gemv(False)
    _, dual, _ = _gemv(True)
    one = {r.engine: r.cycles for r in single.engines}
    two = {r.engine: r.cycles for r in dual.engines}
    assert one["fetch"] == 2 * 128 and two["fetch"] == 128  # 8192 B: 32 B vs 64 B per cycle
    assert two["collect"] * 2 == one["collect"]
    assert one["aligner"] == two["aligner"] == 128  # one 64-byte computation packet per cycle
    lat = sum(r.latency for r in single.engines)
    cmd = RNGD.timing.full_command_cycles  # the fitted per-command overhead (visa/engines/timing.py)
    # the command, the fill, then the slowest engine's busy cycles: only the busy part halves
    assert single.cycles == cmd + lat + 256 and dual.cycles == cmd + lat + 128
    fetch = next(r for r in dual.engines if r.engine == "fetch")
    assert ("channel", "dual, 64 B/cycle (L2127, L2140)") in fetch.details
    assert (0, "sub") in dual.lanes and (0, "sub") not in single.lanes


def test_the_sub_context_waits_for_a_dual_channel_pass_L2142() -> None:
    """While a dual-channel pass runs, an independent sub-context pass issued meanwhile starts after it; in single
    channel mode the two contexts overlap."""
    for dual in (False, True):
        ctx, op, _ = _gemv(dual)
        b = place_dm(ctx, np.arange(2048, dtype=np.int32), i32, m["1"], m["1 # 2"], m["1 # 256"], m["B"], 1 << 15)
        ctx.sub.begin(b.view()).fetch(i32, m["B / 8"], m["B % 8"]).collect(m["B / 8"], m["B % 8"]).commit(
            m["B"], 1 << 16)
        sub = ctx.schedule.ops[-1]
        assert sub.track == "sub"
        if dual:
            assert sub.start >= op.end and sub.waits_for == op.index
        else:
            assert sub.start < op.end


def test_dual_channel_is_a_main_context_mode_L3052() -> None:
    ctx = Context.acquire()
    ctx.num_chips = 1
    x = place_dm(ctx, np.zeros(2048, dtype=np.int32), i32, m["1"], m["1 # 2"], m["1 # 256"], m["B"], 0)
    with pytest.raises(TypestateError) as err:
        ctx.sub.begin(x.view(), dual_channel=True)
    assert "ctx.main.begin(view, dual_channel=True)" in (err.value.fix or "")
    with pytest.raises(VisaError):
        ctx.main.begin(x.view(), dual_channel="yes")  # type: ignore[arg-type]


def test_the_rule_in_one_place() -> None:
    """:func:`visa.engines.channel.dual_cycles`: a channel engine moving a full flit per cycle halves; a fetch of
    8-byte reads is bound by its sequencer, not the channel; engines off the channel do not change."""
    assert channel.width_bytes(RNGD, False) == 32 and channel.width_bytes(RNGD, True) == 64
    full = EngineReport("fetch", "", 101, details=(("fetch_size", 32),))
    narrow = EngineReport("fetch", "", 101, details=(("fetch_size", 8),))
    assert channel.dual_cycles(RNGD, full) == 51 and channel.dual_cycles(RNGD, narrow) == 101
    assert channel.dual_cycles(RNGD, EngineReport("collect", "", 7)) == 4
    assert channel.dual_cycles(RNGD, EngineReport("vector", "", 7)) == 7
    assert channel.dual_cycles(RNGD, EngineReport("commit", "", 7)) == 7
