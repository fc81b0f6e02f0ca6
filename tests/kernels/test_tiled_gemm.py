"""The tiled, double-buffered GEMM (examples/tiled_gemm.py; manual L7089–7150) on the simulator.

``run()`` checks both kernels against numpy (a derived bound, see its docstring) and that both give the same
bits.  Expected schedule, by hand (T = 4 tiles; L_main, L_sub the TRF load on the main / sub context, C a
contraction, S an add pass, two of them):

- single-buffered (main loads, then contracts): T·(L_main + C) + 2·S, exactly — one track, no overlap;
- double-buffered (main loads the first tile, the sub context the others into alternating TRF halves):
  L_main + T·C + 2·S while a sub load and its hand-off to main (H, issue 22) fit in a contraction,
  L_sub + H ≤ C; otherwise each sub-loaded contraction can wait up to L_sub + H − C for its tile, so the
  makespan lies between L_main + T·C + 2·S and L_main + C + (T − 1)·max(C, L_sub + H) + 2·S.
"""

from __future__ import annotations

from tests.example_loader import load_example as load
from visa import RNGD


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
    l_sub, h = double.loads[1].cycles, RNGD.timing.context_handoff_cycles
    assert l_main + tiles * c + s <= double.makespan <= l_main + c + (tiles - 1) * max(c, l_sub + h) + s
    if l_sub + h <= c:
        assert double.makespan == l_main + tiles * c + s  # every sub load hides behind a contraction
    assert double.makespan < single.makespan
    assert double.utilisation >= single.utilisation
