"""The tiled, double-buffered GEMM (examples/tiled_gemm.py; manual L7089–7150) on the simulator.

``run()`` checks both kernels against numpy (a derived bound, see its docstring) and that both give the same
bits.  Expected schedule, by hand (T = 4 tiles; L_main, L_sub the TRF load on the main / sub context, C a
contraction, S an add pass, two of them):

- single-buffered (main loads, then contracts): T·(L_main + C) + 2·S, exactly — one track, no overlap;
- double-buffered (main loads the first tile, the sub context the others into alternating TRF halves):
  L_main + T·C + 2·S while L_sub ≤ C.  Honouring the write-after-read hazard on a TRF half (the schedule
  helper's change) moves the third sub load from 4096 to 5126 cycles into the segment; it still ends before
  main needs it, so this value does not change.  The test asserts double ≤ single and the single formula.
"""

from __future__ import annotations

from tests.example_loader import load_example as load


def test_tiled_gemm_double_buffered_L7089_L7150() -> None:
    mod = load("tiled_gemm")
    single, double = mod.run()
    tiles = mod.N_TILES * mod.K_TILES
    assert len(single.loads) == len(double.loads) == tiles
    assert len(single.contractions) == len(double.contractions) == tiles
    assert len(single.adds) == len(double.adds) == mod.N_TILES
    # who loads: the main context in the baseline; in double buffering main loads tile 0, sub the rest
    assert all(op.track == "main" for op in single.loads)
    assert [op.track for op in double.loads] == ["main"] + ["sub"] * (tiles - 1)
    l_main, c = single.loads[0].cycles, single.contractions[0].cycles
    s = sum(op.cycles for op in single.adds)
    assert single.makespan == tiles * (l_main + c) + s
    assert double.makespan == l_main + tiles * c + s  # every sub load hides behind a contraction
    assert double.makespan < single.makespan
    assert double.loads[1].cycles <= c  # the condition under which the sub loads hide behind contractions
    assert double.utilisation >= single.utilisation
