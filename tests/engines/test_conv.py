"""Convolution by shift-reuse (manual "2D Convolution", L3737–3776; Stream Adapter L3913–3957; issue 27 item 2).

The four configurations of the manual's case study, at its sizes along W and the filter (H and K small): the
input relabelled so that its rows are ``$(H : s, Fh : d)`` (the fetch's sliding) and its columns the packet's
linear combination ``$(W : s, Fw : d)``; the aligner's shift-reuse (``collect_flits = 3``) slides it over the
filter axis; the result against numpy.  Each case checks the aligner's configuration (feed_flits, shifts, the
shift stride) as the manual's dump gives it, and the cycles.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import AccumulationKind, AxisSet, Context, TrfAddress, bf16
from visa import dtypes as dt
from visa.errors import HardwareLimitError, LayoutError, VisaError
from visa.testing import place_dm, place_trf, stream_logical

Interleaved = AccumulationKind.Interleaved


def _conv(h: int, fh: int, w: int, fw: int, s: int, d: int, case: str, k: int = 2, c: int = 8) -> dict[str, Any]:
    y = (h - 1) * s + (fh - 1) * d + 1
    span = (w - 1) * s + (fw - 1) * d + 1
    x_size = -(-span // 16) * 16  # the row padded to whole 32-byte flits of bf16
    ax = AxisSet(H=h, Fh=fh, K=k, W=w, Fw=fw, C=c, Y=y, X=x_size)
    m = ax.m
    ctx = Context.acquire()
    ctx.num_chips = 1
    rng = np.random.default_rng(5)
    x = dt.random_values(bf16, (y, k, x_size), rng)
    wt = dt.random_values(bf16, (c, k, fh, fw), rng)
    src = place_dm(ctx, x, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["Y, K, X"], 0)
    lin = f"$(W : {s}, Fw : {d})"
    row = f"[{lin} # {x_size}]" if x_size > span else f"[{lin}]"
    view = src.view().relabel(m[f"$(H : {s}, Fh : {d}), K, {row}"])
    time, packet = m[f"H, Fh, K, {row} / 16"], m[f"{row} % 16"]
    stream = ctx.main.begin(view).fetch(bf16, time, packet).collect(time, packet)
    dummy = ", 1 # 2" if case == "stride2-dilation2" else ""
    trf = place_trf(ctx, wt, bf16, m["1"], m["1 # 2"], m["1 # 256"], m["C"], m[f"K, Fh, Fw{dummy}"], TrfAddress.Full,
                    axes="C K Fh Fw", zero_padding=bool(dummy))
    lanes = "W # 16" if w < 16 else ("W" if w in (16, 32) else "W # 32")
    if case.startswith("stride2") and not dummy:
        aligned = stream.align(m["H, Fh, K, Fw / 2"], m[f"{lanes}, Fw % 2"], trf)
    elif dummy:
        aligned = stream.align(m["H, Fh, K, Fw"], m[f"{lanes}, 1 # 2"], trf)
    else:
        aligned = stream.align(m["H, Fh, K, Fw"], m[lanes], trf)
    acc = aligned.contract(m[lanes]).accumulate(m[f"H, {lanes}"], m["C"], Interleaved)
    got = stream_logical(acc, axes="H W C").astype(np.float64)
    xf, wf = x.astype(np.float64), wt.astype(np.float64)
    hh = np.arange(h)[:, None] * s + np.arange(fh)[None, :] * d
    ww = np.arange(w)[:, None] * s + np.arange(fw)[None, :] * d
    win = xf[hh][:, :, :, ww]  # [h, fh, k, w, fw]
    want = np.einsum("afkbg,ckfg->abc", win, wf)
    bound = fh * k * fw * 2.0 ** -23 * np.einsum("afkbg,ckfg->abc", np.abs(win), np.abs(wf)) + 1e-30
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))
    report = next(r for r in acc.reports if r.engine == "aligner")
    return {**dict(report.details), "cycles": report.cycles, "latency": report.latency, "steps": h * fh * k,
            "config": report.config}


@pytest.mark.parametrize("case, sizes, want", [
    # L3738–3745: $(W=30 + Fw=3)=32, shift-stride 1 with two shifts
    ("stride1", (4, 3, 30, 3, 1, 1), dict(feed_flits=2, shifts=3, shift_stride=1)),
    # L3746–3753: $(W:2=15 + Fw=4)=32 → Fw/2 = 2, (W, Fw % 2): one shift of stride 2
    ("stride2", (3, 4, 15, 4, 2, 1), dict(feed_flits=2, shifts=2, shift_stride=2)),
    # L3754–3760: feed_flits = 3, $(W:2=16 + Fw=4)=34
    ("stride2-feed3", (3, 4, 16, 4, 2, 1), dict(feed_flits=3, shifts=2, shift_stride=2)),
    # L3761–3768: $(W=27 + Fw:2=3)=32, two shifts of stride 2
    ("dilation2", (3, 3, 27, 3, 1, 2), dict(feed_flits=2, shifts=3, shift_stride=2)),
    # L3769–3776: $(W:2=14 + Fw:2=3)=31 + 1#, the TRF's 1z dummies
    ("stride2-dilation2", (3, 3, 14, 3, 2, 2), dict(feed_flits=2, shifts=3, shift_stride=2)),
])
def test_shift_reuse_convolution_L3737_L3776(case: str, sizes: tuple[int, ...], want: dict[str, int]) -> None:
    got = _conv(*sizes, case=case)
    assert got["collect_flits"] == 3  # shift-reuse (L3920)
    assert {key: got[key] for key in want} == want
    assert got["cycles"] == got["steps"] * want["shifts"]  # one 64-byte computation packet per cycle
    assert got["latency"] == want["feed_flits"]  # the buffer fills before the first shift (L3957)
    assert "shift-reuse" in got["config"]


def test_zero_dummies_are_read_with_each_weight_L3771() -> None:
    """``1+1#`` contracted with ``1+1z`` yields ``1``: the TRF Sequencer reads the weight and its zero dummy (4 bytes),
    so the odd lanes (real input at odd positions) add nothing."""
    got = _conv(3, 3, 14, 3, 2, 2, case="stride2-dilation2")
    assert got["reg_read_size"] == 4


def _stream(ax: AxisSet, lin: str, row_size: int) -> tuple[Any, Any, Any]:
    m = ax.m
    ctx = Context.acquire()
    ctx.num_chips = 1
    src = place_dm(ctx, np.zeros((4, 2, row_size), dtype=np.float32), bf16, m["1"], m["1 # 2"], m["1 # 256"],
                   m["Y, K, X"], 0)
    row = f"[{lin} # {row_size}]"
    view = src.view().relabel(m[f"Y, K, {row}"])
    time, packet = m[f"Y, K, {row} / 16"], m[f"{row} % 16"]
    stream = ctx.main.begin(view).fetch(bf16, time, packet).collect(time, packet)
    trf = place_trf(ctx, np.zeros((8, 2, ax.size("Fw")), dtype=np.float32), bf16, m["1"], m["1 # 2"], m["1 # 256"],
                    m["C"], m["K, Fw"], TrfAddress.Full, axes="C K Fw")
    return m, stream, trf


def test_a_row_longer_than_the_shift_buffer_is_refused_L3754() -> None:
    ax = AxisSet(Y=4, K=2, W=30, Fw=20, C=8, X=64)  # a row of 49 elements: four 32-byte flits
    m, stream, trf = _stream(ax, "$(W : 1, Fw : 1)", 64)
    with pytest.raises(HardwareLimitError) as err:
        stream.align(m["Y, K, Fw"], m["W # 32"], trf)
    assert "feed_flits = 3" in str(err.value) and err.value.level == "Time"


def test_shifts_past_the_96_byte_flit_buffer_are_refused_L3928() -> None:
    """Dilation 2 over a filter of 10: the last shift reads lane 31 + 9 · 2 = element 49 of a 48-element (96-byte)
    buffer."""
    ax = AxisSet(Y=4, K=2, W=14, Fw=10, C=8, X=32)
    m, stream, trf = _stream(ax, "$(W : 1, Fw : 2)", 32)
    with pytest.raises(HardwareLimitError) as err:
        stream.align(m["Y, K, Fw"], m["W # 32"], trf)
    assert "element 49" in str(err.value) and "96 bytes" in str(err.value)


def test_lanes_out_of_the_rows_order_are_refused_L3903() -> None:
    ax = AxisSet(Y=4, K=2, W=30, Fw=3, C=8, X=32)
    m, stream, trf = _stream(ax, "$(W : 1, Fw : 1)", 32)
    with pytest.raises(LayoutError) as err:
        stream.align(m["Y, K, Fw"], m["[W # 32] % 2, [W # 32] / 2"], trf)
    assert "row's order" in str(err.value) and err.value.level == "Packet"
    with pytest.raises(VisaError) as err2:
        stream.align(m["Y, Fw, K"], m["W # 32"], trf)  # the shift axis must follow the activation's Time
    assert err2.value.level == "Time"
