"""An in-place DMA (``to_hbm_view``, KV-cache append L8286–8297) into a tile whose innermost dimension is a
resized, padded one (a column of a ``[Dv, S]`` cache: ``m["Dv, S = 1 # 16"]``) must write only the elements the
tile holds: the tile's padding positions are other elements of the live base.  Found by
examples/llama70b_decode_layer.py (docs/manual-notes.md, "Llama 3 70B decode layer at full size"); the in-place
move plans with ``own_padding=False`` unless the view is its whole tensor (visa/tensors/indirect.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from visa import AxisSet, Context, HostTensor, bf16, device, launch


def test_in_place_column_write_keeps_the_rest_of_the_base() -> None:
    ax = AxisSet(Dv=4, S=16)
    m = ax.m
    ctx = Context.acquire()
    before = np.arange(64, dtype=np.float32).reshape(4, 16)
    cache = HostTensor.from_numpy(before, bf16, m["Dv, S"], axes="Dv S").to_hbm(m["1"], m["Dv, S"], ctx.pdma, 0)
    new = HostTensor.from_numpy(np.full(4, -1, dtype=np.float32), bf16, m["Dv"], axes="Dv").to_hbm(
        m["1"], m["Dv"], ctx.pdma, 4096)

    @device(chip=1)
    def append(ctx: Context, c: Any, n: Any) -> Any:
        n.view().relabel(m["Dv, S = 1"]).to_hbm_view(c.view().tile(m["S"], 1, m["Dv, S = 1 # 16"], 15), ctx.tdma)
        return c

    out = launch(append, ctx, cache, new)
    host = out.to_host(m["Dv, S"], ctx.pdma)
    want = before.copy()
    want[:, 15] = -1
    assert bool(host.known.all())
    assert np.array_equal(np.asarray(host.numpy(axes="Dv S"), np.float32), want)
