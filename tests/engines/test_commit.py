"""Commit Engine: truncation, the commit sequencer, the slice bitmap and the write rules (manual L2145–2354),
the four Fetch and Commit kernel examples (L7611–7981), and fetch → collect → commit as the identity.

Streams are built with ``visa.testing.make_stream`` (one engine at a time) or fetched from DM placed with
``visa.testing.place_dm``; results are read back with ``DmTensor.logical()`` and compared with numpy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.example_loader import load_example
from visa import RNGD, AxisSet, Context, DmTensor, bf16, f8e4m3, f32, i4, i8, i32
from visa import dtypes as dt
from visa.engines import collect as CO
from visa.engines import commit as CM
from visa.engines.common import StreamData, StreamLayout
from visa.errors import AddressError, AllocationError, HardwareLimitError, LayoutError, VisaError
from visa.memory.images import load
from visa.stream.stages import AccumulationTensor, CastTensor, CollectTensor, FetchTensor
from visa.testing import hold, make_stream, place_dm

RNG = np.random.default_rng(5)


def new_ctx() -> Context:
    ctx = Context(RNGD)
    ctx.num_chips = 1
    return ctx


def stream(tu: Any, cls: Any, ax: AxisSet, dtype: Any, time: str, packet: str, array: Any, axes: str | None = None,
           slice_: str = "1 # 256") -> Any:
    m = ax.m
    layout = StreamLayout(dtype, m["1"], m["1 # 2"], m[slice_], m[time], m[packet])
    return make_stream(tu, cls, layout, array, axes=axes)


def plan(ax: AxisSet, dtype: Any, time: str, packet: str, element: str, **kw: Any) -> CM.CommitConfig:
    m = ax.m
    return CM.plan(RNGD, dtype, m["1"], m["1 # 2"], m["1 # 256"], m[time], m[packet], m[element], **kw)


MKWNJ = dict(M=4, K=2, W=8, N=16, J=64)


@pytest.mark.parametrize(
    "line,cls,dtype,time,packet,element,entries,commit_in,contiguous,commit_size,writes",
    [
        (2201, CastTensor, i8, "M, K", "W # 32", "M, K, W", "[4 : 16, 2 : 8, 8 : 1]", 8, 64, 8, 1),
        (2209, AccumulationTensor, f32, "M, K", "W", "M, K, W = 4", "[4 : 8, 2 : 4, 4 : 1]", 16, 128, 16, 1),
        (2217, CastTensor, bf16, "M, K", "N", "K, M, N = 8", "[4 : 8, 2 : 32, 8 : 1]", 16, 16, 16, 1),
        (2226, CastTensor, i4, "M, K", "J", "K, M, J", "[4 : 64, 2 : 256, 64 : 1]", 32, 32, 32, 1),
        (2269, AccumulationTensor, f32, "M, K", "W", "K, M, W", "[4 : 8, 2 : 32, 8 : 1]", 32, 32, 32, 1),
        (2295, CastTensor, i8, "K", "M, W", "K, M, W # 16", "[2 : 64, 4 : 16, 8 : 1]", 32, 8, 8, 4),
    ],
)
def test_truncation_and_commit_sequencer_L2187_L2313(line: int, cls: Any, dtype: Any, time: str, packet: str,
                                                      element: str, entries: str, commit_in: int, contiguous: int,
                                                      commit_size: int, writes: int) -> None:
    ax = AxisSet(**MKWNJ)
    cfg = plan(ax, dtype, time, packet, element)
    assert "[" + ", ".join(str(e) for e in cfg.sequencer.entries) + "]" == entries
    assert (cfg.commit_in_size, cfg.contiguous_sram_access_size, cfg.commit_size, cfg.writes_per_step) == (
        commit_in, contiguous, commit_size, writes)
    assert CM.cycles(cfg) == ax.m[time].size * writes
    # the data: the committed tensor holds what the stream holds (the part the Element keeps)
    ctx = new_ctx()
    names = " ".join(n for n in "MKWNJ" if n in time + packet)
    shape = tuple(MKWNJ[n] for n in names.split())
    x = dt.random_values(dtype, shape, RNG)
    out = stream(ctx.main, cls, ax, dtype, time, packet, x, axes=names).commit(ax.m[element], 1024)
    assert isinstance(out, DmTensor) and out.address == 1024
    vals, known = held_in_dm(ctx, out)
    want, valid = hold(x, dtype, [ax.m[element]], axes=names)
    assert known[valid].all() and np.array_equal(vals[valid], want[valid])


def held_in_dm(ctx: Context, t: DmTensor) -> tuple[np.ndarray, np.ndarray]:
    """The Element buffer of slice 0, cluster 0 (values, known), read straight from the DM image."""
    el = t.levels["Element"]
    bits = t.address * 8 + np.arange(el.size, dtype=np.int64) * t.dtype.image_bits
    v, k = load(t.dtype, ctx.memory.chip(0).dm, bits)
    return v[0, 0], k[0, 0]


def test_commit_chunking_offsets_L2305_L2312() -> None:
    # the 32-byte packet is split into 4 writes along M: packet[8k .. 8k + 8] -> DM offset 16 k (+ 64 per K)
    ax = AxisSet(**MKWNJ)
    ctx = new_ctx()
    x = dt.random_values(i8, (2, 4, 8), RNG)
    stream(ctx.main, CastTensor, ax, i8, "K", "M, W", x, axes="K M W").commit(ax.m["K, M, W # 16"], 0)
    raw = ctx.memory.chip(0).dm.data[0, 0].view(np.int8)
    for k in range(2):
        for w in range(4):
            assert np.array_equal(raw[64 * k + 16 * w: 64 * k + 16 * w + 8], x[k, w])


def test_cast_commit_across_256_slices_L2173_L2185() -> None:
    ax = AxisSet(P=256, M=16, N=8)
    m = ax.m
    ctx = new_ctx()
    x = dt.random_values(bf16, (256, 16, 8), RNG)
    s = stream(ctx.main, CastTensor, ax, bf16, "M", "N # 16", x, axes="P M N", slice_="P")
    out = s.commit(m["M, N # 16"], 0)
    assert np.array_equal(out.logical(axes="P M N"), x)
    cfg = CM.plan(RNGD, bf16, m["1"], m["1 # 2"], m["P"], m["M"], m["N # 16"],
                                           m["M, N # 16"])
    assert CM.cycles(cfg) == 16 and cfg.bitmaps == ((1 << 256) - 1, 0)


def test_slice_bitmap_L2314_L2319() -> None:
    ax = AxisSet(S=255, A=8)
    m = ax.m
    only0 = CM.plan(RNGD, i32, m["1"], m["1 # 2"], m["1 # 256"], m["1"], m["A"], m["A"])
    assert only0.bitmaps == (0b1, 0)  # ...0001: slice 0 only
    but0 = CM.plan(RNGD, i32, m["1"], m["1 # 2"], m["# 1 + S"], m["1"], m["A"], m["A"])
    assert but0.bitmaps[0] == (1 << 256) - 2  # ...1110: every slice but slice 0
    ctx = new_ctx()
    x = dt.random_values(i32, (255, 8), RNG)
    out = stream(ctx.main, CollectTensor, ax, i32, "1", "A", x, axes="S A", slice_="# 1 + S").commit(m["A"], 64)
    assert np.array_equal(out.logical(axes="S A"), x)
    dmw = ctx.memory.chip(0).dm.written
    assert not dmw[0, 0, 64:96].any() and dmw[0, 1, 64:96].all() and not dmw[1].any()


# ------------------------------------------------------------------------------------------------ rules


def test_writes_never_go_past_the_tensor_boundary_L7883_L7897() -> None:
    ax = AxisSet(A=65, B=2)
    with pytest.raises(AddressError) as err:
        plan(ax, f8e4m3, "B, [A # 96] / 32", "[A # 96] % 32", "B, A # 88")
    assert "never go past the tensor's boundary" in str(err.value)
    assert err.value.level == "Element" and "commit" in str(err.value.call) and "A" in str(err.value.axis)
    # with room after the last row, the padding of row 0's last write would land on row 1: refused too
    with pytest.raises(LayoutError) as err2:
        plan(ax, f8e4m3, "B, [A # 96] / 32", "[A # 96] % 32", "B # 3, A # 88")
    assert "padding over element" in str(err2.value) and err2.value.level == "Packet"


def test_no_broadcast_or_discard_L7775() -> None:
    ax = AxisSet(M=4, K=2, W=8)
    with pytest.raises(LayoutError) as err:
        plan(ax, i8, "M, K", "W # 32", "M, W")  # K would need stride 0
    assert err.value.axis == "K" and err.value.level == "Time" and "stride-0" in str(err.value)
    with pytest.raises(LayoutError) as err2:
        plan(ax, i8, "M", "W # 32", "M, K, W")  # K is never delivered
    assert err2.value.axis == "K" and err2.value.level == "Element"


def test_strides_are_multiples_of_8_bytes_L2338() -> None:
    ax = AxisSet(A=4, B=8)
    with pytest.raises(HardwareLimitError) as err:
        plan(ax, i8, "A", "B # 32", "A, B # 12")
    assert "multiple of 8 bytes" in str(err.value) and err.value.axis == "A" and err.value.level == "Time"


def test_commit_size_must_be_a_commit_size_L2330() -> None:
    ax = AxisSet(K=2, W=4, M=4)
    with pytest.raises(HardwareLimitError) as err:
        plan(ax, i8, "M", "[K, W] # 32", "K, M, W")  # 4-byte runs: gcd(4, 8) = 4
    assert "commit_size" in str(err.value) and err.value.level == "Element"


def test_input_packet_is_one_flit_L2192_L2328() -> None:
    ax = AxisSet(A=4, B=8)
    ctx = new_ctx()
    s = stream(ctx.main, FetchTensor, ax, i8, "A", "B", dt.random_values(i8, (4, 8), RNG))
    with pytest.raises(HardwareLimitError) as err:
        s.commit(ax.m["A, B"], 0)
    assert err.value.level == "Packet" and err.value.axis == "B" and "collect" in str(err.value.fix)


def test_sub_context_commits_L2327_L2337() -> None:
    ax = AxisSet(M=4, K=2, W=8)
    m = ax.m
    # commit_size is 8 bytes only: a 32-byte flit takes 4 writes
    cfg = plan(ax, f32, "M, K", "W", "K, M, W", context="sub")
    assert (cfg.commit_size, cfg.writes_per_step, CM.cycles(cfg)) == (8, 4, 32)
    ctx = new_ctx()
    x = dt.random_values(f32, (4, 2, 8), RNG)
    out = stream(ctx.sub, CollectTensor, ax, f32, "M, K", "W", x, axes="M K W").commit(m["K, M, W"], 0)
    assert np.array_equal(out.logical(axes="M K W"), x) and ctx.schedule.ops[-1].track == "sub"
    # and only after fetch: not after the Cast Engine
    s = stream(ctx.sub, CastTensor, ax, f32, "M, K", "W", x, axes="M K W")
    with pytest.raises(HardwareLimitError) as err:
        s.commit(m["K, M, W"], 1024)
    assert "only follow fetch" in str(err.value) and "sub context" in str(err.value.call)


def test_commit_over_the_tensor_being_fetched_is_refused_L150_L155() -> None:
    ax = AxisSet(A=8, B=32)
    m = ax.m
    ctx = new_ctx()
    t = place_dm(ctx, dt.random_values(i8, (8, 32), RNG), i8, m["1"], m["1 # 2"], m["1 # 256"], m["A, B"], 0)
    s = ctx.main.begin(t.view()).fetch(i8, m["A"], m["B"]).collect(m["A"], m["B"])
    with pytest.raises(AllocationError):
        s.commit(m["A, B"], 128)  # bytes 128..383 overlap the input's 0..255
    s2 = ctx.main.begin(t.view()).fetch(i8, m["A"], m["B"]).collect(m["A"], m["B"])
    out = s2.commit(m["A, B"], 256)
    assert out.ready_at == ctx.schedule.ops[-1].end and np.array_equal(out.logical(), t.logical())


def test_poison_padding_is_committed_as_poison() -> None:
    # the sub context does not mask: the padding bytes it commits stay unwritten in DM
    ax = AxisSet(A=4, C=6)
    m = ax.m
    ctx = new_ctx()
    x = dt.random_values(i8, (4, 6), RNG)
    t = place_dm(ctx, x, i8, m["1"], m["1 # 2"], m["1 # 256"], m["A, C"], 0, axes="A C")
    out = (ctx.sub.begin(t.view()).fetch(i8, m["A"], m["C # 8"]).collect(m["A"], m["C # 32"])
           .commit(m["A, C # 8"], 64))
    assert np.array_equal(out.logical(axes="A C"), x)
    written = ctx.memory.chip(0).dm.written[0, 0, 64:96].reshape(4, 8)
    assert written[:, :6].all() and not written[:, 6:].any()


def test_commit_view_rules_L2159_L2163() -> None:
    ax = AxisSet(A=8, B=32)
    m = ax.m
    ctx = new_ctx()
    x = dt.random_values(i8, (8, 32), RNG)
    src = place_dm(ctx, x, i8, m["1"], m["1 # 2"], m["1 # 256"], m["A, B"], 0)
    dst = DmTensor(ctx, i8, m["1"], m["1 # 2"], m["1 # 256"], m["A, B"], 4096, call="test")
    for k in range(2):
        view = dst.view().tile(m["A"], 4, m["A = 4, B"], 4 * k)
        tile = src.view().tile(m["A"], 4, m["A = 4, B"], 4 * k)
        ctx.main.begin(tile).fetch(i8, m["A % 4"], m["B"]).collect(m["A % 4"], m["B"]).commit_view(view)
    assert np.array_equal(dst.logical(), x) and dst.ready_at == ctx.schedule.ops[-1].end
    s = ctx.main.begin(src.view()).fetch(i8, m["A"], m["B"]).collect(m["A"], m["B"])
    with pytest.raises(AllocationError):
        s.commit_view(src.view())  # writing the tensor the pass reads
    s = stream(ctx.main, CollectTensor, AxisSet(A=8, B=8), i32, "A", "B", np.zeros((8, 8), dtype=np.int32))
    with pytest.raises(LayoutError):
        s.commit_view(dst.view())  # i32 into an i8 tensor


def test_commit_view_keeps_to_its_view() -> None:
    # a tile whose padding covers elements of the tensor that it does not own may not be written there
    ax = AxisSet(A=4, B=16, C=12)
    m = ax.m
    base = m["A, B"]  # the whole tensor; the view claims 12 of every 16 bytes
    with pytest.raises(AddressError) as err:
        CM.plan(RNGD, i8, m["1"], m["1 # 2"], m["1 # 256"], m["A"], m["C # 32"], m["A, C # 16"],
                region=(base, 0))
    assert "does not own" in str(err.value)


# ------------------------------------------------------------------------------------------------ examples


EX = load_example("fetch_commit")


def test_example1_axis_permutation_L7614_L7708() -> None:
    run = EX.example1()
    assert run.ok and run.busy == 15 and run.cycles == {"fetch": 15, "switch": 15, "collect": 15, "commit": 15}
    assert run.pass_cycles == RNGD.timing.full_command_cycles + 15  # the command: its issue and fill (issue 22)
    assert "sequencer [3 : 8, 5 : 24, 8 : 1] @ 1024 / 8" in run.configs["commit"]


def test_example2_full_flit_commit_L7709_L7775() -> None:
    run = EX.example2()
    assert run.ok and run.busy == 3 and run.cycles["commit"] == 3  # 3 cycles versus 15 (L7763)
    assert "sequencer [3 : 32, 32 : 1] @ 1024 / 32" in run.configs["commit"]
    assert "commit_in_size = 32 B" in run.configs["commit"]


@pytest.mark.parametrize(
    "dummy,cycles,config",
    [(7, 6, "[2 : 72, 3 : 24, 24 : 1] @ 1024 / 24"), (15, 10, "[2 : 80, 5 : 16, 16 : 1] @ 1024 / 16"),
     (23, 22, "[2 : 88, 11 : 8, 8 : 1] @ 1024 / 8"), (31, 6, "[2 : 96, 3 : 32, 32 : 1] @ 1024 / 32")],
)
def test_example3_tail_padding_L7776_L7882(dummy: int, cycles: int, config: str) -> None:
    run = EX.example3(dummy)
    assert run.ok and run.busy == cycles
    assert run.cycles["fetch"] == cycles and run.cycles["commit"] == cycles
    assert config in run.configs["commit"]


def test_example3_refused_L7883_L7897() -> None:
    assert "never go past the tensor's boundary" in EX.example3_refused()


def test_example4_segmentation_L7898_L7981() -> None:
    first, second = EX.example4()
    assert first.ok and second.ok and first.busy == second.busy == 1024
    assert "@ 262144 / 32" in first.configs["commit"] and "@ 294912 / 32" in second.configs["commit"]


# ------------------------------------------------------------------------------------------------ property


@st.composite
def fetch_commit_cases(draw: Any) -> tuple[Any, ...]:
    """A tensor over 2-3 axes, a DM layout, a stream and a committed layout that are all legal."""
    dtype = draw(st.sampled_from([i8, bf16, i32, f8e4m3]))
    nb = dtype.size_bits // 8
    n = draw(st.integers(2, 3))
    names = ["A", "B", "C"][:n]
    sizes = {a: draw(st.sampled_from([2, 3, 4, 5, 8])) for a in names}
    order = draw(st.permutations(names))
    in_pad = draw(st.sampled_from([0, 1, 3]))
    slice_axis = draw(st.sampled_from([None, *names]))
    rest = [a for a in names if a != slice_axis]
    packet_axes = draw(st.sampled_from([rest[-1:], rest[-2:]] if len(rest) > 1 else [rest[-1:]]))
    time_axes = draw(st.permutations([a for a in rest if a not in packet_axes]))
    out_time = draw(st.permutations(list(time_axes)))
    return dtype, nb, sizes, order, in_pad, slice_axis, packet_axes, list(time_axes), list(out_time)


def _group(axes_: list[str]) -> str:
    return axes_[0] if len(axes_) == 1 else "[" + ", ".join(axes_) + "]"


@settings(max_examples=40, deadline=None)
@given(fetch_commit_cases())
def test_fetch_then_commit_is_the_identity(case: tuple[Any, ...]) -> None:
    fetch_commit_identity(*case)


def fetch_commit_identity(dtype: Any, nb: int, sizes: dict[str, int], order: list[str], in_pad: int,
                          slice_axis: str | None, packet_axes: list[str], time_axes: list[str],
                          out_time: list[str]) -> None:
    """Fetch a DM tensor as a stream, collect it, commit it to another layout: the same tensor comes back."""
    ax = AxisSet(**sizes)
    m = ax.m
    elem_order = [a for a in order if a != slice_axis]
    inner = elem_order[-1]
    element = ", ".join(elem_order[:-1] + [f"{inner} # {sizes[inner] + in_pad}" if in_pad else inner])
    slice_ = f"{slice_axis} # 256" if slice_axis else "1 # 256"
    unit = 8 // math.gcd(8, nb)  # elements per 8 bytes
    count = math.prod(sizes[a] for a in packet_axes)
    if count % unit and len(packet_axes) > 1:  # a padded pair is one digit: keep only the innermost axis
        time_axes, out_time = time_axes + packet_axes[:1], out_time + packet_axes[:1]
        packet_axes = packet_axes[1:]
        count = sizes[packet_axes[0]]
    padded = -(-count // unit) * unit
    group = _group(packet_axes)
    packet = m[f"{group} # {padded}"] if padded != count else m[group]
    time = m[", ".join(time_axes)] if time_axes else m["1"]
    ctx = new_ctx()
    x = dt.random_values(dtype, tuple(sizes[a] for a in ax.sizes), RNG)
    names = " ".join(ax.sizes)
    src = place_dm(ctx, x, dtype, m["1"], m["1 # 2"], m[slice_], m[element], 0, axes=names)
    fetched = ctx.main.begin(src.view()).fetch(dtype, time, packet)
    t2, p2 = CO.normalise(RNGD, dtype, time, packet)
    collected = fetched.collect(t2, p2)
    # the committed layout: the Time axes in any order, the packet's axes padded to a commit_in size
    if t2.size == time.size:
        width = next(s for s in RNGD.commit.commit_in_sizes if s >= count * nb) // nb
        out_elem = ", ".join([*out_time, f"{group} # {width}" if width != count else group])
    else:  # several flits per packet: rows of whole flits
        out_elem = ", ".join([*time_axes, f"{group} # {p2.size * (t2.size // time.size)}"])
    try:
        out = collected.commit(m[out_elem], 1 << 16)
    except VisaError as err:  # pragma: no cover - a legal pair must commit
        raise AssertionError(f"{out_elem}: {err}") from err
    assert np.array_equal(out.logical(axes=names), x, equal_nan=True)
    assert np.array_equal(src.logical(axes=names), x, equal_nan=True)


# ------------------------------------------------------------------------------------------------ regressions


def test_odd_number_of_4bit_elements_per_row_keeps_the_last_one() -> None:
    # R = 3 i4 per row in `R # 16`: element 2 shares byte 1 with the padding nibble 3, which the stream carries as
    # padding (poison); the byte stays written (the padding holds no element), element 2 reads back
    ax = AxisSet(A=4, R=3)
    m = ax.m
    ctx = new_ctx()
    x = dt.random_values(i4, (4, 3), RNG)
    out = stream(ctx.main, CastTensor, ax, i4, "A", "R # 64", x, axes="A R").commit(m["A, R # 16"], 0)
    assert np.array_equal(out.logical(axes="A R"), x)
    written = ctx.memory.chip(0).dm.written[0, 0, :32].reshape(4, 8)
    assert written[:, :2].all() and not written[:, 2:].any()  # bytes of padding alone stay unwritten


def test_poisoned_4bit_element_poisons_its_byte() -> None:
    # a poisoned element (not padding) next to a known one: one written flag per byte, so both read as poison
    ax = AxisSet(A=2, R=4)
    m = ax.m
    ctx = new_ctx()
    layout = StreamLayout(i4, m["1"], m["1 # 2"], m["1 # 256"], m["A"], m["R # 64"])
    levels = [layout.level(n) for n in ("Chip", "Cluster", "Slice", "Time", "Packet")]
    values, known = hold(dt.random_values(i4, (2, 4), RNG), i4, levels, axes="A R")
    known = known.copy()
    known[0, 0, 0, 1, 3] = False  # element (A=1, R=3), high nibble of byte 1 of row 1
    out = CastTensor(ctx.main, layout, StreamData(values, known)).commit(m["A, R # 16"], 0)
    _, k = held_in_dm(ctx, out)
    assert k[:4].all() and k[16:18].all() and not k[18:20].any()


def test_one_element_tiles_commit_through_merged_padding() -> None:
    # E = R = 1: `E # 8` in Time and `R # 8` in the written packet are padding-only loops; the Element's padding
    # (one merged 64-position digit) takes them both, strides 8 and 1 (the write sequencer has no stride 0, L7775)
    ax = AxisSet(O=2, E=1, R=1)
    m = ax.m
    cfg = plan(ax, i8, "O, E # 8", "R # 32", "O, E # 8, R # 8")
    assert [str(e) for e in cfg.sequencer.entries] == ["2 : 64", "8 : 8", "8 : 1"]
    ctx = new_ctx()
    x = dt.random_values(i8, (2,), RNG)  # axes of size 1 are no axes of the tensor
    out = stream(ctx.main, CastTensor, ax, i8, "O, E # 8", "R # 32", x, axes="O").commit(m["O, E # 8, R # 8"], 0)
    assert np.array_equal(out.logical(axes="O"), x)


def test_stream_validity_is_joint_whatever_was_cached_before() -> None:
    # `1, [A, B] # 16 / 8` with A·B = 12 and `1, [A, B] / 8` with A·B = 16 are equivalent level by level, but
    # jointly the first holds 12 elements and the second 16: a cache keyed by the levels gave one for the other
    from visa.engines.fetch import stream_validity

    full, padded = AxisSet(A=4, B=4).m, AxisSet(A=3, B=4).m
    t16, p16 = full["1, [A, B] / 8"], full["[A, B] % 8"]
    t12, p12 = padded["1, [A, B] # 16 / 8"], padded["[A, B] # 16 % 8"]
    assert t16 == t12 and p16 == p12
    assert stream_validity(t16, p16).all()
    assert stream_validity(t12, p12).reshape(-1).tolist() == [True] * 12 + [False] * 4


# ------------------------------------------------------------------------------------------------ sub context


def _sub_stream(ctx: Context, ax: AxisSet, x: np.ndarray, slice_: str = "1 # 256") -> Any:
    m = ax.m
    src = place_dm(ctx, x, i32, m["1"], m["1 # 2"], m[slice_], m["T, L"], 0)
    return ctx.sub.begin(src.view()).fetch(i32, m["T"], m["L"])


def test_valid_count_packing_writes_the_leading_lanes_L2322_L2324() -> None:
    """Valid-count packing (sub context): only the first ``count`` lanes of each packet are committed; the rest of
    the destination keeps its bytes (issue 27 item 5).  A count of 3, then each slice's own count from DM."""
    ax = AxisSet(T=4, L=8, S=2)
    m = ax.m
    ctx = new_ctx()
    x = np.arange(32, dtype=np.int32).reshape(4, 8)
    old = np.full((4, 8), -1, dtype=np.int32)
    dst = place_dm(ctx, old, i32, m["1"], m["1 # 2"], m["1 # 256"], m["T, L"], 1 << 12)
    _sub_stream(ctx, ax, x).commit_view(dst.view(), valid_count=3)
    assert np.array_equal(dst.logical(axes="T L"), np.where(np.arange(8) < 3, x, old))
    # a count per slice, read from DM when the pass runs (two slices: counts 2 and 5)
    x2 = np.arange(64, dtype=np.int32).reshape(2, 4, 8)
    counts = place_dm(ctx, np.array([2, 5], np.int32), i32, m["1"], m["1 # 2"], m["S # 256"], m["1 # 2"], 1 << 14)
    src = place_dm(ctx, x2, i32, m["1"], m["1 # 2"], m["S # 256"], m["T, L"], 1 << 15, axes="S T L")
    dst2 = place_dm(ctx, np.zeros((2, 4, 8), np.int32), i32, m["1"], m["1 # 2"], m["S # 256"], m["T, L"], 1 << 16,
                    axes="S T L")
    ctx.sub.begin(src.view()).fetch(i32, m["T"], m["L"]).commit_view(
        dst2.view(), valid_count=counts.view().tile(m["1 # 2"], 1, m["1"], 0))
    got = dst2.logical(axes="S T L")
    lanes = np.arange(8)
    assert np.array_equal(got[0], np.where(lanes < 2, x2[0], 0))
    assert np.array_equal(got[1], np.where(lanes < 5, x2[1], 0))
    op = ctx.schedule.ops[-1]
    assert any(s.memory == "dm" and int(s.lo[0]) == 1 << 14 for s in op.reads.spans)  # the count is read


def test_valid_count_packing_is_the_sub_contexts_L2329_L2331() -> None:
    ax = AxisSet(T=4, L=8)
    m = ax.m
    ctx = new_ctx()
    x = np.arange(32, dtype=np.int32).reshape(4, 8)
    src = place_dm(ctx, x, i32, m["1"], m["1 # 2"], m["1 # 256"], m["T, L"], 0)
    with pytest.raises(HardwareLimitError, match="no valid-count packing") as err:
        ctx.main.begin(src.view()).fetch(i32, m["T"], m["L"]).commit(m["T, L"], 1 << 12, valid_count=3)
    assert "ctx.sub" in (err.value.fix or "")
    with pytest.raises(LayoutError, match="valid count of 9"):
        _sub_stream(ctx, ax, x).commit(m["T, L"], 1 << 12, valid_count=9)


def test_generate_mode_writes_one_value_L2325_L2326() -> None:
    """Generate mode (ITOS, sub context): one 32-bit value at a one-element view, in every slice the tensor
    occupies, without the pipeline (one cycle on the sub track)."""
    ax = AxisSet(N=4, S=3)
    m = ax.m
    ctx = new_ctx()
    t = place_dm(ctx, np.zeros((3, 4), np.int32), i32, m["1"], m["1 # 2"], m["S # 256"], m["N"], 256, axes="S N")
    ctx.sub.generate(t.view().tile(m["N"], 1, m["N = 1"], 2), 77)
    want = np.zeros((3, 4), np.int32)
    want[:, 2] = 77
    assert np.array_equal(t.logical(axes="S N"), want)
    op = ctx.schedule.ops[-1]
    assert op.track == "sub" and op.cycles == 1 and op.name == "generate"
    f = place_dm(ctx, np.zeros(4, np.float32), f32, m["1"], m["1 # 2"], m["1 # 256"], m["N"], 512)
    ctx.sub.generate(f.view().tile(m["N"], 1, m["N = 1"], 0), 1.5)
    assert f.logical(axes="N")[0] == 1.5
    with pytest.raises(HardwareLimitError, match="no generate mode"):
        ctx.main.generate(t.view().tile(m["N"], 1, m["N = 1"], 0), 1)
    with pytest.raises(LayoutError, match="holds 4 elements"):
        ctx.sub.generate(t.view(), 1)
    b = place_dm(ctx, np.zeros(4, np.int8), i8, m["1"], m["1 # 2"], m["1 # 256"], m["N, 1 # 2"], 1024)
    with pytest.raises(VisaError, match="single 32-bit value"):
        ctx.sub.generate(b.view().tile(m["N"], 1, m["N = 1, 1 # 2"], 0), 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(1, 4)), min_size=1, max_size=4))
def test_the_configuration_chosen_from_the_largest_is_the_ascending_choice(writes: list[int | None]) -> None:
    """``commit._choose`` (from the largest commit_in_size, stopping at one write per step) picks what trying every
    size from the smallest and keeping the later of equals picks, and raises the smallest refused size's error
    when none is legal (None: that size is refused)."""
    sizes = [8, 16, 24, 32][: len(writes)]
    by_size = dict(zip(sizes, writes, strict=True))
    tried: list[int] = []

    def configure(size: int) -> Any:
        tried.append(size)
        if by_size[size] is None:
            raise LayoutError(f"size {size} refused", call="commit")
        return type("Cfg", (), {"writes_per_step": by_size[size], "size": size})()

    best, error = CM._choose(sizes, configure)
    want, first = None, None
    for size in sizes:  # the rule as stated: ascending, the later of equals
        if by_size[size] is None:
            first = first or f"size {size} refused"
        elif want is None or by_size[size] <= by_size[want]:  # type: ignore[operator]
            want = size
    if want is None:
        assert best is None and error is not None and error.message == first
    else:
        assert best is not None and best.size == want and error is None


def test_the_commit_plans_one_configuration_when_the_largest_writes_once() -> None:
    """The row max's commit (one i32 per slice, ``1 # 8``): the 32-byte flit written in one commit per step."""
    ax = AxisSet(R=512)
    m = ax.m
    cfg = CM.plan(RNGD, i32, m["1"], m["R / 256"], m["R % 256"], m["1"], m["1 # 8"], m["1 # 8"])
    assert (cfg.commit_in_size, cfg.writes_per_step) == (32, 1)
