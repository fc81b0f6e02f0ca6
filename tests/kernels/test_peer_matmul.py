"""The Rust reference's ``matmul_16384`` structure written in visa (``benchmarks/bench_peer_matmul.py``, issue 24),
run small and exact: N = 1024 with 8 rows of lhs a slice (1024 × 64 tiles, K in four tiles over 2 clusters × 2
slices), its first two tiles checked against numpy's product wrapped to i8 (the Cast Engine wraps, the
interleaved adds wrap: the result is the product modulo 256).  With every fast path off the kernel writes the
same bytes and records the same schedule (every operation's track, start, end and cycles)."""

from __future__ import annotations

import numpy as np

from benchmarks import bench_peer_matmul as peer
from visa import fastpaths


def test_peer_matmul_small_is_exact_and_the_same_without_fast_paths() -> None:
    fast = peer.run_kernel(1024, rows=8, tiles=2, measure=False)  # raises on any element that differs
    assert fast["tiles"] == 2 and len(fast["c_tiles"]) == 2
    with fastpaths.disabled():
        reference = peer.run_kernel(1024, rows=8, tiles=2, measure=False)
    assert fast["schedule"] == reference["schedule"]
    for got, want in zip(fast["c_tiles"], reference["c_tiles"], strict=True):
        assert np.array_equal(got, want)


def test_the_geometry_refuses_sizes_the_layout_cannot_hold() -> None:
    import pytest

    with pytest.raises(SystemExit, match="N = 1000"):
        peer.Geometry(1000, 8).check()
    g = peer.Geometry(16384, 128)
    assert (g.slices_k, g.groups, g.ti, g.tiles) == (32, 8, 1024, 4096)  # the 4,096 tiles of 1024 × 64


def test_the_shared_row_paths_change_nothing_the_kernel_sees() -> None:
    """The paths for slices that share rows (issue 24: the inter-slice reduce's broadcast sum, its cast and its
    commit, the fetch that reads it back, the unzip and zip, and Collect and the TRF load of replicated slices)
    off alone: the same bytes and schedule as with them on.  N = 4096 with 64 rows a slice: the partials are 4 KiB
    a slice, whole pages of DM, which the replica ids of their commits cover (the fetch then reads one slice of
    each class)."""
    shared = ["vector.inter-shared", "cast.shared-rows", "commit.shared-rows", "fetch.shared-rows",
              "vector.shared-rows", "collect.shared-rows", "collect.shared-load",
              # and those of the cluster reduce over them and of the pairwise adds' reads
              "parallel_copy.replicas", "dma.replica-sources", "memory.forget-units", "memory.pending-pieces",
              "transpose.shared-rows",
              # the products written into the output, the TRF window read through the load's copies, raw DMA runs
              "contraction.product-into", "contraction.window-owed", "dma.raw-runs",
              # the TRF window's fold (one entry per period of each block of slices) and its product
              "contraction.window-fold", "contraction.fold-into"]
    fast = peer.run_kernel(4096, rows=64, tiles=1, measure=False)
    with fastpaths.disabled(*shared):
        reference = peer.run_kernel(4096, rows=64, tiles=1, measure=False)
    assert fast["schedule"] == reference["schedule"]
    assert np.array_equal(fast["c_tiles"][0], reference["c_tiles"][0])
