"""HBM shares a host tensor's frozen buffer instead of copying it (copy on write; issue 15, host → HBM).

A contiguous PCIe copy of known bytes from a buffer visa owns (``HostTensor.from_numpy``, ``rand``, ``to_host``)
makes the HBM region *share* those bytes (``PagedImage.adopt``); the first write into the region copies it.
Nothing a write does may reach the host tensor, and a buffer the caller still holds is never shared.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.fastpath_switch import skip_unless
from visa import AxisSet, Context, HostTensor, i8, i32
from visa.memory.images import PagedImage

AX = AxisSet(A=256, B=1024)
M = AX.m


def _region(ctx: Context, lo: int) -> np.ndarray:
    hbm = ctx.memory.chip(0).hbm
    k = [s for s, _ in hbm.regions()].index(lo)
    out: np.ndarray = hbm._data[k]
    return out


@skip_unless("dma.adopt")
def test_a_host_tensor_is_shared_until_hbm_is_written() -> None:
    ctx = Context.acquire()
    x = np.random.default_rng(0).integers(-128, 128, size=(256, 1024), dtype=np.int8)
    host = HostTensor.from_numpy(x, i8, M["A, B"])
    hbm = host.to_hbm(M["1"], M["A, B"], ctx.pdma, 0)
    assert np.shares_memory(_region(ctx, 0), host.buffer()[0])  # no copy was made
    assert np.array_equal(hbm.to_host(M["A, B"], ctx.pdma).numpy(), x)  # reading does not copy either
    assert np.shares_memory(_region(ctx, 0), host.buffer()[0])
    # a write into the region (another tensor over its first rows) copies it first: the host keeps its values
    y = np.full((16, 1024), 7, dtype=np.int8)
    HostTensor.from_numpy(y, i8, M["A = 16, B"]).to_hbm(M["1"], M["A = 16, B"], ctx.pdma, 0)
    assert np.array_equal(host.numpy(), x)
    got, known = ctx.memory.chip(0).hbm.gather(np.arange(x.size))  # (hbm itself is stale now: read the bytes)
    assert known.all() and not np.shares_memory(_region(ctx, 0), host.buffer()[0])
    assert np.array_equal(got.view(np.int8)[: y.size], y.reshape(-1))
    assert np.array_equal(got.view(np.int8)[y.size:], x.reshape(-1)[y.size:])


def test_a_buffer_the_caller_holds_is_copied() -> None:
    """A HostTensor built directly around the caller's array may change with it: HBM takes a copy."""
    ctx = Context.acquire()
    values = np.arange(256 * 1024, dtype=np.int32)
    host = HostTensor(i32, M["A, B"], values, np.ones(values.shape, dtype=bool))
    hbm = host.to_hbm(M["1"], M["A, B"], ctx.pdma, 0)
    values[:] = -1  # the caller's later write
    assert np.array_equal(hbm.to_host(M["A, B"], ctx.pdma).numpy().reshape(-1), np.arange(256 * 1024))


def test_adopt_replaces_regions_inside_and_refuses_partial_overlaps() -> None:
    img = PagedImage(1 << 30, page_bytes=16)
    img.window(100, 110)[0][:] = 1  # a region inside [64, 192)
    buf = np.arange(128, dtype=np.uint8)
    assert img.adopt(64, buf) and img.regions() == [(64, 192)]
    vals, known = img.gather(np.array([63, 64, 100, 191, 192]))
    assert vals.tolist() == [0, 0, 36, 127, 0] and known.tolist() == [False, True, True, True, False]
    assert not img.adopt(128, np.zeros(128, np.uint8))  # overlaps [64, 192) partly: not shared
    with pytest.raises(ValueError):  # the shared bytes are read-only to anything that bypasses span()
        img._data[0][0] = 9
    data, written = img.window(70, 72)  # a writer gets a private copy
    data[:] = 200
    assert buf[6:8].tolist() == [6, 7] and img.gather(np.array([70, 71]))[0].tolist() == [200, 200]
