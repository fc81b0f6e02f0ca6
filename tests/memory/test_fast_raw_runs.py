"""``dma.raw-runs`` (visa/memory/fast_raw_runs.py, issue 24) against the reference assignment (``dma.words``: 8-,
4- or 2-byte words): tensor DMAs from HBM to DM whose runs are a row of K bytes of a wider HBM row (as the peer
matmul's lhs tile: a row of 64 i8 to each slice) leave the same DM bytes and written-state and record the same
schedule with the path alone as with it off."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import alone_and_without
from visa import AxisSet, Context, HostTensor, fastpaths, i8


def _run(k: int, slices: int, rows: int, addr: int, seed: int) -> tuple[Any, ...]:
    """An HBM tensor ``[A, S, K]`` (rows of S·K bytes) moved to DM: slice S holds ``[A, K]`` (runs of K bytes)."""
    m = AxisSet(A=rows, S=slices, K=k).m
    ctx = Context.acquire()
    x = np.random.default_rng(seed).integers(-128, 128, size=(rows, slices, k)).astype(np.int8)
    hbm = HostTensor.from_numpy(x, i8, m["A, S, K"], axes="A S K").to_hbm(m["1"], m["A, S, K"], ctx.pdma, 0)
    hbm.to_dm(m["1 # 2"], m["S # 256"], m["A, K"], ctx.tdma, addr)
    dmi = ctx.memory.chip(0).dm
    n = addr + rows * k
    data, written = dmi.read_data()[..., :n], dmi.known_bytes(0, n)
    ops = [(o.track, o.name, o.start, o.cycles) for o in ctx.schedule.ops]
    return np.array(data), np.array(written), ops


@settings(max_examples=20, deadline=None)
@given(k=st.sampled_from([8, 16, 24, 32, 64, 96]), slices=st.sampled_from([2, 8]), rows=st.integers(2, 6),
       addr=st.integers(0, 8).map(lambda v: 32 * v), seed=st.integers(0, 2**16))
def test_runs_as_raw_elements_write_what_words_write(k: int, slices: int, rows: int, addr: int, seed: int) -> None:
    (data, written, ops), (ref_data, ref_written, ref_ops) = alone_and_without(
        "dma.raw-runs", lambda: _run(k, slices, rows, addr, seed))
    assert np.array_equal(data, ref_data) and np.array_equal(written, ref_written) and ops == ref_ops


def test_a_run_of_64_bytes_is_one_raw_element() -> None:
    """The path's own shape: 64-byte runs of a 256-byte source row land in DM whole (L1700–1841: the DMA moves
    the bytes; how many a numpy element holds is the simulator's business)."""
    if not fastpaths.get("dma.raw-runs").on:
        return
    data, written, _ = _run(64, 4, 3, 0, 1)
    x = np.random.default_rng(1).integers(-128, 128, size=(3, 4, 64)).astype(np.int8)
    got = data.reshape(-1, data.shape[-1])[:4, :192].view(np.int8).reshape(4, 3, 64)
    assert np.array_equal(got, x.transpose(1, 0, 2))
    assert written.reshape(-1, written.shape[-1])[:4, :192].all()
