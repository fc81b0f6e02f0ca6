"""Inter-slice reduce (manual "Vector Engine" → Examples → Inter-Slice Reduce, L4608–4623; L6636–6653).

The manual's examples are fragments from a ``CollectTensor`` to a ``VectorFinalTensor`` (L4616–4623,
L6721–6730); each kernel here is that fragment line for line (the calls from ``.vector_init()`` to
``.vector_final()``), with what a runnable kernel adds around it: the DMA into DM with the fragment's Cluster,
Slice and Element, the fetch and collect that give its ``CollectTensor`` (Time ``m["1"]``, Packet
``m["A % 8"]``), and the commit and DMA back to HBM.

Each group of four neighbouring slices holds the four ``R`` values of the same eight ``A`` elements
(``Slice = m["A / 8, R"]``).  ``vector_inter_slice_reduce(m["A / 8, 1 # 4"], m["1"], AddSat)`` sums them over the
slice ring with saturation: the sum lands in the first slice of each group and the other three become dummy
positions (the "Dummy" output rule, L6626–6653).  The commit writes the sums; the DMA gathers them back into
``m["A"]`` on the host.  The second kernel is the IntraFirst order of L6713–6731: ``+100`` per element, then
the reduce.

Run it with ``visa run examples/inter_slice_reduce.py``.
"""

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import Context, HbmTensor, HostTensor, axes, device, i32, launch, m
from visa.engines.vector import BranchMode, FxpBinaryOp, InterSliceReduceOpI32

axes(R=4, A=512)
Chip, Cluster = m["1"], m["1 # 2"]


@device(chip=1)
def reduce_kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["R, A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    """The Dummy Replacement fragment (L4616–4623, L6644–6651) between a DMA, fetch, collect and commit."""
    dm = x.to_dm(Cluster, m["A / 8, R"], m["A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % 8"])
           .collect(m["1"], m["A % 8"])
           .vector_init()
           .vector_inter_slice_reduce(m["A / 8, 1 # 4"], m["1"], InterSliceReduceOpI32.AddSat)
           .vector_final()
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(m["A"], ctx.tdma, 1 << 28)


@device(chip=1)
def add_then_reduce(ctx: Context, x: HbmTensor[i32, m["1"], m["R, A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    """The IntraFirst fragment ``add_then_reduce`` (L6721–6730) between a DMA, fetch, collect and commit."""
    dm = x.to_dm(Cluster, m["A / 8, R"], m["A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % 8"])
           .collect(m["1"], m["A % 8"])
           .vector_init()
           .vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.AddFxp, 100)
           .vector_inter_slice_reduce(m["A / 8, 1 # 4"], m["1"], InterSliceReduceOpI32.AddSat)
           .vector_final()
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(m["A"], ctx.tdma, 2 << 28)


def saturating_sum(x: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Σ over the last axis in ring order, saturating to i32 at every step."""
    acc = np.zeros(x.shape[:-1], dtype=np.int64)
    for k in range(x.shape[-1]):
        acc = np.clip(acc + x[..., k], -(2**31), 2**31 - 1)
    return acc.astype(np.int32)


def main() -> None:
    """Both kernels on random i32 data, checked against a saturating sum over R in numpy."""
    ctx = Context.acquire()
    x = HostTensor.rand(i32, m["R, A"], np.random.default_rng(3))
    x_hbm = x.to_hbm(m["1"], m["R, A"], ctx.pdma, 0)  # A innermost: 32-byte runs for the DMA
    values = x.numpy(axes="A R").astype(np.int64)
    y = launch(reduce_kernel, ctx, x_hbm).to_host(m["A"], ctx.pdma)
    assert np.array_equal(y.numpy(), saturating_sum(values))
    z = launch(add_then_reduce, ctx, x_hbm).to_host(m["A"], ctx.pdma)
    assert np.array_equal(z.numpy(), saturating_sum((values + 100).astype(np.int32).astype(np.int64)))


if __name__ == "__main__":
    main()
