"""Collect Engine (packets to 32-byte flits) and the register-file loads ``to_trf`` / ``to_vrf``.

Manual "Collect Engine" L3543–3669 (digest 2 §2.2, §5.2), "Fetch Engine and Switch Engine Interaction"
L2119–2130, TRF L4035–4168 (digest 2 §2.3, §5.3), VRF L280–285 and L5063–5081.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import RNGD, AxisSet, Context, TrfAddress, bf16, i4, i8, i32
from visa import dtypes as dt
from visa.engines import collect as CO
from visa.engines.common import StreamLayout
from visa.errors import HardwareLimitError, LayoutError
from visa.stream.stages import CollectTensor, FetchTensor, SwitchTensor
from visa.testing import make_stream, place_dm, stream_logical

RNG = np.random.default_rng(11)


def new_ctx() -> Context:
    ctx = Context(RNGD)
    ctx.num_chips = 1
    return ctx


def stream(ctx: Context, cls: Any, ax: AxisSet, dtype: Any, time: str, packet: str, array: Any,
           axes: str | None = None) -> Any:
    m = ax.m
    layout = StreamLayout(dtype, m["1"], m["1 # 2"], m["1 # 256"], m[time], m[packet])
    return make_stream(ctx.main, cls, layout, array, axes=axes)


@pytest.mark.parametrize(
    "line,dtype,sizes,time,packet,time2,packet2",
    [
        (3566, i8, dict(A=8, B=32), "A", "B", "A", "B # 32"),                # one flit: identity
        (3577, i8, dict(A=8, B=16), "A", "B", "A", "B # 32"),                # pad to one flit
        (3590, bf16, dict(A=8, B=32), "A", "B", "A, B / 16", "B % 16"),      # 64 bytes: 2 flits
        (3607, i8, dict(A=8, B=64), "A", "B", "A, B / 32", "B % 32"),        # FetchTensor::collect()
        (2121, i8, dict(T=3, A=40), "T", "A", "T, [A # 64] / 32", "[A # 64] % 32"),  # 40 B -> 64 B, 2 flits
        (3590, i4, dict(A=2, J=64), "A", "J", "A", "J"),                     # 64 i4 = one flit
    ],
)
def test_normalisation_L3560_L3618(line: int, dtype: Any, sizes: dict[str, int], time: str, packet: str,
                                   time2: str, packet2: str) -> None:
    ax = AxisSet(**sizes)
    m = ax.m
    t2, p2 = CO.normalise(RNGD, dtype, m[time], m[packet])
    assert t2 == m[time2] and p2 == m[packet2]
    cfg = CO.plan(RNGD, dtype, m[time], m[packet], m[time2], m[packet2])
    assert CO.cycles(cfg) == m[time2].size  # one flit per cycle
    ctx = new_ctx()
    names = " ".join(sizes)
    x = dt.random_values(dtype, tuple(sizes.values()), RNG)
    s = stream(ctx, FetchTensor if line == 3607 else SwitchTensor, ax, dtype, time, packet, x, axes=names)
    c = s.collect(m[time2], m[packet2])
    assert isinstance(c, CollectTensor)
    assert np.array_equal(stream_logical(c, axes=names), x)
    v, k = c.data.values[0, 0, 0], c.data.known[0, 0, 0]
    assert k.all()  # the Collect Engine pads with zeros (L2122), known values
    pad = cfg.pad_elements
    if pad and cfg.flits_per_packet == 1:
        assert np.all(v[:, -pad:].astype(np.float64) == 0)
    assert c.reports[-1].engine == "collect"


def test_flit_order_L3647_L3660() -> None:
    # flit f of a packet holds its elements 16 f .. 16 f + 15, delivered in time step (a, f)
    ax = AxisSet(A=8, B=32)
    ctx = new_ctx()
    x = dt.random_values(bf16, (8, 32), RNG)
    c = stream(ctx, SwitchTensor, ax, bf16, "A", "B", x).collect(ax.m["A, B / 16"], ax.m["B % 16"])
    v = c.data.values[0, 0, 0]
    assert np.array_equal(v[3], x[1, 16:]) and np.array_equal(v[4], x[2, :16])


def test_forty_byte_packet_is_two_flits_L2121_L2128() -> None:
    ax = AxisSet(T=3, A=40)
    cfg = CO.plan(RNGD, i8, ax.m["T"], ax.m["A"], ax.m["T, [A # 64] / 32"], ax.m["[A # 64] % 32"])
    assert (cfg.packet_bytes, cfg.flits_per_packet, cfg.pad_elements) == (40, 2, 24)
    assert "zero padding 24 B" in str(cfg)


def test_collect_refusals_L3547_L3558() -> None:
    ax = AxisSet(A=8, B=32)
    m = ax.m
    with pytest.raises(HardwareLimitError) as err:
        CO.plan(RNGD, bf16, m["A"], m["B"], m["A"], m["B"])  # 64 bytes is not one flit
    assert err.value.level == "Packet" and err.value.call == "collect" and err.value.axis == "B"
    with pytest.raises(LayoutError) as err2:
        CO.plan(RNGD, bf16, m["A"], m["B"], m["B / 16, A"], m["B % 16"])  # the flit axis must be innermost
    assert err2.value.level == "Time" and 'A, B / 16' in str(err2.value.fix)
    with pytest.raises(LayoutError) as err3:
        CO.plan(RNGD, i8, m["A"], m["B"], m["A"], m["B % 16, B / 16"])  # 32 bytes, but not the packet
    assert err3.value.level == "Packet"


# ------------------------------------------------------------------------------------------------ TRF


def test_to_trf_batched_matmul_weights_L3816_L3838() -> None:
    # weights W[N, O, M, K] bf16: collect Time [N, O, M], Packet [K] -> Row N, Element [O, M, K] (2 KB per Row)
    ax = AxisSet(M=32, N=8, K=16, O=2)
    m = ax.m
    ctx = new_ctx()
    w = dt.random_values(bf16, (8, 2, 32, 16), RNG)
    dm = place_dm(ctx, w, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N, O, M, K"], 0, axes="N O M K")
    trf = (ctx.sub.begin(dm.view()).fetch(bf16, m["N, O, M"], m["K"]).collect(m["N, O, M"], m["K"])
           .to_trf(m["N"], m["O, M, K"], TrfAddress.FirstHalf))
    assert np.array_equal(trf.logical(axes="N O M K"), w)
    op = ctx.schedule.ops[-1]
    assert op.name == "fetch → switch → collect → to_trf" and op.track == "sub" and trf.ready_at == op.end
    assert op.engines[-1].cycles == 512  # one flit per cycle


def test_to_trf_row_and_element_L4210_L4218() -> None:
    # Time [N, K / 16], Packet [K % 16] -> Row [N], Element [K] (TrfAddress.Full)
    ax = AxisSet(N=8, K=32)
    m = ax.m
    ctx = new_ctx()
    w = dt.random_values(bf16, (8, 32), RNG)
    s = stream(ctx, CollectTensor, ax, bf16, "N, K / 16", "K % 16", w, axes="N K")
    trf = s.to_trf(m["N"], m["K"], TrfAddress.SecondHalf)
    assert np.array_equal(trf.logical(axes="N K"), w)


def test_to_trf_refusals_L4160_L1089() -> None:
    ax = AxisSet(N=3, R=16, K=32, M=64)
    m = ax.m
    ctx = new_ctx()
    s = stream(ctx, CollectTensor, ax, bf16, "N, K / 16", "K % 16", dt.random_values(bf16, (3, 32), RNG),
               axes="N K")
    with pytest.raises(HardwareLimitError) as err:
        s.to_trf(m["N"], m["K"], TrfAddress.Full)  # 1, 2, 4 or 8 Rows (L4160-4168)
    assert err.value.level == "Row" and err.value.axis == "N"
    s2 = stream(ctx, CollectTensor, ax, bf16, "R, K / 16", "K % 16", dt.random_values(bf16, (16, 32), RNG),
                axes="R K")
    with pytest.raises(HardwareLimitError) as err2:
        CO.plan_trf(RNGD, bf16, s2.layout.time, s2.layout.packet, m["R"], m["K"], "Full")
    assert err2.value.level == "Row"
    # the Element must be what the stream delivers, in stream order
    ax2 = AxisSet(N=8, K=32, J=2)
    s3 = stream(ctx, CollectTensor, ax2, bf16, "N, J, K / 16", "K % 16", dt.random_values(bf16, (8, 2, 32), RNG),
                axes="N J K")
    with pytest.raises(LayoutError) as err3:
        s3.to_trf(ax2.m["N"], ax2.m["K, J"], TrfAddress.Full)
    assert err3.value.level == "Element" and err3.value.call == "to_trf"
    # capacity: 4 KB per Row in a half (L4151-4154)
    ax3 = AxisSet(N=8, K=4096)
    s4 = stream(ctx, CollectTensor, ax3, bf16, "N, K / 16", "K % 16", np.zeros((8, 4096)), axes="N K")
    with pytest.raises(HardwareLimitError) as err4:
        s4.to_trf(ax3.m["N"], ax3.m["K"], TrfAddress.FirstHalf)
    assert err4.value.level == "Element" and err4.value.axis == "K"


def test_to_trf_wide_types_fit_the_image() -> None:
    # i9 (the i8 -> i9 fetch cast) sits in 16-bit image slots; a full half of 4096 elements fits
    ax = AxisSet(N=2, K=4096)
    m = ax.m
    ctx = new_ctx()
    x = dt.random_values(i8, (2, 4096), RNG)
    dm = place_dm(ctx, x, i8, m["1"], m["1 # 2"], m["1 # 256"], m["N, K"], 0, axes="N K")
    trf = (ctx.main.begin(dm.view()).fetch(dt.i9, m["N, K / 32"], m["K % 32"])
           .collect(m["N, K / 32"], m["K % 32"]).to_trf(m["N"], m["K"], TrfAddress.SecondHalf))
    assert np.array_equal(trf.logical(axes="N K"), x.astype(np.int16))


# ------------------------------------------------------------------------------------------------ VRF


def test_to_vrf_hello_example_L280_L285() -> None:
    ax = AxisSet(A=2048)
    m = ax.m
    ctx = new_ctx()
    x = dt.random_values(i32, (2048,), RNG)
    dm = place_dm(ctx, x, i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"], 1 << 12)
    vrf = (ctx.sub.begin(dm.view()).fetch(i32, m["1"], m["A % 8"])
           .collect(m["A % 8 / 8"], m["A % 8 % 8"]).to_vrf(m["A % 8"], 0))
    assert np.array_equal(vrf.logical(), x)
    assert ctx.schedule.ops[-1].name == "fetch → switch → collect → to_vrf" and vrf.ready_at == ctx.schedule.ops[-1].end


def test_to_vrf_element_may_leave_flit_padding_out_L5068() -> None:
    # the VRF operand of vrf_add: Element [A % 2 # 8] (two i32 of a flit hold data)
    ax = AxisSet(A=512, B=4)
    m = ax.m
    ctx = new_ctx()
    x = dt.random_values(i32, (512,), RNG)
    dm = place_dm(ctx, x, i32, m["1"], m["1 # 2"], m["A / 2"], m["A % 2"], 0)
    vrf = (ctx.main.begin(dm.view()).fetch(i32, m["1"], m["A % 2"]).collect(m["1"], m["A % 2 # 8"])
           .to_vrf(m["A % 2 # 8"], 256))
    assert np.array_equal(vrf.logical(), x)


def test_to_vrf_refusals_L1090() -> None:
    ax = AxisSet(A=4096, B=8)
    m = ax.m
    ctx = new_ctx()
    s = stream(ctx, CollectTensor, ax, i32, "A / 8", "A % 8", np.zeros(4096, dtype=np.int32))
    with pytest.raises(HardwareLimitError) as err:
        s.to_vrf(m["A"], 0)  # 16 KB > 8 KB per slice
    assert err.value.level == "Element" and err.value.axis == "A"
    ax2 = AxisSet(A=8, B=8)
    s2 = stream(ctx, CollectTensor, ax2, i32, "B", "A", np.zeros((8, 8), dtype=np.int32), axes="B A")
    with pytest.raises(LayoutError) as err2:
        s2.to_vrf(ax2.m["A, B"], 0)
    assert err2.value.call == "to_vrf" and err2.value.level == "Element"
