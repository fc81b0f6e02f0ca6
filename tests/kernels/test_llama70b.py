"""The Llama 3 70B decode layer (examples/llama70b_decode_layer.py; manual L8225–8364) at its reduced size.

``run()`` compares every stage with numpy applied to that stage's inputs as the device produced them, within
the stage's derived bound (:mod:`visa.kernels.bounds`, asserted inside ``run``); here the stages are counted,
the layer's cycles are checked against the memory-bound limit (no schedule can beat moving the weights once),
and the streamed weight GEMMs dominate the layer.  The full size runs behind ``LLAMA70B_FULL=1`` (README).
"""

from __future__ import annotations

import numpy as np

from tests.example_loader import load_example


def test_reduced_70b_layer_every_stage_within_bound_and_above_the_memory_bound() -> None:
    mod = load_example("llama70b_decode_layer")
    result = mod.run(mod.REDUCED, seed=3)
    stages = [k for k in result if k not in ("makespan", "memory bound", "setup s", "launch s", "check s",
                                             "launch peak MB", "peak MB")]
    assert len(stages) == 15
    # weights (13.1M bf16) ÷ HBM read bytes per cycle: the launch cannot be shorter
    size = mod.REDUCED
    assert size.weights == 1024 * (1024 + 2 * 128) + 1024 * 1024 + 3 * 3584 * 1024
    assert result["makespan"] > result["memory bound"] > 0


def test_reduced_70b_layer_tile_major_weights_give_the_row_major_bits() -> None:
    """The weights stored K-tile-major (the example's default, each streamed tile contiguous) and row-major (the
    layout before): the host writes the same values in another order and the Gemms read them through the matching
    views, so every stage's output is bit for bit the same.  At this size the weight tiles' DMAs are not on the
    critical path (tiles of at most 1024 rows fill at most one DMN, 32 slices, bound by its 128 B/cycle, L2603, in
    both layouts), so the makespan is the same too."""
    mod = load_example("llama70b_decode_layer")
    tiled: dict[str, object] = {}
    rows: dict[str, object] = {}
    a = mod.run(mod.REDUCED, seed=3, keep=tiled)
    b = mod.run(mod.REDUCED, seed=3, tiles=False, keep=rows)
    assert tiled.keys() == rows.keys() and len(tiled) == 21
    assert all(np.array_equal(tiled[k], rows[k]) for k in tiled)
    assert a["makespan"] == b["makespan"]
