"""A prefill over more than 256 tokens (examples/llama_prefill_long.py; manual L7982–8224; issue 27 item 8).

``run()`` checks every stage against numpy within its derived bound (asserted inside): 512 tokens in two tiles
of 256, each query tile attending to all 512 keys under the causal mask (query i checked against keys 0..i
only, so a tile that saw a later tile's key, or missed an earlier one, fails).
"""

from __future__ import annotations

from tests.example_loader import load_example


def test_prefill_of_512_tokens_in_two_tiles_L7982() -> None:
    mod = load_example("llama_prefill_long")
    errors, cycles = mod.run()
    assert len(errors) == 13 and cycles > 0
    assert mod.T > 256 and mod.TILES == 2  # more tokens than the 256 slices hold one at a time
