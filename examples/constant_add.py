"""Hello, TCP! — Constant Addition (manual L158–220), in visa's Python spelling.

One chip, one of the two clusters, all 256 slices with one 8-element group each: the input moves HBM → DM
(``Slice = m["A / 8 # 256"]``, L186, L202), streams through Fetch → Collect → Vector Engine → Commit in one
pass, and the Vector Engine's Fxp cluster adds the integer constant 1 to every element (``FxpBinaryOp.AddFxp``,
a wrapping add, L4826) after an ``Unconditional`` branch (every element gets ExecutionId 0, L4798).

The kernel is the manual's line for line (L199–220).  The host side (L187–198) departs in one place: the
manual discards the result (``let _out``, L197); ``main()`` compares it with numpy, so that ``visa run`` checks it.

Run it with ``visa run examples/constant_add.py``.
"""

import numpy as np

from visa import Context, HbmTensor, HostTensor, axes, device, i32, launch, m
from visa.engines.vector import BranchMode, FxpBinaryOp

axes(A=2048)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A / 8 # 256"]


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    """The manual's kernel (L199–220)."""
    # HBM → DM: split 2048 elements across 256 slices (8 elements per slice)
    dm = x.to_dm(Cluster, Slice, m["A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % 8"])  # one 8-element packet per slice
           .collect(m["1"], m["A % 8"])  # one 32-byte flit (8 × i32)
           .vector_init()
           .vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.AddFxp, 1)  # the scalar constant 1, broadcast to every element
           .vector_final()
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(m["A"], ctx.tdma, 1 << 28)


def main() -> None:
    """The host side (L187–198): random input, launch, read back, compare with numpy (wrapping i32 add)."""
    ctx = Context.acquire()
    x = HostTensor.rand(i32, m["A"], np.random.default_rng(42))
    y = launch(kernel, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0)).to_host(m["A"], ctx.pdma)
    want = (x.numpy().astype(np.int64) + 1).astype(np.int32)
    assert np.array_equal(y.numpy(), want)


if __name__ == "__main__":
    main()
