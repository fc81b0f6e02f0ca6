"""The compact schedule record (``Schedule.timeline`` off, issue 25's peak memory): the same cycles, report, trace
and critical path as the whole record, and a fraction of the memory held per operation (measured with
tracemalloc, never a clock)."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import numpy as np
import pytest

from tests.test_schedule import _weights_kernel
from visa.engines.common import EngineReport
from visa.hw import RNGD
from visa.memory.footprint import EMPTY, Footprint, Span
from visa.schedule import Schedule


def test_the_compact_record_reports_the_same_numbers_as_the_whole_one() -> None:
    # dot products per weight tile, double-buffered: hazards across contexts, DMA engines, a critical path
    whole, compact = (_weights_kernel(double=True, tiles=4, timeline=t)[0] for t in (True, False))
    a, b = whole.schedule, compact.schedule
    assert [(op.track, op.start, op.cycles, op.waits_for, op.lanes) for op in a.ops] == \
        [(op.track, op.start, op.cycles, op.waits_for, op.lanes) for op in b.ops]
    assert a.makespan == b.makespan and a.device_span(0) == b.device_span(0)
    assert [op.index for op in a.critical_path()] == [op.index for op in b.critical_path()]
    assert whole.report().text(critical=True) == compact.report().text(critical=True)
    assert whole.engine_cycles() == compact.engine_cycles()
    assert whole.trace() == compact.trace()
    # what it let go of: the retired operations' footprints (the last ones, maybe in flight, keep theirs)
    retired = [op for op in b.ops if not any(op is x for x in b.active)]
    assert retired and all(op.reads is EMPTY and op.writes is EMPTY and op.bank_load == () for op in retired)
    assert any(op.reads for op in a.ops[:len(retired)])


def _footprint(k: int, intervals: int) -> Footprint:
    lo = np.arange(intervals, dtype=np.int64) * 256 + (k % 7) * 64
    return Footprint((Span.of("dm", 1, lo, lo + 64, units=range(256)), Span.of("hbm", 1, lo, lo + 32)))


def _held_by(timeline: bool, ops: int, kinds: int = 0) -> tuple[int, Schedule]:
    """Bytes tracemalloc counts as still allocated after ``ops`` operations were recorded and their inputs let go
    (the schedule alive); ``kinds``: the operations repeat that many names and configurations (a program that
    repeats itself, as a model's decode steps), else every one is new."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        sched = Schedule(RNGD, timeline=timeline)
        for k in range(ops):
            kind = k % kinds if kinds else k
            report = EngineReport("fetch", f"config {kind} " + "x" * 100, 10 + kind % 5, latency=2,
                                  details=(("terms", "x" * 200),), nbytes=4096, bank_run=3, bank_runs=(3,) * 16)
            sched.record("main" if k % 2 else "sub", f"op {kind} " + "y" * 60, [report], reads=_footprint(k, 64),
                         writes=_footprint(k + 1, 64))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return held, sched


@pytest.mark.parametrize("ops", [400])
def test_the_compact_record_holds_a_fraction_of_the_memory(ops: int) -> None:
    whole, a = _held_by(True, ops)
    compact, b = _held_by(False, ops)
    assert [(op.start, op.cycles) for op in a.ops] == [(op.start, op.cycles) for op in b.ops]
    # a whole operation holds its footprints (two spans of 64 intervals per side: over 2 KB); a compact one
    # its name, lanes, traffic and slimmed engine reports
    assert whole / ops > 3000
    assert compact / ops < 2000, f"{compact / ops:.0f} bytes per compact operation"
    assert compact < whole / 3
    # repeated: each name, configuration and engine report held once, an operation little more than its slots
    repeated, c = _held_by(False, ops, kinds=10)
    assert [(op.start, op.cycles) for op in c.ops] == [(op.start, op.cycles) for op in b.ops]
    assert repeated < compact * 0.7, f"{repeated / ops:.0f} against {compact / ops:.0f} bytes per operation"


def test_compacting_keeps_the_engines_figures_the_report_reads() -> None:
    sched = Schedule(RNGD, timeline=False)
    report = EngineReport("fetch", "cfg", 10, latency=2, details=(("slower by", "x"),), nbytes=64, macs=5,
                          mac_dtype="bf16", bank_run=4, bank_runs=(4,), hbm_channels=((0, 1.0),))
    first = sched.record("main", "a", [report], reads=_footprint(0, 4))
    for name in "bcd":  # long enough that "a" (and its context handoff) is over when "d" issues
        sched.record("main", name, [EngineReport("x", "", 10 * RNGD.timing.context_handoff_cycles)])
    assert first.reads is EMPTY and first.notes == ("fetch slower by: x",)
    (slim,) = first.engines
    kept: dict[str, Any] = {k: getattr(slim, k) for k in ("engine", "config", "cycles", "latency", "nbytes",
                                                          "macs", "mac_dtype", "bank_run")}
    assert kept == {"engine": "fetch", "config": "cfg", "cycles": 10, "latency": 2, "nbytes": 64, "macs": 5,
                    "mac_dtype": "bf16", "bank_run": 4}
    assert slim.details == () and slim.bank_runs == () and slim.hbm_channels == ()


def _launches(sched: Schedule, launches: int, fold: bool) -> list[int]:
    """Record ``launches`` repetitions of one 24-operation program (two contexts alternating over overlapping
    footprints: hazards, lanes, waits) in ``sched``, folding the record before each launch's first operation
    (:meth:`Schedule.fold`, what a model does between decode steps) if ``fold``; the bytes tracemalloc counts as
    held after each launch."""
    held = []
    for _ in range(launches):
        first = len(sched.ops)
        for k in range(24):
            report = EngineReport("fetch", f"config {k % 6}", 10 + k % 5, latency=2, nbytes=4096, bank_run=3,
                                  bank_runs=(3,) * 16)
            sched.record("main" if k % 3 else "sub", f"op {k % 6}", [report], reads=_footprint(k, 8),
                         writes=_footprint(k + 1, 8))
        if fold:
            sched.fold(first)
        gc.collect()
        held.append(tracemalloc.get_traced_memory()[0])
    return held


def test_a_folded_record_keeps_the_last_launch_and_does_not_grow() -> None:
    """``Schedule.fold`` after every launch (issue 25: a model's decode steps): the record keeps the last launch's
    24 operations, with the same starts, cycles and waits as the whole record's last 24 (renumbered from 0), the
    same makespan, the report over those operations (its roofline's bytes theirs); its bytes stay flat from the
    third launch to the twelfth, where the compact record without folding grows."""
    from visa.schedule import report as profile

    gc.collect()
    tracemalloc.start()
    try:
        folded = Schedule(RNGD, timeline=False)
        held = _launches(folded, 12, fold=True)
        whole = Schedule(RNGD, timeline=False)
        grown = _launches(whole, 12, fold=False)
    finally:
        tracemalloc.stop()
    last = whole.ops[-24:]
    base = whole.ops[-24].index
    assert len(folded.ops) == 24 and folded.folded == 11 * 24 and [op.index for op in folded.ops] == list(range(24))
    assert [(op.track, op.start, op.cycles, op.lanes) for op in folded.ops] == \
        [(op.track, op.start, op.cycles, op.lanes) for op in last]
    assert [op.waits_for for op in folded.ops] == [None if op.waits_for is None else op.waits_for - base
                                                   for op in last]
    assert folded.makespan == whole.makespan and folded.origin == last[0].start
    assert all(d.op >= 0 for op in folded.ops for d in op.deps)
    rep = profile.build(RNGD, folded)
    assert rep.makespan == whole.makespan - last[0].start
    assert rep.roofline.bytes == profile.roofline(RNGD, last, 1, 1).bytes
    assert [folded.ops[i].start for i in rep.critical_path] == \
        [op.start for op in whole.critical_path() if op.index >= base][-len(rep.critical_path):]
    assert held[-1] - held[2] < 2048, f"the folded record grew by {held[-1] - held[2]} bytes over 9 launches"
    assert grown[-1] - grown[2] > 9 * 24 * 100  # (the compact record holds a hundred bytes or more per operation)


def test_a_context_folded_reports_and_traces_the_operations_it_kept() -> None:
    """``Context.fold``: the report and the trace of the kept operations (the DM lifetimes closed before them
    let go of), their numbers those of the same operations in the whole record."""
    whole = _weights_kernel(double=True, tiles=4, timeline=False)[0]
    ctx = _weights_kernel(double=True, tiles=4, timeline=False)[0]
    cut = len(ctx.schedule.ops) // 2
    before = len(ctx.dm_occupancy.lifetimes)
    ctx.fold(cut)
    kept = whole.schedule.ops[-len(ctx.schedule.ops):]
    assert [(op.start, op.cycles) for op in ctx.schedule.ops] == [(op.start, op.cycles) for op in kept]
    assert len(ctx.dm_occupancy.lifetimes) <= before
    report = ctx.report()
    assert report.makespan == whole.schedule.makespan - kept[0].start
    assert report.engines == {e: sum(r.cycles for op in kept for r in op.engines if r.engine == e)
                              for e in report.engines}
    events = ctx.trace()["traceEvents"]
    assert sum(1 for e in events if e.get("ph") == "X") >= len(ctx.schedule.ops)
