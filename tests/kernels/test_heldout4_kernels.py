"""The fourth round's held-out kernels (``benchmarks/bench_heldout4.py``) at small sizes, against numpy: the masked
softmax through a branch log shared by a slice's rows (L4802, L8090–8099), the Switch Engine's broadcast with a
moved axis (L3381–3458) and a paged-KV gather (L1684–1688)."""

from __future__ import annotations

import numpy as np

from benchmarks.bench_heldout4 import (
    gather_kernel,
    numpy_quant,
    numpy_spread,
    quant_inputs,
    quant_kernel,
    rms_check,
    rms_inputs,
    rms_kernel,
    softmax_check,
    softmax_inputs,
    softmax_kernel,
    spread_kernel,
)
from visa import AxisSet, Context, HostTensor, bf16, i32, launch


def test_masked_softmax_small() -> None:
    """8 keys of 16 or fewer kept per (B, H); four rows a slice share the mask: masked keys exactly 0, the rest
    within the derived f32-then-bf16 bound; a row with a single key is exactly 1."""
    ax = AxisSet(B=64, H=8, Q=4, T=16)
    m = ax.m
    s, mask = softmax_inputs(ax, np.random.default_rng(1))
    ctx = Context.acquire()
    sh = HostTensor.from_numpy(s, bf16, m["B, H, Q, T"], axes="B H Q T").to_hbm(m["1"], m["B, H, Q, T"], ctx.pdma, 0)
    mh = HostTensor.from_numpy(mask, i32, m["B, H, T"], axes="B H T").to_hbm(m["1"], m["B, H, T"], ctx.pdma, 1 << 24)
    got = launch(softmax_kernel(ax), ctx, sh, mh).to_host(m["B, H, Q, T"], ctx.pdma).numpy(axes="B H Q T")
    softmax_check(got, s, mask)
    g = np.asarray(got, dtype=np.float64)
    assert np.all(g[0, 0, :, 0] == 1.0) and np.all(g[0, 0, :, 1:] == 0.0)


def test_switch_broadcast_with_a_moved_axis_small() -> None:
    """out[c, p, y, b, q, v] = x[c, p, q, b, v], bit for bit."""
    ax = AxisSet(C=2, P=64, Q=4, Y=4, B=2, V=16)
    m = ax.m
    ctx = Context.acquire()
    xs = HostTensor.rand(bf16, m["C, P, Q, B, V"], np.random.default_rng(2))
    xh = xs.to_hbm(m["1"], m["C, P, Q, B, V"], ctx.pdma, 0)
    got = np.asarray(launch(spread_kernel(ax), ctx, xh).to_host(m["C, P, Y, B, Q, V"], ctx.pdma)
                     .numpy(axes="C P Y B Q V"))
    want = numpy_spread(xs.numpy(axes="C P Q B V"))
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_paged_gather_small() -> None:
    """out[n] = pool[table[n]], bit for bit, a block named twice included; twice in one context (the second
    launch reuses the kept row span) and with another table."""
    ax = AxisSet(Pool=40, K=2, PB=16, HD=16, NB=32)
    m = ax.m
    rng = np.random.default_rng(3)
    ctx = Context.acquire()
    ps = HostTensor.rand(bf16, m["Pool, K, PB, HD"], rng)
    ph = ps.to_hbm(m["1"], m["Pool, K, PB, HD"], ctx.pdma, 0)
    pool = ps.numpy(axes="Pool K PB HD")
    kernel = gather_kernel(ax)
    for k, ids in enumerate((rng.integers(0, 40, 32), rng.integers(0, 40, 32), np.arange(32)[::-1])):
        ids = ids.astype(np.int32)
        th = HostTensor.from_numpy(ids, i32, m["NB"]).to_hbm(m["1"], m["NB"], ctx.pdma, (1 << 24) + k * 4096)
        for _ in range(2):
            got = np.asarray(launch(kernel, ctx, ph, th).to_host(m["NB, K, PB, HD"], ctx.pdma)
                             .numpy(axes="NB K PB HD"))
            assert np.array_equal(got.view(np.uint16), pool[ids].view(np.uint16))


def test_int8_quantisation_small() -> None:
    """Per-token scales 127 / max |x| and int8 values bit for bit against numpy (four tokens a slice, 64 values);
    a token whose scale is 1 rounds its halves away from zero (L4948–4952)."""
    ax = AxisSet(N=2048, H=64)
    m = ax.m
    x = quant_inputs(ax, np.random.default_rng(4))
    x[2] = 0.0
    x[2, :5] = [127.0, 0.5, -1.5, 2.5, -0.5]  # s = 1: 1, −2, 3, −1
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, bf16, m["N, H"], axes="N H").to_hbm(m["1"], m["N, H"], ctx.pdma, 0)
    q, s = launch(quant_kernel(ax), ctx, xh)
    want_q, want_s = numpy_quant(x)
    assert np.array_equal(np.asarray(s.to_host(m["N"], ctx.pdma).numpy()).view(np.uint32), want_s.view(np.uint32))
    assert np.array_equal(np.asarray(q.to_host(m["N, H"], ctx.pdma).numpy(axes="N H")), want_q)
    assert np.all(want_q[1] == -127) and want_q[2, :5].tolist() == [127, 1, -2, 3, -1]


def test_rms_norm_with_a_shared_gain_small() -> None:
    """Four tokens a slice read one gain from the VRF (broadcast along the outer Time digit) and their own
    statistic: within the derived bound of numpy's float64 RMSNorm."""
    ax = AxisSet(Ns=512, Nr=4, H=32)
    m = ax.m
    x, g = rms_inputs(ax, np.random.default_rng(5))
    ctx = Context.acquire()
    xh = HostTensor.from_numpy(x, bf16, m["Ns, Nr, H"], axes="Ns Nr H").to_hbm(m["1"], m["Ns, Nr, H"], ctx.pdma, 0)
    gh = HostTensor.from_numpy(g, bf16, m["H"]).to_hbm(m["1"], m["H"], ctx.pdma, 1 << 24)
    got = launch(rms_kernel(ax), ctx, xh, gh).to_host(m["Ns, Nr, H"], ctx.pdma).numpy(axes="Ns Nr H")
    rms_check(got, x, g)
