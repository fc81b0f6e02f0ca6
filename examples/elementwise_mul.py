"""Hello, TCP! — Elementwise Multiplication (manual L221–299): ``lhs * rhs`` with the second operand in the VRF.

The Fxp cluster's multiplier takes its second operand per element from the Vector Register File (L223–224).
The sub context loads ``rhs`` into each slice's VRF (Fetch → Collect → ``.to_vrf``, L244) while the main context
streams ``lhs`` through the Vector Engine, which multiplies each element by the VRF element holding the same
index (``FxpBinaryOp.MulInt``: an integer multiply that wraps to i32, L4833).  The main pass waits for the
sub pass that writes the VRF (the scheduler's read-after-write, L153, L7067–7070).

The kernel is the manual's line for line (L269–299).  The host side (L258–268) departs in one place: the
manual discards the result (``let _out``, L267); ``main()`` compares it with numpy, so that ``visa run`` checks it.

Run it with ``visa run examples/elementwise_mul.py``.
"""

import numpy as np

from visa import Context, HbmTensor, HostTensor, VrfTensor, axes, device, i32, launch, m
from visa.engines.vector import BranchMode, FxpBinaryOp

axes(A=2048)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A / 8 # 256"]


@device(chip=1)
def kernel(ctx: Context, lhs: HbmTensor[i32, m["1"], m["A"]],
           rhs: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    """The manual's kernel (L269–299)."""
    # Move both operands from HBM to DM; distinct base addresses so that they do not overlap (L243, L275)
    lhs_dm = lhs.to_dm(Cluster, Slice, m["A % 8"], ctx.tdma, 0)
    rhs_dm = rhs.to_dm(Cluster, Slice, m["A % 8"], ctx.tdma, 1 << 12)

    # Sub context: load rhs into the VRF, a per-slice operand the Vector Engine reads every cycle (L278–285)
    rhs_vrf: VrfTensor[i32, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"]] = (
        ctx.sub.begin(rhs_dm.view())
        .fetch(i32, m["1"], m["A % 8"])
        .collect(m["A % 8 / 8"], m["A % 8 % 8"])
        .to_vrf(m["A % 8"], 0))

    # Main context: multiply every lhs element by its rhs counterpart from the VRF
    result = (ctx.main.begin(lhs_dm.view())
              .fetch(i32, m["1"], m["A % 8"])
              .collect(m["1"], m["A % 8"])
              .vector_init()
              .vector_intra_slice_branch(BranchMode.Unconditional)
              .vector_fxp(FxpBinaryOp.MulInt, rhs_vrf)
              .vector_final()
              .commit(m["A % 8"], 1 << 13))
    return result.to_hbm(m["A"], ctx.tdma, 1 << 28)


def main() -> None:
    """The host side (L258–268): two random vectors, launch, read back, compare with numpy's wrapping product."""
    ctx = Context.acquire()
    rng = np.random.default_rng(42)
    lhs = HostTensor.rand(i32, m["A"], rng)
    rhs = HostTensor.rand(i32, m["A"], rng)
    lhs_hbm = lhs.to_hbm(m["1"], m["A"], ctx.pdma, 0)
    rhs_hbm = rhs.to_hbm(m["1"], m["A"], ctx.pdma, 1 << 28)
    out = launch(kernel, ctx, lhs_hbm, rhs_hbm).to_host(m["A"], ctx.pdma)
    want = (lhs.numpy().astype(np.int64) * rhs.numpy().astype(np.int64)).astype(np.int32)
    assert np.array_equal(out.numpy(), want)


if __name__ == "__main__":
    main()
