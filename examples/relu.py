"""ReLU after a matrix multiplication (manual "Vector Engine" → Examples → ReLU Activation, L4590–4606).

The manual's fragment (L4598–4606) applies ``vector_clip(ClipBinaryOpF32::Max, 0.0)`` to an f32
``AccumulationTensor``.  Its shape ``[K]; [M]; [N]`` with ``N = 256`` in the Packet (L4597–4599) is not one
32-byte flit of 8 f32 lanes, which the Vector Engine requires (L4551, L4844, L4954; spec digest E16), so this
kernel keeps the four calls of the fragment (L4602–4605, the ``vector_*`` calls below) on a legal stream:
the GEMV of ``examples/gemv.py`` (L378–465) produces, per slice, one f32 result in a Way8 packet ``m["1 # 8"]``;
the Vector Engine clamps it at zero (``Max`` on the ClipMax ALU, L4969) and the Cast Engine rounds it to bf16.

Run it with ``visa run examples/relu.py``.
"""

import numpy as np

from visa import AccumulationKind, Context, HbmTensor, HostTensor, TrfAddress, axes, bf16, device, launch, m
from visa.engines.vector import BranchMode, ClipBinaryOpF32

axes(I=256, J=2048)

Chip, Cluster, Slice = m["1"], m["1 # 2"], m["I"]
Time, Packet, Row = m["J / 32"], m["J % 32"], m["1"]


@device(chip=1)
def kernel(ctx: Context, matrix: HbmTensor[bf16, Chip, m["I, J"]],
           vector: HbmTensor[bf16, Chip, m["J"]]) -> HbmTensor[bf16, Chip, m["I"]]:
    """GEMV (``examples/gemv.py``), then the manual's ReLU fragment (L4601–4605), cast and commit."""
    matrix_dm = matrix.to_dm(Cluster, Slice, m["J"], ctx.tdma, 0)
    vector_dm = vector.to_dm(Cluster, Slice, m["J"], ctx.tdma, 1 << 12)
    vector_trf = (ctx.sub.begin(vector_dm.view())
                  .fetch(bf16, m["1"], m["J"])
                  .collect(m["J / 16"], m["J % 16"])
                  .to_trf(Row, m["J"], TrfAddress.Full))
    result = (ctx.main.begin(matrix_dm.view())
              .fetch(bf16, Time, Packet)
              .collect(m["J / 32, J % 32 / 16"], m["J % 16"])
              .align(Time, Packet, vector_trf)
              .contract(m["1"])
              .accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved)  # f32, one Way8 flit per slice
              .vector_init()
              .vector_intra_slice_branch(BranchMode.Unconditional)
              .vector_clip(ClipBinaryOpF32.Max, 0.0)  # ReLU: max(x, 0)
              .vector_final()
              .cast(bf16, m["1 # 16"])
              .commit(m["1 # 4"], 1 << 13))
    return result.to_hbm(m["I"], ctx.tdma, 2 << 28)


def main() -> None:
    """Random bf16 matrix and vector; compare with numpy's ``max(A @ x, 0)`` within bf16 rounding."""
    ctx = Context.acquire()
    rng = np.random.default_rng(7)
    matrix = HostTensor.rand(bf16, m["I, J"], rng)
    vector = HostTensor.rand(bf16, m["J"], rng)
    out = launch(kernel, ctx, matrix.to_hbm(Chip, m["I, J"], ctx.pdma, 0),
                 vector.to_hbm(Chip, m["J"], ctx.pdma, 1 << 28)).to_host(m["I"], ctx.pdma)
    a, x = matrix.numpy(axes="I J").astype(np.float64), vector.numpy().astype(np.float64)
    dot = a @ x
    want = np.maximum(dot, 0.0)
    got = np.asarray(out.numpy(), dtype=np.float64)
    bound = np.abs(want) * 2.0**-8 + x.size * 2.0**-23 * (np.abs(a) @ np.abs(x))
    assert np.all(got >= 0.0)
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))
    assert (dot < 0).any() and (dot > 0).any()  # both sides of the ReLU are exercised


if __name__ == "__main__":
    main()
