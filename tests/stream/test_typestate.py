"""The stream typestate (manual "Memory and Stream", L1094–1161; pipeline order L3010–3053, L3792).

A method exists only on the stage that has it: plain mypy (no plugin) rejects ``.contract()`` on a
``FetchTensor``, and code that is not type-checked gets a :class:`~visa.errors.TypestateError` at run time.
A stream value flows through one engine; each terminal call records the pass.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from visa import (
    RNGD,
    AxisSet,
    BeginTensor,
    CollectTensor,
    Context,
    DmTensor,
    FetchTensor,
    TrfAddress,
    TrfTensor,
    VrfTensor,
    i8,
    i32,
)
from visa import dtypes as dt
from visa.errors import TypestateError
from visa.testing import place_dm

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = '''
from typing import Any

from visa import AxisSet, Context, DmTensor, TrfAddress, i8

ax = AxisSet(A=8)


def kernel(ctx: Context, t: DmTensor[Any, Any, Any, Any, Any]) -> None:
    f = ctx.main.begin(t.view()).fetch(i8, ax.m["1"], ax.m["A"])
    f.contract(ax.m["A"])
    c = f.collect(ax.m["1"], ax.m["A # 32"])
    c.fetch(i8, ax.m["1"], ax.m["A"])
    c.to_trf(ax.m["1"], ax.m["A # 32"], TrfAddress.Full).commit
'''


def test_plain_mypy_rejects_a_method_on_the_wrong_stage_L1107_L1121() -> None:
    mypy_api = pytest.importorskip("mypy.api")
    # a cache that outlives the run keeps this at a second or two once warm (mypy checks its freshness)
    work = Path(tempfile.gettempdir()) / "visa-typestate-mypy"
    work.mkdir(exist_ok=True)
    src = work / "typestate_snippet.py"
    src.write_text(SNIPPET)
    config = work / "plain.ini"
    config.write_text(f"[mypy]\nstrict = True\npython_version = 3.11\nmypy_path = {ROOT / 'stubs'}:{ROOT}\n")
    out, err, _ = mypy_api.run(["--config-file", str(config), "--cache-dir", str(work / "cache"),
                                "--no-error-summary", "--show-error-codes", "--follow-imports=silent", str(src)])
    assert not err.strip(), err
    lines = [ln for ln in out.splitlines() if ": error:" in ln]
    assert any(":11: error:" in ln and '"FetchTensor' in ln and '"contract"' in ln for ln in lines), out
    assert any(":13: error:" in ln and '"CollectTensor' in ln and '"fetch"' in ln for ln in lines), out
    assert any(":14: error:" in ln and '"TrfTensor' in ln and '"commit"' in ln for ln in lines), out
    assert len(lines) == 3, out  # and nothing else: the legal calls type-check


def new_ctx() -> Context:
    ctx = Context(RNGD)
    ctx.num_chips = 1
    return ctx


def fetched(ctx: Context) -> tuple[AxisSet, Any, Any]:
    ax = AxisSet(A=8, B=32)
    m = ax.m
    t = place_dm(ctx, dt.random_values(i8, (8, 32), np.random.default_rng(3)), i8, m["1"], m["1 # 2"],
                 m["1 # 256"], m["A, B"], 0)
    return ax, t, ctx.main.begin(t.view())


def test_runtime_typestate_errors() -> None:
    ctx = new_ctx()
    ax, t, begin = fetched(ctx)
    m = ax.m
    with pytest.raises(TypestateError) as err:
        begin.commit(m["A, B"], 4096)  # nothing was fetched
    assert "BeginTensor" in str(err.value) and err.value.call == "commit"
    f = begin.fetch(i8, m["A"], m["B"])
    with pytest.raises(TypestateError) as err:
        f.contract(m["B"])
    assert "FetchTensor" in str(err.value) and "AlignedTensor" in str(err.value)
    with pytest.raises(TypestateError):
        f.to_trf(m["1"], m["A, B"], TrfAddress.Full)  # registers are loaded from collected flits
    c = f.collect(m["A"], m["B"])
    with pytest.raises(TypestateError):
        c.fetch(i8, m["A"], m["B"])
    with pytest.raises(TypestateError) as err:
        f.collect(m["A"], m["B"])  # f was consumed by .collect()
    assert "already consumed" in str(err.value)
    with pytest.raises(AttributeError):
        c.no_such_method  # noqa: B018 - not a stage method at all: a plain AttributeError


def test_stage_classes_follow_the_pipeline_L3010_L3053() -> None:
    ctx = new_ctx()
    ax, t, begin = fetched(ctx)
    m = ax.m
    assert isinstance(begin, BeginTensor) and begin.layout.time == m["1"] and begin.layout.packet == m["A, B"]
    f = begin.fetch(i8, m["A"], m["B"])
    assert isinstance(f, FetchTensor) and f.layout.slice == t.levels["Slice"]  # Slice passes through (L1723)
    c = f.collect(m["A"], m["B"])
    assert isinstance(c, CollectTensor) and [r.engine for r in c.reports] == ["fetch", "switch", "collect"]
    out = c.commit(m["B / 8, A, B % 8"], 1024)
    assert isinstance(out, DmTensor) and np.array_equal(out.logical(axes="A B"), t.logical(axes="A B"))
    op = ctx.schedule.ops[-1]
    assert op.name == "fetch → switch → collect → commit"  # a FetchTensor's collect forwards (L3120-3138)
    assert [r.engine for r in op.engines] == ["fetch", "switch", "collect", "commit"]
    # one command: its overhead, every engine's latency and its slowest engine (visa.engines.timing, issue 22)
    assert op.cycles == (ctx.hw.timing.full_command_cycles + max(r.cycles for r in op.engines)
                         + sum(r.latency for r in op.engines))
    assert out.ready_at == op.end
    # the registers: TRF and VRF handles
    trf = ctx.sub.begin(t.view()).fetch(i8, m["A"], m["B"]).collect(m["A"], m["B"]).to_trf(
        m["A"], m["B"], TrfAddress.Full)
    assert isinstance(trf, TrfTensor) and ctx.schedule.ops[-1].track == "sub"
    vrf = ctx.sub.begin(t.view()).fetch(i32, m["A"], m["B"]).collect(m["A, B / 8"], m["B % 8"]).to_vrf(
        m["A, B"], 0)
    assert isinstance(vrf, VrfTensor) and np.array_equal(vrf.logical(axes="A B"), t.logical(axes="A B"))


def test_a_refused_call_leaves_the_stream_unconsumed() -> None:
    # A refusal is the run-time form of a compile error (the manual's layout errors never run, L1700–1718):
    # the stream is given back, so a corrected call can follow.
    from visa.errors import HardwareLimitError

    ctx = new_ctx()
    ax, t, begin = fetched(ctx)
    m = ax.m
    with pytest.raises(HardwareLimitError) as err:
        begin.fetch(i8, m["A, B / 4"], m["B % 4"])  # a 4-byte packet: not 8-byte aligned (L1711–1716)
    assert err.value.axis == "B" and err.value.level == "Packet"
    f = begin.fetch(i8, m["A"], m["B"])
    c = f.collect(m["A"], m["B"])
    assert c.layout.time == m["A"]
    with pytest.raises(TypestateError, match="already consumed"):
        begin.fetch(i8, m["A"], m["B"])  # the successful call did consume it
