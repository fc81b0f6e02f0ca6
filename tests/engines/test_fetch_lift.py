"""Fetch lifts (design API.md §8, a reference extension; docs/manual-notes.md "issue 26"): the fetch's outer Time
digits replace a broadcast digit of Slice, Cluster or Chip, each copy reading its own time step.

The kernels are ports of the reference's fetch-lift examples (furiosa-opt v0.7–v0.9: lift an axis, a digit, two
broadcast slots, onto Cluster, onto Chip, every level in one read, in the sub context), checked against numpy;
then one test per rule, and the cycles the lift saves on the schedule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import RNGD, AxisSet, Context, HostTensor, bf16, device, i8, i32, launch
from visa.engines import lift
from visa.errors import AddressError, HardwareLimitError, LayoutError, TypestateError

RNG = np.random.default_rng(26)
AX = AxisSet(A=128, H=2, Q=4, V=16, X=2, Y=2, C=4, L=2, G=2, Row=64, R=4, Step=2, Four=4)
m = AX.m


def _run(kernel: Any, host: HostTensor[Any, Any], chip: str = "1") -> tuple[Any, Context]:
    ctx = Context.acquire()
    h = host.to_hbm(m[chip], host.element, ctx.pdma, 0)
    return launch(kernel, ctx, h), ctx


def test_slice_lift_axis_reads_each_copys_own_time_step() -> None:
    """``fetch(H, V).fetch_slice_lift([A, H], 1)`` over ``Slice = [A, X]``: slice (a, x) reads h = x."""
    x = HostTensor.rand(bf16, m["A, H, V"], RNG)

    @device(chip=1)
    def k(ctx: Context, xh: Any) -> Any:
        dm = xh.to_dm(m["1 # 2"], m["A, X"], m["H, V"], ctx.tdma, 0)  # replicated over X by the DMA
        s = (ctx.main.begin(dm.view()).fetch(bf16, m["H"], m["V"]).fetch_slice_lift(m["A, H"], m["1"])
             .collect(m["1"], m["V"]).commit(m["V"], 4096))
        return s.to_hbm(m["A, H, V"], ctx.tdma, 1 << 20)

    y, ctx = _run(k, x)
    assert np.array_equal(y.logical(axes="A H V"), x.numpy(axes="A H V"))
    fetch = next(r for op in ctx.schedule.ops for r in op.engines if r.engine == "fetch")
    assert fetch.cycles == 1  # Time2 = 1 step, one 32-byte fetch (L2060): the two copies read in parallel
    assert "fetch_slice_lift" in fetch.config and "[0, 32]" in fetch.config  # bases 0 and one packet later


def test_slice_lift_in_the_sub_context_and_into_a_vrf_operand() -> None:
    """A lift works in either context (the reference's sub-context examples), here loading the VRF."""
    ax = AxisSet(A=128, H=2, W=8, X=2)
    x = HostTensor.rand(i32, ax.m["A, H, W"], RNG)
    ctx = Context.acquire()
    xh = x.to_hbm(ax.m["1"], ax.m["A, H, W"], ctx.pdma, 0)

    @device(chip=1)
    def k(ctx: Context) -> Any:
        dm = xh.to_dm(ax.m["1 # 2"], ax.m["A, X"], ax.m["H, W"], ctx.tdma, 0)
        s = (ctx.sub.begin(dm.view()).fetch(i32, ax.m["H"], ax.m["W"]).fetch_slice_lift(ax.m["A, H"], ax.m["1"])
             .collect(ax.m["1"], ax.m["W"]))
        return s.to_vrf(ax.m["W"], 0)

    vrf = launch(k, ctx)
    assert np.array_equal(vrf.logical(axes="A H W"), x.numpy(axes="A H W"))


@pytest.mark.parametrize("element, slice_, time, lifted, time2, out", [
    # the outer binary digit of Q onto Slice (the reference's fetch_slice_lift_digit)
    ("A, Q, V", "A, X", "Q", "A, Q / 2", "Q % 2", "A, Q, V"),
    # two broadcast slots [X, Row, Y] take [H, Row, G] from Time [H, G] (fetch_slice_lift_broadcasts)
    ("Row, H, G, V", "X, Row, Y", "H, G", "H, Row, G", "1", "H, Row, G, V"),
])
def test_slice_lift_of_a_digit_and_onto_two_broadcast_slots(element: str, slice_: str, time: str, lifted: str,
                                                            time2: str, out: str) -> None:
    x = HostTensor.rand(bf16, m[element], RNG)
    rest = element.replace("A, ", "").replace("Row, ", "")

    @device(chip=1)
    def k(ctx: Context, xh: Any) -> Any:
        dm = xh.to_dm(m["1 # 2"], m[slice_], m[rest], ctx.tdma, 0)
        s = (ctx.main.begin(dm.view()).fetch(bf16, m[time], m["V"]).fetch_slice_lift(m[lifted], m[time2])
             .collect(m[time2], m["V"]).commit(m[f"{time2}, V"] if time2 != "1" else m["V"], 4096))
        return s.to_hbm(m[out], ctx.tdma, 1 << 20)

    y, _ = _run(k, x)
    names = " ".join(a.strip() for a in element.split(","))
    assert np.array_equal(y.logical(axes=names), x.numpy(axes=names))


def test_cluster_lift_axis() -> None:
    """Cluster ``X`` (both clusters hold the tensor) takes H: cluster h reads time step h."""
    x = HostTensor.rand(bf16, m["A, H, V"], RNG)

    @device(chip=1)
    def k(ctx: Context, xh: Any) -> Any:
        dm = xh.to_dm(m["X"], m["A, 1 # 2"], m["H, V"], ctx.tdma, 0)
        s = (ctx.main.begin(dm.view()).fetch(bf16, m["H"], m["V"]).fetch_cluster_lift(m["H"], m["1"])
             .collect(m["1"], m["V"]).commit(m["V"], 4096))
        return s.to_hbm(m["H, A, V"], ctx.tdma, 1 << 20)

    y, _ = _run(k, x)
    assert np.array_equal(y.logical(axes="A H V"), x.numpy(axes="A H V"))


def test_chip_lift_axis_and_every_level_in_one_read() -> None:
    """Chip lift on four chips, then chip, cluster and slice lifts of one fetch (``[C, L, H]`` → 1)."""
    ax = AxisSet(A=128, Q=4, V=16, P=4, C=4, L=2, H=2, X=2, K=2)
    x = HostTensor.rand(bf16, ax.m["A, Q, V"], RNG)
    ctx = Context.acquire()
    xh = x.to_hbm(ax.m["P"], ax.m["A, Q, V"], ctx.pdma, 0)  # every chip holds a copy (P is a broadcast)

    @device(chip=4)
    def chip_lift(ctx: Context) -> Any:
        dm = xh.to_dm(ax.m["1 # 2"], ax.m["A, 1 # 2"], ax.m["Q, V"], ctx.tdma, 0)
        s = (ctx.main.begin(dm.view()).fetch(bf16, ax.m["Q"], ax.m["V"]).fetch_chip_lift(ax.m["Q"], ax.m["1"])
             .collect(ax.m["1"], ax.m["V"]).commit(ax.m["V"], 4096))
        return s.to_hbm(ax.m["A, V"], ctx.tdma, 1 << 20)

    y = launch(chip_lift, ctx)
    assert np.array_equal(y.logical(axes="Q A V"), x.numpy(axes="A Q V").transpose(1, 0, 2))

    x2 = HostTensor.rand(bf16, ax.m["A, C, L, H, V"], RNG)
    x2h = x2.to_hbm(ax.m["P"], ax.m["A, C, L, H, V"], ctx.pdma, 1 << 24)

    @device(chip=4)
    def every(ctx: Context) -> Any:
        dm = x2h.to_dm(ax.m["K"], ax.m["A, X"], ax.m["C, L, H, V"], ctx.tdma, 0)
        s = (ctx.main.begin(dm.view()).fetch(bf16, ax.m["C, L, H"], ax.m["V"])
             .fetch_chip_lift(ax.m["C"], ax.m["L, H"]).fetch_cluster_lift(ax.m["L"], ax.m["H"])
             .fetch_slice_lift(ax.m["A, H"], ax.m["1"]).collect(ax.m["1"], ax.m["V"]).commit(ax.m["V"], 1 << 16))
        return s.to_hbm(ax.m["L, A, H, V"], ctx.tdma, 1 << 26)

    y2 = launch(every, ctx)
    assert np.array_equal(y2.logical(axes="A C L H V"), x2.numpy(axes="A C L H V"))


# -- the rules ----------------------------------------------------------------------------------------------------
def _fetched(ctx: Context, slice_: str, element: str, time: str, packet: str, dtype: Any = bf16,
             cluster: str = "1 # 2") -> Any:
    x = HostTensor.rand(dtype, m[f"A, {element}"], RNG)
    ctx.num_chips = 1
    h = x.to_hbm(m["1"], m[f"A, {element}"], ctx.pdma, 0)
    dm = h.to_dm(m[cluster], m[slice_], m[element], ctx.tdma, 1 << 12)
    return ctx.main.begin(dm.view()).fetch(dtype, m[time], m[packet])


def test_a_lift_keeps_the_level_size_and_lifts_whole_outer_power_of_two_time_digits() -> None:
    ctx = Context.acquire()
    f = _fetched(ctx, "A, X", "H, V", "H", "V")
    with pytest.raises(HardwareLimitError, match="keeps the Slice size"):
        f.fetch_slice_lift(m["A"], m["1"])  # resizing Slice (the reference's compile_fail)
    with pytest.raises(LayoutError, match="power-of-two"):
        f.fetch_slice_lift(m["A, X"], m["H"])  # nothing lifted
    with pytest.raises(LayoutError, match="inner part"):
        _fetched(ctx, "A, X", "Q, V", "Q", "V").fetch_slice_lift(m["A, Q % 2"], m["Q / 2"])
    with pytest.raises(LayoutError, match="does not divide"):
        _fetched(ctx, "A, X", "Q, V", "Q", "V").fetch_slice_lift(m["A, X"], m["R # 8"])
    out = f.fetch_slice_lift(m["A, H"], m["1"])  # a refusal leaves the stream usable
    assert out.layout.slice == m["A, H"] and out.layout.time == m["1"]


def test_a_lift_never_replaces_padding_or_a_live_axis() -> None:
    ctx = Context.acquire()
    with pytest.raises(LayoutError, match="never padding"):  # Cluster 1 # 2: cluster 1 holds nothing
        _fetched(ctx, "A, X", "H, V", "H", "V").fetch_cluster_lift(m["H"], m["1"])
    # a Slice axis whose copies hold different data (a live axis spelled as a placement digit): the reference's
    # live_placement_renamed, refused by the data the copies hold
    x = HostTensor.rand(bf16, m["A, X, H, V"], RNG)
    ctx.num_chips = 1
    h = x.to_hbm(m["1"], m["A, X, H, V"], ctx.pdma, 1 << 22)
    dm = h.to_dm(m["1 # 2"], m["A, X"], m["H, V"], ctx.tdma, 1 << 16)
    f = ctx.main.begin(dm.view()).fetch(bf16, m["H"], m["V"])
    with pytest.raises(LayoutError, match="live, not a broadcast") as err:
        f.fetch_slice_lift(m["A, H"], m["1"])
    assert err.value.level == "Slice" and err.value.axis == "X"


def test_a_lifted_base_is_an_8_byte_word() -> None:
    """The reference's unaligned_base_step: i8 ``[Step, Four]``, the lifted step 4 bytes (L1756)."""
    ctx = Context.acquire()
    f = _fetched(ctx, "A, X", "Step, Four", "Step", "Four # 8", dtype=i8)
    with pytest.raises(AddressError, match="8-byte aligned") as err:
        f.fetch_slice_lift(m["A, Step"], m["1"])
    assert err.value.level == "Slice" and RNGD.fetch.lift_base_align_bytes == 8


def test_a_level_is_lifted_once_and_only_after_fetch() -> None:
    ctx = Context.acquire()
    f = _fetched(ctx, "A, X", "H, V", "H", "V").fetch_slice_lift(m["A, H"], m["1"])
    with pytest.raises(TypestateError, match="already lifted"):
        f.fetch_slice_lift(m["A, H"], m["1"])
    c = _fetched(ctx, "A, X", "H, V", "H", "V").collect(m["H"], m["V"])
    with pytest.raises(TypestateError, match="FetchTensor"):
        c.fetch_slice_lift(m["A, H"], m["1"])


def test_plan_is_pure_and_names_the_replaced_digit() -> None:
    cfg = lift.plan(RNGD, "Slice", m["A, X"], m["A, H"], m["H"], m["1"], m["V"], frozenset())
    assert cfg.replaced == ("X",) and cfg.factor == 2
    assert cfg.steps.tolist() == [0, 1] * 128  # slice (a, x) reads lifted index x
    with pytest.raises(LayoutError, match="moves between"):  # A's coordinate moves: not only the broadcast changes
        lift.plan(RNGD, "Slice", m["A, X"], m["H, A"], m["H"], m["1"], m["V"], frozenset())
    with pytest.raises(LayoutError, match="no other new axis"):
        lift.plan(RNGD, "Slice", m["A, X"], m["A, Y"], m["H"], m["1"], m["V"], frozenset())
    with pytest.raises(LayoutError, match="live axis of the stream"):
        lift.plan(RNGD, "Slice", m["A, X"], m["A, H"], m["H"], m["1"], m["X # 16"], frozenset())
