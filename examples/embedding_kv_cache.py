"""Embedding lookup, KV-cache append and a guarded MoE block (manual L7994–8005, L8286–8297, L8596–8707).

The decode step of the Llama chapter, scaled down: the sampled token ids pick rows of the embedding table
(``x_0 = gather(index: input, table: w_emb)``, "processed by TensorDMA", L8241), the new key row is appended
to the KV cache in HBM ("Concat on HBM using DMA is also possible", L8297), and an expert's weight rows are
gathered only when its token count is non-zero ("sparse operations skip execution for empty Grids", L8616).

Departures from the manual: the sizes are small (V = 512, D = 128, S = 16 instead of 128256, 8192 and the
context length); the manual gives no spelling for gather, in-place DMA or the guard, so they are the ones of
design API.md §7 and docs/manual-notes.md (issue 13): ``table.view().gather(m["V"], ids).to_dm(...)``,
``k.to_hbm_view(cache.view().tile(...), ctx.tdma)`` and ``ctx.tdma.when(count, predicate)``.

Run it with ``visa run examples/embedding_kv_cache.py``.
"""

import numpy as np

from visa import Context, DmTensor, HbmTensor, HostTensor, axes, device, i32, launch, m

axes(V=512, D=128, B=8, S=16)


@device(chip=1)
def kernel(ctx: Context, w_emb: HbmTensor[i32, m["1"], m["V, D"]], tokens: HbmTensor[i32, m["1"], m["B"]],
           last: HbmTensor[i32, m["1"], m["1"]], cache: HbmTensor[i32, m["1"], m["S, D"]],
           count: HbmTensor[i32, m["1"], m["1"]]) -> DmTensor[i32, m["1"], m["1 # 2"], m["B # 256"], m["D"]]:
    """Gather the tokens' rows into DM (one row per slice); gather the row of the single token ``last`` and
    append it to the cache at position 5; gather the expert's rows again only when ``count`` is positive."""
    x0 = w_emb.view().gather(m["V"], tokens).to_dm(m["1 # 2"], m["B # 256"], m["D"], ctx.tdma, 0)
    k = w_emb.view().gather(m["V"], last).to_dm(m["1 # 2"], m["1 # 256"], m["D"], ctx.tdma, 1 << 16)
    k.to_hbm_view(cache.view().tile(m["S"], 1, m["S = 1, D"], 5), ctx.tdma)
    if ctx.tdma.when(count, lambda n: n > 0):
        x0 = w_emb.view().gather(m["V"], tokens).to_dm(m["1 # 2"], m["B # 256"], m["D"], ctx.tdma, 0)
    return x0


def main() -> None:
    """Random table, tokens and cache; compare the gathered rows and the whole cache with numpy."""
    rng = np.random.default_rng(7)
    ctx = Context.acquire()
    table = rng.integers(-1000, 1000, (512, 128)).astype(np.int32)
    ids = rng.integers(0, 512, 8).astype(np.int32)
    cache_np = rng.integers(-1000, 1000, (16, 128)).astype(np.int32)
    w = HostTensor.from_numpy(table, i32, m["V, D"], axes="V D").to_hbm(m["1"], m["V, D"], ctx.pdma, 0)
    t = HostTensor.from_numpy(ids, i32, m["B"]).to_hbm(m["1"], m["B"], ctx.pdma, 1 << 20)
    c = HostTensor.from_numpy(cache_np, i32, m["S, D"], axes="S D").to_hbm(m["1"], m["S, D"], ctx.pdma, 2 << 20)
    one = HostTensor.from_numpy(np.int32(ids[3]), i32, m["1"]).to_hbm(m["1"], m["1"], ctx.pdma, 3 << 20)
    n = HostTensor.from_numpy(np.int32(0), i32, m["1"]).to_hbm(m["1"], m["1"], ctx.pdma, 4 << 20)
    x0 = launch(kernel, ctx, w, t, one, c, n)
    assert np.array_equal(x0.logical("B D"), table[ids])
    cache_np[5] = table[ids[3]]
    assert np.array_equal(c.logical("S D"), cache_np)
    assert ctx.schedule.ops[-1].name.endswith("skip")  # the expert had no tokens: only the guard ran


if __name__ == "__main__":
    main()
