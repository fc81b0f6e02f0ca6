"""The four split-reduce examples of the manual (L7151–7381) end to end, with their cycles.

Each example's ``run()`` checks its result against numpy (exactly for the max and the MoE combination, within
a derived f32 bound for the statistics) and returns its Tensor Unit passes; these tests add the cycle counts
that follow by hand from the mappings: the fetch takes one cycle per flit per slice (L7246–7247), so a pass's
fetch cycles are its Time size.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.example_loader import load_example as load
from visa import RNGD, AxisSet, Context, LayoutError, f32
from visa.testing import place_dm

COMMAND = RNGD.timing.full_command_cycles  # a Tensor Unit command's issue and fill (issue 22)


def engine(op: Any, name: str) -> int:
    """The cycles of engine ``name`` in one recorded operation."""
    return next(r.cycles for r in op.engines if r.engine == name)


def test_layernorm_statistics_L7181_L7261() -> None:
    mod = load("split_reduce_layernorm")
    r = mod.run()
    names = [n for n, _ in r.passes]
    assert names == ["chunk Σx", "chunk Σx", "split reduce → mean", "chunk Σ(x−mean)²", "chunk Σ(x−mean)²",
                     "split reduce → std"]
    for name, op in r.passes:
        # a chunk: 4096 bf16 fetched as f32, four lanes per flit (Way4) → 1024 flits; a split reduce: one flit
        # of each partial statistic (one token per slice) → 2
        assert engine(op, "fetch") == (1024 if name.startswith("chunk") else 2)
    # the manual's "~8K cycles" (L7254): 2 · 32 · 128 · ⌈4096 / 16⌉ flits over 256 slices, + 32 · 128 / 256
    assert mod.manual_estimate() == 8192 + 16


def test_batchnorm_across_split_batches_L7262_L7291() -> None:
    passes = load("split_reduce_batchnorm").run()
    assert [n for n, _ in passes] == ["per-batch mean over H·W"] * 2 + ["split reduce + Σ Batch"]
    assert engine(passes[0][1], "fetch") == 8 * 64 // 4  # C · HW f32, four per flit
    split = passes[2][1]
    assert engine(split, "fetch") == 2 * 8  # two splits × C flits (L7350–7354)
    # the Inter-Slice Block's ring over 256 slices dominates the pass's streaming (L7344: "~256 cycles (slice
    # reduction)"); the command adds its issue and fill (issue 22)
    assert 256 <= split.cycles - COMMAND <= 256 + 2 * 16 + 8


def test_moe_partial_reduction_L7293_L7316() -> None:
    passes = load("split_reduce_moe").run()
    (name, op), = passes
    assert engine(op, "fetch") == 2 * 256 // 4  # two experts × Hidden f32, four per flit
    # vector_concat packs two 4-lane steps into 8 lanes, cast to bf16: 32 commits of 16 bytes
    assert engine(op, "commit") == 256 // 8
    assert op.cycles - COMMAND <= engine(op, "fetch") + 8  # one pipelined pass: the fetch bounds it


def test_temporal_max_tree_of_pairs_L7318_L7338() -> None:
    passes = load("split_reduce_temporal_max").run()
    assert [n for n, _ in passes] == ["window max over T"] * 4 + ["split reduce (pair max)"] * 3
    assert all(engine(op, "fetch") == 128 * 2 for _, op in passes[:4])  # T × (8 features / 4 lanes)
    assert all(engine(op, "fetch") == 2 * 2 for _, op in passes[4:])  # 2 tensors × 2 flits
    # N_splits · fetch (L7350–7354) is 4 × 2 = 8 flits; the tree fetches 2 × 2 per pass, three passes
    assert sum(engine(op, "fetch") for _, op in passes[4:]) == 12


def test_four_way_interleave_is_refused_L1850() -> None:
    """The manual's ``fetch(&max_t0, &max_t1, &max_t2, &max_t3)`` (L7336) needs I = 4; at most two tensors are
    interleaved (L1850), which is why the example builds a tree of pairs."""
    ax = AxisSet(F=2048, I=4)
    ctx = Context.acquire()
    m = ax.m
    a = place_dm(ctx, [0.0] * 2048, f32, m["1"], m["1 # 2"], m["F / 8"], m["F % 8"], 0)
    b = place_dm(ctx, [0.0] * 2048, f32, m["1"], m["1 # 2"], m["F / 8"], m["F % 8"], 64)
    with pytest.raises(LayoutError) as err:
        ctx.main.begin_interleaved(m["I"], a.view(), b.view())
    assert err.value.call == "begin_interleaved" and err.value.level == "Time" and err.value.axis == "I"
