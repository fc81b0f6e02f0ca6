"""The tensor-parallel Llama 3 70B decode layer (examples/llama70b_tp.py; manual L8225–8419 and the AllReduce of
"Chip/Cluster Reduce", L7382–7610) at its reduced size on 2 and 4 chips.

``run(n)`` checks every stage on every chip against numpy within its derived bound (asserted inside ``run``) and
that every chip ends with bitwise the same output; here the stages are counted and the cycles checked: the
launch cannot beat each chip reading its own weights once (the per-chip memory bound), and 4 chips finish
before 2 (each chip streams half the weights; the AllReduce adds two rounds, not twice the weights).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

from visa.hw import bandwidth
from visa.hw.rngd import RNGD

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama70b_tp.py"


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("visa_example_llama70b_tp", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_tensor_parallel_layer_on_2_and_4_chips_within_bounds_and_faster_with_more_chips() -> None:
    mod = _module()
    results = {n: mod.run(n, seed=5) for n in (2, 4)}
    for n, result in results.items():
        stages = [k for k in result if k not in mod.NOT_ERRORS]
        assert len(stages) == 17  # every stage was checked, the two AllReduces included
        assert "all_reduce (attn)" in stages and "all_reduce (ffn)" in stages
        sz = mod.SIZE
        per_cycle = bandwidth(RNGD, "HBM")  # the one HBM figure: 32 channels × 48 B/cycle (L2980, issue 22)
        limit = (2 * sz.weights + 4 * sz.kv_heads * sz.s * sz.dk) / n / per_cycle
        assert abs(result["memory bound"] - limit) <= 1e-6 * limit
        assert result["makespan"] > result["memory bound"]
    assert results[4]["makespan"] < results[2]["makespan"]


def test_tensor_parallel_tile_major_shards_give_the_row_major_bits() -> None:
    """Every chip's weight shards stored K-tile-major (the example's default) and row-major (before), and q
    contracted with k and v in one Gemm (the default: the stack fits one Gemm) or
    apart (``fuse_q=False``): every stage's output on every chip bit for bit the same (2 chips; the
    4-chip shards are the same code)."""
    mod = _module()
    tiled: dict[str, Any] = {}
    rows: dict[str, Any] = {}
    apart: dict[str, Any] = {}
    mod.run(2, seed=5, keep=tiled)
    mod.run(2, seed=5, tiles=False, keep=rows)
    mod.run(2, seed=5, keep=apart, fuse_q=False)
    assert tiled.keys() == rows.keys() == apart.keys() and len(tiled) == 17
    assert all(np.array_equal(tiled[k], rows[k]) and np.array_equal(tiled[k], apart[k]) for k in tiled)


def test_the_next_layers_weights_load_during_the_allreduce_L7503_L8225() -> None:
    """Two layers in one launch on 2 chips (issue 27 item 8): the second layer's first q/k/v weight tile is
    prefetched by the tensor DMA while the first layer's FFN AllReduce runs (its Gemm's slices placed away from the
    AllReduce's rows, so the DMA takes another engine, L2404, L2831).  The same bits as without the prefetch; the
    prefetch overlaps the AllReduce; the launch is shorter by about the hidden DMA."""
    mod = _module()
    kept: dict[str, dict[str, Any]] = {True: {}, False: {}}  # type: ignore[dict-item]
    results = {ov: mod.run(2, seed=5, layers=2, overlap=ov, keep=kept[ov]) for ov in (True, False)}
    assert np.array_equal(kept[True]["out2"], kept[False]["out2"])
    assert results[True]["prefetch overlap"] > 0
    assert results[True]["makespan"] < results[False]["makespan"]
