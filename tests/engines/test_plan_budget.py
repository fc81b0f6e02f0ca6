"""The plan caches' byte budget (``visa.engines.cache.PLANS``, issue 25's peak memory): least recently used out
first across every cache, never a plan the current launch used; an entry dropped is planned again, the same
results and cycles."""

from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels.test_library import values
from visa import fastpaths
from visa.context import Context, device, launch
from visa.dtypes import bf16
from visa.engines import cache
from visa.engines.cache import MISS, PlanBudget, plan_nbytes
from visa.kernels import Arena, Gemm
from visa.mapping import AxisSet
from visa.tensors.handles import HbmTensor, HostTensor


def test_plan_nbytes_counts_each_array_once() -> None:
    a = np.zeros(1000, np.uint8)
    containers = sys.getsizeof((a, a, {})) + sys.getsizeof({"x": a})
    assert plan_nbytes((a, a[10:], {"x": a})) == 1000 + containers  # views of one buffer: its bytes once
    parts = [np.zeros(10, np.int64), np.broadcast_to(np.ones(1, bool), (10**6,))]
    assert plan_nbytes(parts) == 81 + sys.getsizeof(parts)  # a broadcast: the bytes it was made from
    assert plan_nbytes((1, "text", None, plan_nbytes, np)) == sys.getsizeof((1, 2, 3, 4, 5))  # shared: not counted


def test_the_entry_used_longest_ago_goes_first_whichever_cache_holds_it() -> None:
    budget = PlanBudget(limit=1000)
    a, b = budget.store(8), budget.store(8)
    a.put("x", np.zeros(400, np.uint8))
    b.put("y", np.zeros(400, np.uint8))
    budget.new_launch()
    assert a.get("x") is not MISS  # x used last
    b.put("z", np.zeros(400, np.uint8))  # 1,200 bytes: y goes (used in an earlier launch, longest ago)
    assert b.get("y") is MISS and a.get("x") is not MISS and b.get("z") is not MISS
    assert budget.total == 800 and len(a) == 1 and len(b) == 1


def test_the_current_launchs_plans_stay_past_the_limit_and_go_at_the_next() -> None:
    budget = PlanBudget(limit=1000)
    s = budget.store(16)
    budget.new_launch()
    for k in range(5):
        s.put(k, np.zeros(400, np.uint8))
    assert budget.total == 2000 and all(s.get(k) is not MISS for k in range(5))  # none dropped mid-launch
    budget.new_launch()
    s.put("next", np.zeros(400, np.uint8))
    assert budget.total <= 1000 and s.get("next") is not MISS
    assert [s.get(k) is MISS for k in range(5)] == [True, True, True, True, False]  # the oldest went


def test_a_store_keeps_its_own_entry_limit_oldest_out() -> None:
    budget = PlanBudget(limit=1 << 30)
    s = budget.store(3)
    for k in range(3):
        s.put(k, k)
    assert s.get(0) == 0  # 0 used last: 1 is the oldest
    s.put(3, 3)
    assert len(s) == 3 and [s.get(k) is MISS for k in range(4)] == [False, True, False, False]
    s.clear()
    assert len(s) == 0 and budget.total == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "get", "launch"]), st.integers(0, 2), st.integers(0, 5),
                          st.integers(0, 300)), max_size=60), st.integers(0, 600))
def test_the_budget_against_a_brute_force_model(steps: list[tuple[str, int, int, int]], limit: int) -> None:
    """Every step checked against a list in use order: the totals, the bound, the entries held, the values."""
    budget = PlanBudget(limit=limit)
    stores = [budget.store(4) for _ in range(3)]
    order: list[tuple[int, int, int, int]] = []  # (store, key, bytes, launch), least recently used first
    launch = 0
    for op, s, key, size in steps:
        at = next((i for i, e in enumerate(order) if e[:2] == (s, key)), None)
        if op == "launch":
            budget.new_launch()
            launch += 1
        elif op == "get":
            got = stores[s].get(key)
            assert (got is MISS) == (at is None)
            if at is not None:
                assert got.size == order[at][2]
                order.append((s, key, order.pop(at)[2], launch))
        else:
            stores[s].put(key, np.zeros(size, np.uint8))
            if at is not None:
                order.pop(at)
            mine = [e for e in order if e[0] == s]
            if len(mine) >= 4:
                order.remove(mine[0])
            order.append((s, key, size, launch))
            while sum(e[2] for e in order) > limit and order[0][3] != launch:
                order.pop(0)
        assert budget.total == sum(e[2] for e in order)
        if op == "put":  # (the bound is kept as entries come; a new launch alone drops nothing)
            assert budget.total <= limit or all(e[3] == launch for e in order)
        assert [len(x) for x in stores] == [sum(e[0] == k for e in order) for k in range(3)]


@pytest.fixture
def tiny_budget() -> Iterator[None]:
    limit = cache.PLANS.limit
    cache.PLANS.limit = 0  # every plan of an earlier launch goes as soon as a new one is made
    try:
        yield
    finally:
        cache.PLANS.limit = limit


def _gemms() -> list[tuple[Any, list[int]]]:
    """Three launches, GEMMs of two shapes (the first shape again last): each launch's output bits and the cycles
    of its operations."""
    out = []
    for m, n, k in ((8, 256, 512), (4, 512, 256), (8, 256, 512)):
        ax = AxisSet(M=m, N=n, K=k)
        gemm = Gemm(ax)

        @device(chip=1)
        def kernel(ctx: Context, x: HbmTensor[Any, Any, Any], w: HbmTensor[Any, Any, Any],
                   gemm: Gemm = gemm) -> HbmTensor[Any, Any, Any]:
            return gemm(ctx, Arena(), x, w)

        ctx = Context.acquire()
        x = HostTensor.rand(bf16, ax.m["M, K"], np.random.default_rng(m + n))
        w = HostTensor.rand(bf16, ax.m["N, K"], np.random.default_rng(k))
        got = launch(kernel, ctx, x.to_hbm(ax.m["1"], ax.m["M, K"], ctx.pdma, 0),
                     w.to_hbm(ax.m["1"], ax.m["N, K"], ctx.pdma, 1 << 28)).to_host(ax.m["M, N"], ctx.pdma)
        out.append((values(got, "M N"), [op.cycles for op in ctx.schedule.ops]))
    return out


def test_dropped_plans_are_made_again_the_same(tiny_budget: None) -> None:
    made = cache.PLANS.misses
    small = _gemms()
    replanned = cache.PLANS.misses - made
    cache.PLANS.limit = 1 << 40
    made = cache.PLANS.misses
    _gemms()  # (warm: the plans of the first shape stay for its second launch)
    whole = _gemms()
    assert cache.PLANS.misses - made < replanned  # the tiny budget did drop plans that were asked again
    for (a, ca), (b, cb) in zip(small, whole, strict=True):
        assert np.array_equal(a, b) and ca == cb


def test_arrays_inside_objects_inside_containers_are_weighed() -> None:
    """An object's attributes are at its own depth: a plan holding a tuple of objects that hold arrays (the depth
    a DMA or gather plan reaches) weighs their arrays (found by review: they weighed nothing)."""
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Inner:
        a: np.ndarray

    @dataclass(frozen=True)
    class Outer:
        parts: tuple[Inner, ...]

    assert plan_nbytes(Outer((Inner(np.zeros(1 << 16, np.uint8)),))) > 1 << 16


def test_an_array_an_entry_computes_after_it_was_weighed_counts_from_its_next_use() -> None:
    from functools import cached_property

    class Plan:
        @cached_property
        def index(self) -> np.ndarray:
            return np.zeros(1 << 16, np.uint8)

    budget = PlanBudget(limit=1 << 30)
    store = budget.store(8)
    plan = Plan()
    store.put("p", plan)
    before = budget.total
    assert plan.index.nbytes == 1 << 16  # (computed after the put)
    assert store.get("p") is plan
    assert budget.total - before >= 1 << 16
    store._drop("p")
    assert budget.total == 0


class _Config:
    """A configuration a plan holds (weakly referable, as the engines' configurations are)."""

    def __init__(self, n: int) -> None:
        self.n = n


def test_per_object_memo_is_weighed_in_the_budget_and_keeps_no_object_alive() -> None:
    made: list[int] = []

    @cache.per_object(4)
    def derive(cfg: _Config) -> np.ndarray:
        made.append(cfg.n)
        return np.zeros(cfg.n, np.uint8)

    store = derive.store  # type: ignore[attr-defined]
    assert store.budget is cache.PLANS  # (one budget with every plan cache)
    a = _Config(5000)
    total = cache.PLANS.total
    first = derive(a)
    assert derive(a) is first and made == [5000]  # made once per object
    assert cache.PLANS.total - total >= 5000  # the derived array is weighed in the budget
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None  # the memo held the object weakly: it died with its last holder
    for n in range(8):  # new objects (one may reuse the dead one's id: found stale, made again)
        keep = _Config(n)
        assert derive(keep).size == n
    assert made == [5000, *range(8)] and len(store) <= 4  # the entry limit, oldest out
    derive.cache_clear()  # type: ignore[attr-defined]
    assert len(store) == 0


def test_the_fast_paths_per_configuration_memos_are_under_the_budget() -> None:
    """``fast_inter``, ``fast_inter_shared`` and ``fast_parallel_copy`` keep what they derive per configuration in
    :func:`visa.engines.cache.per_object` stores (weighed by :data:`~visa.engines.cache.PLANS`, configurations
    held weakly), not in dictionaries of their own that kept up to 256 configurations alive."""
    from visa.engines import fast_parallel_copy
    from visa.engines.vector import fast_inter, fast_inter_shared

    for fn in (fast_parallel_copy._factors, fast_inter._views, fast_inter_shared._classes):
        assert fn.store.budget is cache.PLANS  # type: ignore[attr-defined]
    for module in (fast_parallel_copy, fast_inter, fast_inter_shared):
        assert not hasattr(module, "_CACHE")


def _reached(value: Any, seen: set[int]) -> int:
    """The bytes of every array ``value`` keeps alive, walked without the budget's limits: any depth, through
    objects' attributes and slots, bound methods' objects and closures' cells (mappings, hardware tables, types
    and weak references skipped: shared, or holding nothing)."""
    import types

    from visa.mapping import Mapping

    if isinstance(value, np.ndarray):
        base = value
        while isinstance(base.base, np.ndarray):
            base = base.base
        if id(base) in seen:
            return 0
        seen.add(id(base))
        return base.nbytes if base.base is None else 0
    if (value is None or id(value) in seen or type(value).__module__.startswith(("visa.hw", "numpy"))
            or isinstance(value, str | bytes | int | float | type | types.ModuleType | Mapping | weakref.ref)):
        return 0
    seen.add(id(value))
    if isinstance(value, tuple | list | set | frozenset):
        return sum(_reached(v, seen) for v in value)
    if isinstance(value, dict):
        return sum(_reached(v, seen) for v in value.values())
    if isinstance(value, types.MethodType):
        return _reached(value.__self__, seen)
    if isinstance(value, types.FunctionType):
        return sum(_reached(c.cell_contents, seen) for c in value.__closure__ or ())
    slots = [n for k in type(value).__mro__ for n in getattr(k, "__slots__", ()) if n not in ("__dict__",
                                                                                              "__weakref__")]
    return (sum(_reached(getattr(value, n, None), seen) for n in slots)
            + _reached(getattr(value, "__dict__", None), seen))


def test_every_array_a_per_configuration_memo_keeps_is_weighed() -> None:
    """What ``fast_inter``, ``fast_inter_shared`` and ``fast_parallel_copy`` keep per configuration holds no array
    the budget's walk misses (:func:`~visa.engines.cache.plan_nbytes`, re-weighed at an entry's next use): a review
    found ``fast_inter``'s views holding the groups' bound method, whose groups and row labels (8 KiB a
    configuration here) the walk did not reach.  Programs of the differential fuzzer with inter-slice reduces."""
    from tests.fuzz_kernels import program, run
    from visa.engines import fast_parallel_copy
    from visa.engines.vector import fast_inter, fast_inter_shared

    run(program(37))  # (an i8 stream widened to i32, reduced over the slices: vector.inter-strided)
    entries = [v for fn in (fast_parallel_copy._factors, fast_inter._views, fast_inter_shared._classes)
               for v, _ in fn.store._entries.values()]  # type: ignore[attr-defined]
    for value in entries:
        assert plan_nbytes(value) >= _reached(value, set()), value
    if all(fastpaths.get(n).on for n in ("vector.inter-strided", "vector.inter-factors-digits")):
        assert any(_reached(v, set()) for v in entries), "no views held arrays: the fuzzer's program 37 changed?"

