"""The small Llama 3 examples (examples/llama_decode_layer.py, llama_generate.py, llama_prefill_layer.py; manual
L7982–8431).

``run()`` compares every stage with numpy applied to that stage's inputs as the device produced them: the
on-device gathers (embedding row, RoPE row) and the KV-cache append exactly, float stages within the stage's
derived bound (:mod:`visa.kernels.bounds`).  These tests run them and check the schedule.
"""

from __future__ import annotations

import pytest

from tests.example_loader import load_example as load
from visa.context import holding


@pytest.mark.parametrize("position", [1, 37, 128])
def test_decode_layer_every_stage_within_bound_L8225_L8364(position: int) -> None:
    """One launch: the embedding gather, the RoPE-row gather and the KV append are exact (error 0.0 by
    ``exact``); attention over the whole cache, the positions after p masked by the branch log, within its bound
    over positions 0..p (at p = 0 one position: probability 1, exact).  Schedule: the attention's read of each
    cache waits for its append (RAW on the cache's bytes), and the append follows the projection it writes."""
    mod = load("llama_decode_layer")
    result = mod.run(seed=position, position=position)
    assert {k: result[k] for k in ("embedding gather", "rope row gather", "kv append")} == dict.fromkeys(
        ("embedding gather", "rope row gather", "kv append"), 0.0)
    stages = [k for k in result if k not in ("makespan", "memory bound")]
    assert len(stages) == 18
    if position == 1:
        assert result["attention"] == 0.0
    assert 0 < result["memory bound"] < result["makespan"]


def test_decode_layer_schedule_orders_the_appends() -> None:
    """The three gathers run on the tensor DMA (none on the host); each cache is read after its append ends."""
    mod = load("llama_decode_layer")
    with holding() as made:
        mod.run(seed=3, position=64)
    ops = made[-1].schedule.ops
    k_app, v_app = [op for op in ops if op.name.startswith("to_hbm_view")][-2:]
    gathers = [op for op in ops if op.name.startswith("gather")]
    assert [op.track for op in gathers] == ["tdma"] * 3  # the embedding, RoPE and mask rows
    later = [op for op in ops if op.start >= k_app.start and op.name.startswith("hbm.to_dm")]
    k_read = next(op for op in later if "S % 32, Dr" in op.name)
    v_read = next(op for op in later if "Dv" in op.name and "S" in op.name)
    assert k_read.start >= k_app.end and v_read.start >= v_app.end


def test_generate_tokens_in_a_host_loop_L8202_L8224() -> None:
    """examples/llama_generate.py: every step's embedding gather and KV appends (exact) and its attention, logits
    and probabilities (derived bounds) are checked inside ``run``; here: the sampled tokens are in the
    vocabulary, one per generated position; every step — the same passes on the same shapes, only the data, the
    gathered rows and the append's position differ — takes the same device cycles within 2% (the rows and the
    position decide which HBM channels a DMA uses, and so how concurrent DMAs share them, issue 22); and across
    steps the
    schedule orders the loop: each step's embedding gather starts after the host's write of the sampled id, which
    follows the host's read of the previous step's probabilities, and each append after the previous step's
    attention read the cache."""
    mod = load("llama_generate")
    with holding() as made:
        tokens, cycles = mod.run()
    assert tokens[:len(mod.PROMPT)] == list(mod.PROMPT)
    assert len(tokens) == len(mod.PROMPT) + mod.NEW_TOKENS
    assert all(0 <= t < mod.AX.size("V") for t in tokens)
    assert len(cycles) == len(tokens) - 1 and max(cycles) <= 1.02 * min(cycles)
    ops = made[-1].schedule.ops
    embeds = [k for k, op in enumerate(ops) if op.name.startswith("gather.to_dm")]
    assert len(embeds) == len(cycles)
    for k in embeds:  # the host wrote the token id, then the position; the gathers read them (RAW)
        token_w, pos_w = [j for j in range(k) if ops[j].track == "pdma" and ops[j].name.startswith("host.to_hbm")
                          and 'HbmTensor[i32, m["1"], m["1"]]' in ops[j].name][-2:]
        rope = next(op for op in ops[k:] if op.name.startswith("gather.to_hbm"))
        assert ops[k].start >= ops[token_w].end and rope.start >= ops[pos_w].end
    for a, b in zip(embeds, embeds[1:], strict=False):
        reads = [op for op in ops[a:b] if op.track == "pdma" and op.name.startswith("hbm.to_host")]
        assert ops[b].start >= max(op.end for op in reads)  # the host sampled from this step's probabilities
        appends = [op for op in ops[b:] if op.name.startswith("to_hbm_view")][:2]
        cache_reads = [op for op in ops[a:b] if op.name.startswith("hbm.to_dm") and "Dr" in op.name]
        assert min(op.start for op in appends) >= max(op.start for op in cache_reads)


def test_prefill_layer_causal_L7982_L8190() -> None:
    """examples/llama_prefill_layer.py: all 32 tokens through one layer; every stage is checked inside ``run``
    within its derived bound — among them each query row's attention against numpy over keys 0..i only (the
    causal mask by the branch log, L8090–8100); the pair swap of RoPE is a permutation and the RoPE rows are
    gathered, so both exact."""
    mod = load("llama_prefill_layer")
    with holding() as made:
        errors, cycles = mod.run()
    assert errors["rope swap"] == 0.0 and errors["rope rows gather"] == 0.0
    assert "causal attention" in errors and len(errors) == 16
    ops = made[-1].schedule.ops
    ids = next(k for k, op in enumerate(ops) if op.name.startswith("hbm.to_dm → DmTensor[i32"))  # the mask → DM
    log = next(op for op in ops[ids:] if op.track == "sub")  # the branch logger: sub context, DM → VRF, once
    assert "to_vrf" in log.name and log.start >= ops[ids].end
    assert log.end <= min(op.start for op in ops if op.track == "main")  # before any pass
    assert len([op for op in ops if op.name.startswith("gather.to_hbm")]) == 2  # the cos and sin rows
    assert cycles > 0
