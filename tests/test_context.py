"""The host side: Context, its DMA and Tensor Unit contexts, @device and launch, the schedule (manual L36–67,
L150–155, "Scheduling" L7042–7070)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from visa import RNGD, RNGD_S, AxisSet, Context, device, launch
from visa import dtypes as dt
from visa.context import DmaContext, TuContext
from visa.engines.common import EngineReport
from visa.errors import HardwareLimitError, LayoutError, TypestateError, VisaError
from visa.tensors.handles import HbmTensor, HostTensor

ax = AxisSet(A=2048)
m = ax.m


def test_acquire_gives_the_four_contexts() -> None:
    ctx = Context.acquire()
    assert ctx.hw is RNGD
    assert isinstance(ctx.pdma, DmaContext) and ctx.pdma.kind == "pdma"
    assert isinstance(ctx.tdma, DmaContext) and ctx.tdma.kind == "tdma"
    assert isinstance(ctx.main, TuContext) and ctx.main.kind == "main"
    assert isinstance(ctx.sub, TuContext) and ctx.sub.kind == "sub"
    assert repr(ctx.tdma) == "ctx.tdma"
    assert Context.acquire(hw=RNGD_S).hw is RNGD_S


def test_launch_returns_the_kernels_result_and_sets_the_chip_count() -> None:
    ctx = Context.acquire()

    @device(chip=2)
    def kernel(ctx: Context, a: int) -> int:
        assert ctx.num_chips == 2
        return a + 1

    assert launch(kernel, ctx, 41) == 42


def test_launch_refuses_plain_functions_and_too_many_chips() -> None:
    ctx = Context.acquire()
    with pytest.raises(TypestateError):
        launch(lambda ctx: None, ctx)

    @device(chip=RNGD.max_chips + 1)
    def big(ctx: Context) -> None:
        return None

    with pytest.raises(HardwareLimitError) as err:
        launch(big, ctx)
    assert err.value.level == "Chip" and err.value.fix
    with pytest.raises(VisaError) as err:
        device(chip=0)
    assert err.value.level == "Chip" and err.value.fix


def test_launch_checks_the_arguments_chips_l1079() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["A"], np.random.default_rng(0))
    h = x.to_hbm(m["1 # 2"], m["A"], ctx.pdma, 0)

    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[Any, Any, Any]) -> None:
        return None

    with pytest.raises(LayoutError) as err:
        launch(kernel, ctx, h)
    assert err.value.level == "Chip" and err.value.fix
    text = err.value.describe()  # the call, the level, the mapping, the rule and the fix (the plugin says the same)
    assert text.startswith('launch: Chip m["1 # 2"]: argument ') and "spans 2 chip(s); the kernel runs on 1" in text
    assert 'Chip = m["1 # 1"]' in text and "launch on 2 chip(s)" in text and "L1079" in text
    assert ctx.num_chips is None  # refused before anything changed


def test_the_host_has_no_chip_count_between_launches_l1079() -> None:
    # regression: the first launch's chip count stayed, so data for a two-chip kernel could not be placed after
    # a one-chip kernel ran ("Chip size must equal the kernel's chip count 1")
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["A"], np.random.default_rng(0))

    @device(chip=1)
    def one(ctx: Context, x: HbmTensor[Any, Any, Any]) -> int:
        return ctx.num_chips or 0

    @device(chip=2)
    def two(ctx: Context, x: HbmTensor[Any, Any, Any]) -> int:
        return ctx.num_chips or 0

    assert launch(one, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0)) == 1
    assert ctx.num_chips is None
    assert launch(two, ctx, x.to_hbm(m["1 # 2"], m["A"], ctx.pdma, 1 << 20)) == 2


def test_host_code_is_synchronous_and_operations_are_recorded_per_track() -> None:
    ctx = Context.acquire()
    x = HostTensor.rand(dt.i32, m["A"], np.random.default_rng(0))
    h = x.to_hbm(m["1"], m["A"], ctx.pdma, 0)  # done when it returns
    assert np.array_equal(h.logical(), x.numpy())
    d = h.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
    h2 = d.to_hbm(m["A"], ctx.tdma, 1 << 20)
    ops = ctx.schedule.ops
    assert [op.track for op in ops] == ["pdma", "tdma", "tdma"]
    # each waits for its input; across contexts (pdma → tdma) with the hand-off (issue 22)
    assert ops[1].start == ops[0].end + RNGD.timing.context_handoff_cycles and ops[2].start == ops[1].end
    assert d.ready_at == ops[1].end and h2.ready_at == ops[2].end
    assert ops[0].engines[0].engine == "pdma" and ops[1].engines[0].engine == "dma"
    assert ops[1].cycles >= RNGD.dma.startup_cycles
    assert "tdma" in ctx.report_text() and "dma" in ctx.engine_cycles()


def test_tracks_run_in_parallel_and_a_context_runs_one_operation_at_a_time() -> None:
    ctx = Context.acquire()
    a = ctx.record("tdma", "a", [EngineReport("dma", "", 100)])
    b = ctx.record("main", "b", [EngineReport("fetch", "", 50, latency=5)])
    c = ctx.record("main", "c", [EngineReport("fetch", "", 10)])
    d = ctx.record("tdma", "d", [EngineReport("dma", "", 10)])
    assert (a.start, a.end) == (0, 100)
    assert (b.start, b.end) == (0, 55)  # another track: concurrent
    assert c.start == 55  # the same context waits (L2930)
    assert d.start == 55 and d.lanes != a.lanes  # another DMA engine is free; issued in order (L7046)
    assert ctx.schedule.makespan == 100


def test_trace_is_a_chrome_trace(tmp_path: Any) -> None:
    ctx = Context.acquire()
    ctx.record("main", "pass", [EngineReport("fetch", "cfg", 7)])
    trace = ctx.trace()
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and "name" in e["args"]}
    assert {"main", "device 0 (RNGD) chip 0"} <= names
    assert {e["pid"] for e in ctx.trace(pid=3)["traceEvents"]} == {3 * 64 + 1}
    path = tmp_path / "t.json"
    ctx.write_trace(str(path))
    assert json.loads(path.read_text())["traceEvents"]


def test_launch_with_the_wrong_arguments_is_a_refusal_not_a_type_error() -> None:
    @device(chip=1)
    def kernel(ctx: Context, x: object) -> None:
        """A kernel of one argument."""

    ctx = Context.acquire()
    with pytest.raises(TypestateError, match="cannot take these 2 argument") as err:
        launch(kernel, ctx, 1, 2)
    assert err.value.call == "launch" and err.value.fix
    assert ctx.num_chips is None  # nothing changed


def test_contexts_are_freed_unless_held() -> None:
    """A device nothing refers to any more is freed with its memories (a notebook or a test suite keeps no
    device it dropped); inside ``holding()`` (what ``visa run`` and ``visa trace`` use) each one acquired stays
    alive for its report, even after the script dropped it."""
    import gc

    from visa.context import acquired_contexts, holding

    def make() -> None:
        Context.acquire()

    gc.collect()
    before = len(acquired_contexts())
    make()
    gc.collect()
    assert len(acquired_contexts()) == before
    with holding() as made:
        make()
        gc.collect()
        assert len(made) == 1 and made[0] in acquired_contexts()
