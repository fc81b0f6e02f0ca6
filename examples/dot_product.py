"""Hello, TCP! — Dot Product (manual L301–377), line by line in the Python spelling.

The dot product ``I, I → 1`` has no broadcast: the sub context loads ``rhs`` into the TRF (Fetch → Collect →
``to_trf``); the main context streams ``lhs``, pairs consecutive 32-byte flits into 64-byte packets
(``align``), multiplies and reduce-adds 32 products per packet in the Reducer's tree (``contract``), adds the 64
packets over time (``accumulate``) and casts the f32 result back to bf16.  The Switch Engine is skipped
(forwarding, L363–377).

The kernel is the manual's line for line (L332–362); the manual's typed ``let`` bindings (``DmTensor<…>`` on
``lhs.to_dm``, ``TrfTensor<…>`` on ``to_trf``, L339–349) become the mapping arguments of the calls,
and the DM tensors are named ``lhs_dm``/``rhs_dm`` where the manual shadows ``lhs``/``rhs``.  The
host side (L321–331) departs in one place: ``main()`` compares the result with numpy (the manual only reads it
back, L330).

Run it with ``visa run examples/dot_product.py``: the host entry point ``main()`` checks the result against
numpy and ``visa run`` prints the per-engine cycle table.
"""

import numpy as np

from visa import AccumulationKind, Context, HbmTensor, HostTensor, TrfAddress, axes, bf16, device, launch, m

axes(A=2048)

Chip = m["1"]
Cluster = m["1 # 2"]
Slice = m["1 # 256"]  # 1 active slice; m["A / 8 # 256"] would distribute across all 256
Time = m["1"]  # No temporal iteration
Row = m["1"]  # No row parallelism


@device(chip=1)
def kernel(ctx: Context, lhs: HbmTensor[bf16, m["1"], m["A"]],
           rhs: HbmTensor[bf16, m["1"], m["A"]]) -> HbmTensor[bf16, m["1"], m["1"]]:
    """The manual's kernel (L332–362)."""
    # HBM → DM
    lhs_dm = lhs.to_dm(Cluster, Slice, m["A"], ctx.tdma, 0)
    rhs_dm = rhs.to_dm(Cluster, Slice, m["A"], ctx.tdma, 1 << 12)

    # Sub context: load rhs into TRF (TrfAddress.Full dedicates the entire TRF to this tensor)
    rhs_trf = (ctx.sub
               .begin(rhs_dm.view())
               .fetch(bf16, Time, m["A"])
               .collect(m["{Time}, A / 16"], m["A % 16"])
               .to_trf(Row, m["A"], TrfAddress.Full))

    # Main context: stream lhs through the Contraction Engine, reduce along A
    result = (ctx.main
              .begin(lhs_dm.view())
              .fetch(bf16, Time, m["A"])
              .collect(m["A / 16"], m["A % 16"])
              # Pair consecutive 32-byte flits into 64-byte packets, halving time steps (A/16 → A/32)
              .align(m["A / 32"], m["A % 32"], rhs_trf)
              .contract(m["1"])
              .accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved)
              .cast(bf16, m["1 # 16"])  # cast f32 accumulator output back to bf16
              .commit(m["1 # 8"], 1 << 13))

    # DM → HBM
    return result.to_hbm(m["1"], ctx.tdma, 2 << 28)


def main() -> None:
    """The host side (manual L321–331): random bf16 inputs, launch, read back, compare with numpy."""
    ctx = Context.acquire()
    rng = np.random.default_rng(42)
    lhs = HostTensor.rand(bf16, m["A"], rng)
    rhs = HostTensor.rand(bf16, m["A"], rng)
    lhs_hbm = lhs.to_hbm(Chip, m["A"], ctx.pdma, 0)
    rhs_hbm = rhs.to_hbm(Chip, m["A"], ctx.pdma, 1 << 28)
    out_hbm = launch(kernel, ctx, lhs_hbm, rhs_hbm)
    out = out_hbm.to_host(m["1"], ctx.pdma)

    # numpy: the exact sum of the bf16 products.  The Reducer adds in f32 (another order than numpy's) and the
    # result is rounded to bf16: within half a bf16 ulp (2^-9 relative) plus the f32 accumulation error.
    x, y = lhs.numpy().astype(np.float64), rhs.numpy().astype(np.float64)
    want = float(np.dot(x, y))
    got = float(np.asarray(out.numpy(), dtype=np.float64).reshape(-1)[0])
    bound = abs(want) * 2.0**-8 + x.size * 2.0**-23 * float(np.abs(x) @ np.abs(y))
    assert abs(got - want) <= bound, (got, want, bound)


if __name__ == "__main__":
    main()
