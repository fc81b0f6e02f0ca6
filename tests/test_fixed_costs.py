"""Per-pass fixed costs (issue 24, "per-pass overhead small enough that a kernel of thousands of passes is dominated
by its data"): what the cheaper bookkeeping keeps or builds directly gives what it gave before — a tensor's span
kept on its handle, a unit bitmask built from a run, a configuration's text kept on it, the argument checks'
usual cases taken first.  (No timings here: the speed is ``benchmarks/bench_engines.py``'s.)"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from visa import AxisSet, Context, i8, i32
from visa.engines import collect as collect_engine
from visa.engines.common import replaced
from visa.errors import WrongTypeError
from visa.memory.footprint import index_mask, unit_indices, units_of
from visa.schedule.footprints import span_of
from visa.tensors.handles import DmTensor, VrfTensor
from visa.validate import expect_dtype, expect_int

AX = AxisSet(R=8, C=64, G=4, S=64, X=128)
m = AX.m


def _spans_equal(a: object, b: object) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in ("memory", "chips", "units", "rows")) and \
        np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi)  # type: ignore[attr-defined]


def test_a_whole_tensor_span_is_its_element_bytes_in_its_units_and_kept_on_the_handle() -> None:
    ctx = Context.acquire()
    t = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["G, S"], m["R, C"], 4096, register=False)
    s = span_of(t)
    assert s is not None and s.memory == "dm" and s.chips == 1
    assert s.lo.tolist() == [4096] and s.hi.tolist() == [4096 + 8 * 64 * 4]
    assert s.units == index_mask(unit_indices(t.levels, ctx.hw.dm.slices_per_cluster)) == (1 << 256) - 1
    assert span_of(t) is s and span_of(t.view()) is s  # (kept: a pass derives it once)
    assert s.nbytes == 256 * 8 * 64 * 4


def test_an_alias_handle_has_the_span_of_its_own_placement() -> None:
    """``as_tensor`` and ``bitcast`` make an alias with ``relabel`` and then change its address, levels or dtype
    in place: the span kept on a handle is the one of the placement it was derived from."""
    ctx = Context.acquire()
    t = DmTensor(ctx, i32, m["1"], m["1 # 2"], m["G, S"], m["R, C"], 0, register=False)
    whole = span_of(t)
    assert whole is not None
    one = t.view().tile(m["R"], 1, m["R = 1, C"], 3).as_tensor()
    got = span_of(one)
    assert got is not None and got.lo.tolist() == [3 * 64 * 4] and got.hi.tolist() == [4 * 64 * 4]
    assert span_of(t) is whole
    moved = t.relabel()
    assert _spans_equal(span_of(moved), whole)
    object.__setattr__(moved, "address", 1024)  # (as as_tensor does, after the span was kept)
    shifted = span_of(moved)
    assert shifted is not None and shifted.lo.tolist() == [1024]
    object.__setattr__(moved, "dtype", i8)  # (as bitcast does: the bytes an Element holds change with it)
    narrow = span_of(moved)
    assert narrow is not None and narrow.hi.tolist() == [1024 + 8 * 64]


@pytest.mark.parametrize("cluster, slice_", [
    ("C2", "S256"), ("1 # 2", "S256"), ("C2", "X # 256"), ("1 # 2", "X # 256"), ("C2", "G, S"),
    ("C2", "G = 2, S # 256"), ("C2", "S256 = 255 # 256"),
])
def test_a_unit_bitmask_built_from_a_run_is_the_one_of_the_units(cluster: str, slice_: str) -> None:
    ax = AxisSet(C2=2, S256=256, X=128, G=4, S=64)
    levels = {"Cluster": ax.m[cluster], "Slice": ax.m[slice_]}
    assert units_of(levels, 256) == index_mask(unit_indices(levels, 256))


@given(st.integers(1, 8), st.integers(0, 7), st.integers(1, 8))
def test_unit_bitmasks_agree_for_any_cluster_run(slices: int, pad: int, clusters: int) -> None:
    ax = AxisSet(C=clusters, S=slices)
    spc = slices + pad
    levels = {"Cluster": ax.m["C"], "Slice": ax.m[f"S # {spc}"] if pad else ax.m["S"]}
    assert units_of(levels, spc) == index_mask(unit_indices(levels, spc))


def test_a_configuration_keeps_its_text_and_a_copy_makes_its_own() -> None:
    ctx = Context.acquire()
    ax = AxisSet(E=2048)
    cfg = collect_engine.plan_vrf(ctx.hw, i32, ax.m["E / 8"], ax.m["E % 8"], ax.m["E"], 0)
    text = type(cfg).__str__.__wrapped__(cfg)  # type: ignore[attr-defined]
    assert str(cfg) == text and str(cfg) is str(cfg)
    other = replaced(cfg, address=4096)
    assert str(other) == type(cfg).__str__.__wrapped__(other) != text  # type: ignore[attr-defined]
    assert "VRF 4096" in str(dataclasses.replace(cfg, address=4096))
    assert cfg == collect_engine.plan_vrf(ctx.hw, i32, ax.m["E / 8"], ax.m["E % 8"], ax.m["E"], 0)


def test_the_argument_checks_usual_cases_and_their_refusals() -> None:
    assert expect_int(5, "n", call="t") == 5 and type(expect_int(np.int64(5), "n", call="t")) is int
    assert expect_dtype(i32, "dtype", call="t") is i32 and expect_dtype("i8", "dtype", call="t") is i8
    for bad in (True, 1.0, "3"):
        with pytest.raises(WrongTypeError, match="parameter n must be an int"):
            expect_int(bad, "n", call="t")
    for wrong in (np.int8, [1], VrfTensor):
        with pytest.raises(WrongTypeError, match="parameter dtype"):
            expect_dtype(wrong, "dtype", call="t")
