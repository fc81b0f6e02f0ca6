"""A tensor's bytes and its handle tell one story (issue 23, findings 3 and 4; manual L150–155).

* After ``free()`` a handle (and every alias of it) is refused, read or written: its bytes may hold another
  tensor, whose data it would otherwise return (DM, HBM and VRF alike).
* A pass left open across a write of what it reads is refused when it ends: its values came from the old bytes,
  but the schedule would place it after the write.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import AxisSet, Context, HostTensor, i32
from visa.engines.vector import BranchMode, FxpBinaryOp
from visa.errors import StaleTensorError

ax = AxisSet(A=2048)
m = ax.m
CL, SL, EL = m["1 # 2"], m["A / 8 # 256"], m["A % 8"]


def _hbm(ctx: Context, values: np.ndarray, address: int) -> Any:
    return HostTensor.from_numpy(values, i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, address)


def _dm(ctx: Context, values: np.ndarray, address: int, hbm_at: int) -> Any:
    return _hbm(ctx, values, hbm_at).to_dm(CL, SL, EL, ctx.tdma, address)


def _refused_as_freed(fn: Any, call_word: str) -> None:
    with pytest.raises(StaleTensorError) as err:
        fn()
    assert "was freed" in err.value.message and err.value.fix and call_word in (err.value.call or "")


# ---------------------------------------------------------------------------------------------------------
# finding 3: use after free
# ---------------------------------------------------------------------------------------------------------


def test_finding3_a_freed_dm_tensor_is_refused_not_read_as_its_successor() -> None:
    ctx = Context.acquire()
    a = _dm(ctx, np.arange(2048, dtype=np.int32), 0, 0)
    alias = a.relabel(Element=m["A % 8"])
    a.free()
    b = _dm(ctx, -np.arange(2048, dtype=np.int32), 0, 1 << 20)  # reuses a's bytes
    _refused_as_freed(lambda: a.logical("A"), "logical")
    _refused_as_freed(lambda: alias.logical("A"), "logical")
    _refused_as_freed(lambda: ctx.main.begin(a.view()), "begin")
    _refused_as_freed(lambda: a.to_hbm(m["A"], ctx.tdma, 2 << 20), "to_hbm")
    src = _hbm(ctx, np.ones(2048, np.int32), 3 << 20)
    _refused_as_freed(lambda: src.to_dm_view(a.view(), ctx.tdma), "to_dm_view")  # a write, too
    assert np.array_equal(b.logical("A"), -np.arange(2048))  # the successor is untouched


def test_finding3_a_freed_hbm_tensor_is_refused() -> None:
    ctx = Context.acquire()
    a = _hbm(ctx, np.arange(2048, dtype=np.int32), 0)
    a.free()
    b = _hbm(ctx, -np.arange(2048, dtype=np.int32), 0)
    _refused_as_freed(lambda: a.logical("A"), "logical")
    _refused_as_freed(lambda: a.to_host(m["A"], ctx.pdma), "to_host")
    _refused_as_freed(lambda: a.to_dm(CL, SL, EL, ctx.tdma, 0), "to_dm")
    assert np.array_equal(b.logical("A"), -np.arange(2048))


def _to_vrf(ctx: Context, dm: Any, address: int) -> Any:
    return ctx.sub.begin(dm.view()).fetch(i32, m["1"], EL).collect(m["1"], EL).to_vrf(EL, address)


def _add_vrf(ctx: Context, dm: Any, vrf: Any) -> Any:
    return (ctx.main.begin(dm.view()).fetch(i32, m["1"], EL).collect(m["1"], EL).vector_init()
            .vector_intra_slice_branch(BranchMode.Unconditional).vector_fxp(FxpBinaryOp.AddFxp, vrf))


def test_finding3_a_freed_vrf_operand_is_refused() -> None:
    ctx = Context.acquire()
    x = _dm(ctx, np.arange(2048, dtype=np.int32), 0, 0)
    v = _to_vrf(ctx, x, 0)
    v.free()
    _to_vrf(ctx, _dm(ctx, np.full(2048, 7, np.int32), 1 << 12, 1 << 20), 0)  # reuses v's bytes
    with pytest.raises(StaleTensorError) as err:
        _add_vrf(ctx, x, v)
    assert "was freed" in err.value.message


# ---------------------------------------------------------------------------------------------------------
# finding 4: a pass left open across a write
# ---------------------------------------------------------------------------------------------------------


def _open_pass(ctx: Context, d: Any) -> Any:
    return ctx.main.begin(d.view()).fetch(i32, m["1"], EL)


def _stale_pass(fn: Any, call: str) -> None:
    with pytest.raises(StaleTensorError) as err:
        fn()
    e = err.value
    assert e.call == call and "before the pass ended" in e.message and e.fix


def test_finding4_a_dma_into_the_fetched_tensor_before_the_commit_is_refused() -> None:
    ctx = Context.acquire()
    d = _dm(ctx, np.arange(2048, dtype=np.int32), 0, 0)
    s = _open_pass(ctx, d)
    _hbm(ctx, np.full(2048, 5, np.int32), 1 << 20).to_dm_view(d.view(), ctx.tdma)  # overwrites d in place
    before = len(ctx.schedule.ops)
    c = s.collect(m["1"], EL)
    _stale_pass(lambda: c.commit(EL, 1 << 12), "commit")
    assert len(ctx.schedule.ops) == before  # nothing recorded, nothing written
    assert np.array_equal(d.logical("A"), np.full(2048, 5))
    # a pass begun before the write but fetched after it reads the new bytes: one story, accepted
    s2 = ctx.main.begin(d.view())
    _hbm(ctx, np.full(2048, 6, np.int32), 2 << 20).to_dm_view(d.view(), ctx.tdma)
    out = s2.fetch(i32, m["1"], EL).collect(m["1"], EL).commit(EL, 1 << 13)
    assert np.array_equal(out.logical("A"), np.full(2048, 6))


def test_finding4_a_new_tensor_over_the_fetched_bytes_is_refused_at_every_pass_end() -> None:
    ctx = Context.acquire()
    d = _dm(ctx, np.arange(2048, dtype=np.int32), 0, 0)
    view_target = _dm(ctx, np.zeros(2048, np.int32), 1 << 14, 1 << 21)
    ends = {
        "commit": lambda c: c.commit(EL, 1 << 12),
        "commit_view": lambda c: c.commit_view(view_target.view()),
        "to_vrf": lambda c: c.to_vrf(EL, 0),
    }
    for call, end in ends.items():
        d = _dm(ctx, np.arange(2048, dtype=np.int32), 0, 0)
        c = _open_pass(ctx, d).collect(m["1"], EL)
        _dm(ctx, np.ones(2048, np.int32), 0, 3 << 20)  # a new tensor over d's bytes
        _stale_pass(lambda end=end, c=c: end(c), call)


def test_finding4_a_vrf_operand_rewritten_before_the_pass_ends_is_refused() -> None:
    ctx = Context.acquire()
    x = _dm(ctx, np.arange(2048, dtype=np.int32), 0, 0)
    v = _to_vrf(ctx, _dm(ctx, np.full(2048, 3, np.int32), 1 << 12, 1 << 20), 0)
    s = _add_vrf(ctx, x, v)
    _to_vrf(ctx, _dm(ctx, np.full(2048, 9, np.int32), 1 << 13, 2 << 20), 0)  # rewrites the operand's bytes
    _stale_pass(lambda: s.vector_final().commit(EL, 1 << 14), "commit")
    # read after the rewrite: the new operand, accepted
    v2 = _to_vrf(ctx, _dm(ctx, np.full(2048, 4, np.int32), 1 << 15, 3 << 20), 0)
    out = _add_vrf(ctx, x, v2).vector_final().commit(EL, 1 << 16)
    assert np.array_equal(out.logical("A"), np.arange(2048) + 4)
