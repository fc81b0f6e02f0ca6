"""The small Llama 3 decode layer (examples/llama_decode_layer.py; manual L8225–8364).

``run()`` compares every stage with numpy applied to that stage's inputs as the device produced them, within
the stage's derived bound (:mod:`visa.kernels.bounds`); this test runs it at two positions and checks the
schedule: launch 1 (norm, projections, RoPE) is shorter than launch 2 (attention over 128 positions and the FFN,
whose weights are 3 × 256 × 512 against 384 × 256).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama_decode_layer.py"


@pytest.mark.parametrize("position", [1, 128])
def test_decode_layer_every_stage_within_bound_L8225_L8364(position: int) -> None:
    spec = importlib.util.spec_from_file_location("visa_example_llama_decode_layer", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    result = mod.run(seed=position, position=position)
    stages = [k for k in result if not k.startswith(("makespan", "memory bound"))]
    assert len(stages) == 15
    assert 0 < result["makespan launch 1"] < result["makespan launch 2"]


def test_generate_tokens_in_a_host_loop_L8202_L8224() -> None:
    """examples/llama_generate.py: every step's attention, logits and probabilities are checked inside ``run``
    (derived bounds); here: the sampled tokens are in the vocabulary, one per generated position, and every
    step — the same passes on the same shapes, only the data and the mask differ — takes the same cycles."""
    path = EXAMPLE.parent / "llama_generate.py"
    spec = importlib.util.spec_from_file_location("visa_example_llama_generate", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    tokens, cycles = mod.run()
    assert tokens[:len(mod.PROMPT)] == list(mod.PROMPT)
    assert len(tokens) == len(mod.PROMPT) + mod.NEW_TOKENS
    assert all(0 <= t < mod.AX.size("V") for t in tokens)
    assert len(cycles) == len(tokens) - 1 and len(set(cycles)) == 1


def test_prefill_layer_causal_L7982_L8190() -> None:
    """examples/llama_prefill_layer.py: all 32 tokens through one layer; every stage is checked inside ``run``
    within its derived bound — among them each query row's attention against numpy over keys 0..i only (the
    causal mask, L8090–8100); the pair swap of RoPE is a permutation, so exact."""
    path = EXAMPLE.parent / "llama_prefill_layer.py"
    spec = importlib.util.spec_from_file_location("visa_example_llama_prefill_layer", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    errors, cycles = mod.run()
    assert errors["rope swap"] == 0.0
    assert "causal attention" in errors and len(errors) == 15
    assert cycles > 0
