"""A GEMV with i4 weights and i8 activations: weight-only quantisation through a mixed-type TRF operand.

``y_i = Σ_j W_ij x_j`` with ``W`` in i4 (two weights a byte) and ``x`` in i8.  The weights are stationary: each
slice holds eight rows of ``W`` in its TRF (Row ``I % 8``, Element ``J``; 256 slices × 8 Rows = the 2048 outputs)
and the activation is streamed through every slice (its DMA places a copy in each slice's DM).  The Reducer
multiplies the i8 packet (64 elements, 64 bytes) with 64 i4 weights read as i8 — the TRF's ``reg_type`` 1,
"10-bit (i4 → i8)" (manual L4142–4147) — and sums in i32: a plain ``align`` against the i4 TRF tensor.

Each weight then occupies an i8's slot (two 5-bit slots, L4145), so the i4 Row of 512 weights takes 512 bytes of
the TRF's 8 KiB Row when read this way (the aligner checks it).  The result is exact: i8 · i4 products summed
in i32, compared with numpy.

Run it with ``visa run examples/gemv_i4.py``.
"""

import numpy as np

from visa import (
    AccumulationKind,
    Context,
    HbmTensor,
    HostTensor,
    TrfAddress,
    axes,
    device,
    i4,
    i8,
    i32,
    launch,
    m,
)

axes(I=2048, J=512)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["I / 8"]  # eight outputs per slice, one per Row
Row = m["I % 8"]


@device(chip=1)
def kernel(ctx: Context, weights: HbmTensor[i4, m["1"], m["I, J"]],
           x: HbmTensor[i8, m["1"], m["J"]]) -> HbmTensor[i32, m["1"], m["I"]]:
    """Weights into each slice's TRF as i4 (sub context); the i8 activation streamed against them (main)."""
    w_dm = weights.to_dm(Cluster, Slice, m["I % 8, J"], ctx.tdma, 0)
    x_dm = x.to_dm(Cluster, Slice, m["J"], ctx.tdma, 1 << 12)  # a copy in every slice
    w_trf = (ctx.sub.begin(w_dm.view())
             .fetch(i4, m["I % 8, J / 64"], m["J % 64"])  # 32-byte packets of 64 i4 weights
             .collect(m["I % 8, J / 64"], m["J % 64"])
             .to_trf(Row, m["J"], TrfAddress.Full))
    # dual channel: the pass is fetch-bound (two 32-byte flits per 64-byte packet) and the sub context is idle
    # once the weights are in, so the main pass takes both channels (64 B/cycle, manual L2125–2142)
    y = (ctx.main.begin(x_dm.view(), dual_channel=True)
         .fetch(i8, m["J / 64, J % 64 / 32"], m["J % 32"])
         .collect(m["J / 64, J % 64 / 32"], m["J % 32"])  # 32-byte flits of 32 i8
         .align(m["J / 64"], m["J % 64"], w_trf)  # collect_flits = 2; i4 weights read as i8 (reg_type 1)
         .contract(m["1"])  # the i8 tree, depth 6: 64 products → 1, widened to i32
         .accumulate(m["1"], Row, AccumulationKind.Interleaved)  # J / 64 summed over time
         .commit(m["I % 8"], 1 << 13))
    return y.to_hbm(m["I"], ctx.tdma, 2 << 28)


def main() -> None:
    """Random i4 weights and i8 activations; the result equals numpy's integer GEMV exactly."""
    ctx = Context.acquire()
    rng = np.random.default_rng(27)
    w = HostTensor.rand(i4, m["I, J"], rng)
    x = HostTensor.rand(i8, m["J"], rng)
    out = launch(kernel, ctx, w.to_hbm(Chip, m["I, J"], ctx.pdma, 0), x.to_hbm(Chip, m["J"], ctx.pdma, 1 << 28))
    got = out.to_host(m["I"], ctx.pdma).numpy()
    want = w.numpy(axes="I J").astype(np.int64) @ x.numpy().astype(np.int64)
    assert np.array_equal(got.astype(np.int64), want), "i4-weight GEMV differs from numpy"


if __name__ == "__main__":
    main()
