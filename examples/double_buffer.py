"""Double buffering the TRF: the sub context loads the next weights while the main context computes (manual
"Scheduling", L7042–7070: "Sub context … enabling double-buffering where the next operation's data is prepared
while the current one computes", L7065).

Four dot products ``y[t] = x · W[t]`` share the activation ``x``.  Each tile ``W[t]`` (1024 bf16 = 2 KB) is
loaded by the sub context into a TRF half, and the main context contracts ``x`` with it.  With one buffer
(every tile in ``FirstHalf``) a load must wait for the pass that still reads the half (write-after-read), and
the next pass for the load (read-after-write): the two contexts alternate.  With two buffers (tiles alternate
``FirstHalf`` and ``SecondHalf``) the load of tile ``t + 1`` overlaps the pass of tile ``t``.  The scheduler finds
both from the addresses alone; ``visa run`` prints each context's profile and roofline, and ``visa trace
examples/double_buffer.py -o trace.json`` draws the overlap.

Departures from the manual: none in the kernel; ``main()`` runs it twice (one and two buffers), checks each
result against numpy and that double buffering is faster.
"""

from typing import Any

import numpy as np
import numpy.typing as npt

from visa import (
    AccumulationKind,
    Context,
    DmTensor,
    HbmTensor,
    HostTensor,
    TrfAddress,
    TrfTensor,
    axes,
    bf16,
    device,
    launch,
    m,
)

axes(T=4, B=8, A=1024)

Cluster = m["1 # 2"]
Slice = m["1 # 256"]  # one active slice


def load(ctx: Context, w_dm: DmTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["T, A"]], t: int,
         half: TrfAddress) -> TrfTensor[bf16, m["1"], m["1 # 2"], m["1 # 256"], m["1"], m["A"]]:
    """The sub context loads tile ``t`` of the weights into one TRF half."""
    return (ctx.sub.begin(w_dm.view().tile(m["T"], 1, m["T = 1, A"], t))
            .fetch(bf16, m["1"], m["A"])
            .collect(m["1, A / 16"], m["A % 16"])
            .to_trf(m["1"], m["A"], half))


def run(double: bool, ctx: Context | None = None) -> tuple[npt.NDArray[Any], int]:
    """Launch the kernel with one or two TRF buffers on ``ctx`` (default: a fresh device); return the result and
    the cycles from the launch's first TRF load to the end of its last pass.

    A device keeps its memories between launches: nothing in the manual clears the TRF when a kernel ends or
    starts (a launch occupies the device, L57–58, whose memories it leaves as they are), so on one device a
    single-buffered launch after a double-buffered one finds the second half still holding the last launch's
    tiles 1 and 3 — its TRF image differs from a first launch's in those bytes, which it neither writes nor reads.
    The results, each launch's cycles and what every launch reads are the same (``tests/test_double_buffer.py``);
    a fresh device per run (``main``) starts from an empty TRF every time."""

    @device(chip=1)
    def kernel(ctx: Context, x: HbmTensor[bf16, m["1"], m["B, A"]],
               w: HbmTensor[bf16, m["1"], m["T, A"]]) -> HbmTensor[bf16, m["1"], m["T, B, 1 # 4"]]:
        x_dm = x.to_dm(Cluster, Slice, m["B, A"], ctx.tdma, 0)
        w_dm = w.to_dm(Cluster, Slice, m["T, A"], ctx.tdma, 1 << 15)
        trf = load(ctx, w_dm, 0, TrfAddress.FirstHalf)
        for t in range(4):
            y = (ctx.main.begin(x_dm.view())
                 .fetch(bf16, m["B"], m["A"])
                 .collect(m["B, A / 16"], m["A % 16"])
                 .align(m["B, A / 32"], m["A % 32"], trf)
                 .contract(m["1"])
                 .accumulate(m["B"], m["1 # 8"], AccumulationKind.Interleaved)
                 .cast(bf16, m["1 # 16"])
                 .commit(m["B, 1 # 4"], (1 << 16) + t * 64))
            del y
            if t + 1 < 4:  # written after the pass: the next tile's load may overlap it (its other half)
                trf = load(ctx, w_dm, t + 1, TrfAddress.SecondHalf if double and t % 2 == 0 else TrfAddress.FirstHalf)
        # the four results side by side in DM: one handle over the bytes the four commits wrote
        ys = DmTensor.from_addr(ctx, bf16, m["1"], Cluster, Slice, m["T, B, 1 # 4"], 1 << 16)
        return ys.to_hbm(m["T, B, 1 # 4"], ctx.tdma, 1 << 28)

    ctx = Context.acquire() if ctx is None else ctx
    first = len(ctx.schedule.ops)  # this launch's operations follow the earlier launches' on the same device
    rng = np.random.default_rng(11)
    x = HostTensor.rand(bf16, m["B, A"], rng)
    w = HostTensor.rand(bf16, m["T, A"], rng)
    out = launch(kernel, ctx, x.to_hbm(m["1"], m["B, A"], ctx.pdma, 0),
                 w.to_hbm(m["1"], m["T, A"], ctx.pdma, 1 << 20))
    got = np.asarray(out.to_host(m["T, B, 1 # 4"], ctx.pdma).numpy(axes="T B"), dtype=np.float64)
    xs, ws = x.numpy(axes="B A").astype(np.float64), w.numpy(axes="T A").astype(np.float64)
    want = ws @ xs.T
    # bf16 result: half an ulp (2^-8 relative, generously) plus the f32 accumulation error of 1024 products
    bound = np.abs(want) * 2.0**-8 + xs.shape[1] * 2.0**-23 * (np.abs(ws) @ np.abs(xs).T)
    assert np.all(np.abs(got - want) <= bound), (got, want)
    tu = [op for op in ctx.schedule.ops[first:] if op.track in ("main", "sub")]
    return got, max(op.end for op in tu) - min(op.start for op in tu)


def main() -> None:
    """Run both variants; double buffering overlaps the loads with the passes, so it must be faster."""
    _, single = run(double=False)
    _, double = run(double=True)
    print(f"loads and passes: {single} cycles with one TRF buffer, {double} with two ({single / double:.2f}x)")
    assert double < single, (double, single)


if __name__ == "__main__":
    main()
