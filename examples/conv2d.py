"""A 2D convolution by shift-reuse (manual "2D Convolution", L3737–3776; Stream Adapter, L3913–3957).

``out[n, h, w, c] = Σ_{fh, k, fw} x[n, h + fh, k, w + fw] · wt[c, k, fh, fw]`` — the einsum
``$(H + Fh)$(W + Fw)K, FhFwKC → HWC`` at the manual's filter-stride-1 sizes: H = W = 30, Fh = Fw = 3, K = 32
input channels, and C = 16 output channels (two groups of the 8 Rows, ``C / 8`` a time broadcast, L3742).

The input's rows and columns are read through linear combinations (L1006–1016): the DM tensor ``[Y, K, X]`` is
*relabelled* as ``[$(H : 1, Fh : 1), K, $(W : 1, Fw : 1)]`` (32 rows, 32 columns), so that

- the fetch slides over rows: Time ``[H, C / 8, Fh, K, X / 16]`` reads row ``h + fh`` (the ``$(H + Fh)`` sliding
  "done in the Fetch Engine", L3740), once per output-channel group;
- each row is streamed whole, as the linear combination ``$(W : 1, Fw : 1)`` in two 32-byte flits, and the Stream
  Adapter shifts it: ``align(m["H, C / 8, Fh, K, Fw"], m["W # 32"], trf)`` gives ``collect_flits = 3`` with
  ``feed_flits = 2`` and three shifts of one element (the manual's "shift-stride of 1 with two shifts", L3740),
  lane ``w`` of shift ``fw`` holding ``x[h + fh, k, w + fw]`` — the aligner's configuration reports it;
- the TRF holds ``wt`` per Row ``C % 8`` (Element ``[C / 8, K, Fh, Fw]``), read one weight at a time and broadcast
  over the 32 lanes (``reg_read_size`` = 2 bytes);
- the Reducer multiplies without a tree (``contract(m["W # 32"])``, 32 outputs per Row) and accumulates over
  ``Fh, K, Fw`` (Interleaved, 32 slots inner to the reduced axes).

Four images run at once, one per slice (``Slice = m["N # 256"]``; the weights go to every slice by the DMA's
broadcast).  Departure from the manual: its dumps write ``C = 24`` in the TRF mapping and ``C = 32`` in the
accumulation of one example (L3742–3745); C = 16 here keeps them consistent.  The result, rounded to bf16, is
checked against numpy within the f32 accumulation's bound.

Run it with ``visa run examples/conv2d.py``.
"""

import numpy as np
import numpy.typing as npt

from visa import AccumulationKind, Context, HbmTensor, HostTensor, TrfAddress, axes, bf16, device, launch, m

axes(N=4, H=30, Fh=3, K=32, W=30, Fw=3, C=16, Y=32, X=32)

Chip, Cluster, Slice = m["1"], m["1 # 2"], m["N # 256"]
ROWS = "$(H : 1, Fh : 1)"  # input row h + fh: 1 + 29 + 2 = 32 rows (L1006–1016)
COLS = "$(W : 1, Fw : 1)"  # input column w + fw: the row the Stream Adapter shifts, 32 elements = 2 flits
TIME = m[f"H, C / 8, Fh, K, [{COLS}] / 16"]  # C / 8 broadcast: the row is read once per channel group
PACKET = m[f"[{COLS}] % 16"]


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[bf16, m["1"], m["N, Y, K, X"]],
           wt: HbmTensor[bf16, m["1"], m["C, K, Fh, Fw"]]) -> HbmTensor[bf16, m["1"], m["N, H, W, C"]]:
    """Images into their slices, the filter into every slice's TRF (sub context), then one pass per slice."""
    x_dm = x.to_dm(Cluster, Slice, m["Y, K, X"], ctx.tdma, 0)
    w_dm = wt.to_dm(Cluster, Slice, m["C, K, Fh, Fw"], ctx.tdma, 1 << 16)
    trf = (ctx.sub.begin(w_dm.view())
           .fetch(bf16, m["C % 8, C / 8, [K, Fh, Fw] / 16"], m["[K, Fh, Fw] % 16"])
           .collect(m["C % 8, C / 8, [K, Fh, Fw] / 16"], m["[K, Fh, Fw] % 16"])
           .to_trf(m["C % 8"], m["C / 8, K, Fh, Fw"], TrfAddress.Full))
    out = (ctx.main.begin(x_dm.view().relabel(m[f"{ROWS}, K, {COLS}"]))
           .fetch(bf16, TIME, PACKET)
           .collect(TIME, PACKET)
           .align(m["H, C / 8, Fh, K, Fw"], m["W # 32"], trf)  # shift-reuse: collect_flits = 3
           .contract(m["W # 32"])  # tree depth 0: one output per lane
           .accumulate(m["H, C / 8, W # 32"], m["C % 8"], AccumulationKind.Interleaved)  # Σ over Fh, K, Fw
           .cast(bf16, m["C % 8 # 16"])
           .commit(m["H, C / 8, W # 32, C % 8"], 1 << 17))
    return out.to_hbm(m["N, H, W, C"], ctx.tdma, 2 << 28)


def reference(x: npt.NDArray[np.float64], wt: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """numpy: ``out[n, h, w, c] = Σ x[n, h + fh, k, w + fw] · wt[c, k, fh, fw]`` in float64."""
    rows = np.arange(30)[:, None] + np.arange(3)[None, :]  # h + fh (and w + fw)
    win = x[:, rows][:, :, :, :, rows]  # [n, h, fh, k, w, fw]
    out: npt.NDArray[np.float64] = np.einsum("nafkbg,ckfg->nabc", win, wt)
    return out


def main() -> None:
    """Random bf16 images and filter; the device's result against numpy within the derived bound."""
    ctx = Context.acquire()
    rng = np.random.default_rng(3)
    x = HostTensor.rand(bf16, m["N, Y, K, X"], rng)
    wt = HostTensor.rand(bf16, m["C, K, Fh, Fw"], rng)
    out = launch(kernel, ctx, x.to_hbm(Chip, m["N, Y, K, X"], ctx.pdma, 0),
                 wt.to_hbm(Chip, m["C, K, Fh, Fw"], ctx.pdma, 1 << 28))
    got = np.asarray(out.to_host(m["N, H, W, C"], ctx.pdma).numpy(axes="N H W C"), dtype=np.float64)
    xs, ws = x.numpy(axes="N Y K X").astype(np.float64), wt.numpy(axes="C K Fh Fw").astype(np.float64)
    want = reference(xs, ws)
    # half a bf16 ulp of the result, plus the f32 accumulation of the 288 products (Fh · K · Fw)
    bound = np.abs(want) * 2.0**-8 + 288 * 2.0**-23 * reference(np.abs(xs), np.abs(ws))
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) - bound))


if __name__ == "__main__":
    main()
