"""SmolLM2 with its blocks' matrices kept Q4_1 in HBM and dequantised on the device (``weights="q4_1"``; issue 25,
part 2's "better"; visa.kernels.Q4Dequant).

- a few of the file's matrices dequantised on the simulated device: bit for bit gguf's own dequantisation rounded
  to bf16 (the bytes the default mode uploads);
- the file's first two blocks (the small model of tests/models) loaded both ways: the same logits bit for bit,
  prefill and decode (the GEMMs read the same bf16 bits in DM), every stage of a probing prefill within the
  derived bounds of the numpy reference, and fewer weight bytes in HBM.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from tests.kernels.test_dequant import on_device
from tests.models import needs
from visa.errors import HardwareLimitError
from visa.models import GgufModel, ModelFileError, ModelOptionError, SmolLM2, Tokenizer
from visa.models import bounds as mb
from visa.models.device import q4_dequant, q_scale
from visa.models.loader import Q4Weight
from visa.models.reference import Reference

needs.the_model_file()

launches = needs.launches

PROMPT_IDS = [504, 3575, 282, 4649, 314]


@pytest.mark.parametrize("name", ["blk.0.attn_k.weight", "blk.1.attn_output.weight", "blk.0.ffn_down.weight"])
def test_device_dequantisation_is_ggufs(gguf: GgufModel, name: str) -> None:
    """The nibbles and f16 scales of a file's matrix, uploaded and dequantised on the device: the bf16 bits of
    ``gguf.quants.dequantize`` (the loader's :meth:`GgufModel.weight`) rounded once to bf16."""
    w = gguf.q4_1(name)
    n, k = w.q.shape
    _, w_dm = on_device(q4_dequant(n, k), w, 1 << 22)
    bits = np.asarray(w_dm.logical("N K")).astype(ml_dtypes.bfloat16).view(np.uint16)
    assert np.array_equal(bits, gguf.weight(name).astype(ml_dtypes.bfloat16).view(np.uint16))


@pytest.fixture(scope="module")
def pair(gguf: GgufModel, short_ref: Reference) -> tuple[SmolLM2, SmolLM2]:
    """The file's first two blocks loaded with bf16 weights and with Q4_1 weights."""
    tok = Tokenizer.from_gguf(gguf)
    return (SmolLM2(short_ref.c, tok, gguf.weight, length=64),
            SmolLM2(short_ref.c, tok, gguf.weight, length=64, quantized=gguf.q4_1))


@launches
def test_q4_1_logits_are_the_bf16_modes_bit_for_bit(pair: tuple[SmolLM2, SmolLM2], short_ref: Reference) -> None:
    """A probing prefill and a decode step: every stage and the logits the same bits in both modes, every stage
    within the reference's derived bounds; the Q4_1 model holds fewer weight bytes, counted in the report's
    memory bound."""
    bf, q4 = pair
    c = short_ref.c
    a, b = bf.run(PROMPT_IDS, 0, probe=True), q4.run(PROMPT_IDS, 0, probe=True)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    x = np.asarray(short_ref.w["token_embd.weight"][PROMPT_IDS], np.float64)
    for blk in range(c.blocks):
        dev = {k.split(".", 1)[1]: np.asarray(v, np.float64) for k, v in b.items() if k.startswith(f"{blk}.")}
        for name, (got, want, bound) in mb.block_stages(short_ref, blk, x, dev, q_scale=q_scale(c), cols=64,
                                                        positions=np.arange(len(PROMPT_IDS))).items():
            assert np.all(np.abs(np.asarray(got, np.float64) - want) <= bound), (blk, name)
        x = dev["out"]
    want, bound = mb.head_error(short_ref, x)
    assert np.all(np.abs(b["logits"] - want) <= bound)
    token = int(np.argmax(b["logits"][-1]))
    assert np.array_equal(bf.run([token], len(PROMPT_IDS))["logits"], q4.run([token], len(PROMPT_IDS))["logits"])
    assert q4.weights == "q4_1" and q4.weight_bytes < bf.weight_bytes
    q4._new_report()
    assert q4.report().weights == "q4_1" and q4.report().weight_bytes == q4.weight_bytes


def test_unknown_weights_are_refused() -> None:
    """An unknown ``weights=`` is an option error (once a ContextLengthError, a review found), naming the
    parameter, the value given and the values accepted, before the file is read."""
    with pytest.raises(ModelOptionError) as err:
        SmolLM2.load(weights="q8")
    e = err.value
    assert isinstance(e, ValueError) and e.call == "SmolLM2.load" and e.code == "V0058"
    assert e.message.startswith("weights='q8': ") and "'bf16'" in e.message and "'q4_1'" in e.message
    assert e.fix == "use weights='bf16' or weights='q4_1'"


def test_q4_1_on_several_chips_is_an_option_error() -> None:
    """``weights='q4_1'`` with ``chips=2``: the two options named, with the values that go together."""
    with pytest.raises(ModelOptionError) as err:
        SmolLM2.load(weights="q4_1", chips=2)
    e = err.value
    assert (e.call, e.level, e.axis, e.code) == ("SmolLM2.load", "Chip", "C", "V0057")
    assert e.message.startswith("weights='q4_1' (Q4_1 matrices) on chips=2: ")
    assert e.fix == "use chips=1, or weights='bf16'"


def test_the_command_line_names_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """``visa generate --weights q4_1 --chips 2``: exit status 1 and the refusal in the flags' own words; the
    values no option accepts are argparse's (``--chips 3``, ``--weights q8``: exit 2, the choices listed)."""
    import argparse

    from visa.models.command import add_parser

    parser = argparse.ArgumentParser(prog="visa")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["generate", "hi", "--weights", "q4_1", "--chips", "2"])
    assert args.func(args) == 1
    said = capsys.readouterr().err
    assert "visa generate: SmolLM2.load: Chip m[\"C\"]: --weights q4_1 (Q4_1 matrices) on --chips 2: " in said
    assert "fix: use --chips 1, or --weights bf16 [V0057]" in said
    for flag, value in (("--chips", "3"), ("--weights", "q8")):
        with pytest.raises(SystemExit) as code:
            parser.parse_args(["generate", "hi", flag, value])
        assert code.value.code == 2
        assert f"argument {flag}: invalid choice" in capsys.readouterr().err


def test_the_command_line_takes_the_weights() -> None:
    """``visa generate … --weights q4_1`` reaches ``SmolLM2.load(weights=…)``; bf16 by default; others refused."""
    import argparse

    from visa.models.command import add_parser

    parser = argparse.ArgumentParser(prog="visa")
    add_parser(parser.add_subparsers(dest="command", required=True))
    assert parser.parse_args(["generate", "hi"]).weights == "bf16"
    assert parser.parse_args(["generate", "hi", "--weights", "q4_1"]).weights == "q4_1"
    with pytest.raises(SystemExit):
        parser.parse_args(["generate", "hi", "--weights", "q8"])


@launches
def test_a_prompt_past_32_tokens_runs_with_q4_1_weights(gguf: GgufModel, short_ref: Reference) -> None:
    """A prompt of 33 tokens or more runs in a 64-token chunk, whose tensors leave no DM for the two prefetch
    slots: its matrices are moved and dequantised where they are used (found by a review: the chunk's FFN
    tensor ran 896 bytes past the slice's DM); the logits are the bf16 mode's bit for bit."""
    c = dataclasses.replace(short_ref.c, blocks=1)
    tok = Tokenizer.from_gguf(gguf)
    ids = tok.encode("The capital of France is Paris. " * 6)
    assert len(ids) > 32
    bf = SmolLM2(c, tok, gguf.weight, length=64)
    q4 = SmolLM2(c, tok, gguf.weight, length=64, quantized=gguf.q4_1)
    assert np.array_equal(bf.prefill(ids, every=False), q4.prefill(ids, every=False))


def _tiny_q4(corrupt: Callable[[str, Q4Weight], None], head_dim: int = 32) -> SmolLM2:
    """A one-block model of SmolLM2's shape (two heads of ``head_dim``) with random Q4_1 matrices, ``corrupt(name,
    w)`` applied to each."""
    from visa.models.loader import LlamaConfig

    tokens = [chr(c) for c in range(97, 123)] + ["Ġ", "."] + [f"<|x{k}|>" for k in range(3)] + ["<|endoftext|>"]
    tok = Tokenizer(tokens, [], [1] * 28 + [3] * 4, "smollm", eos=31)
    d = 2 * head_dim
    c = LlamaConfig(blocks=1, dim=d, ffn=128, heads=2, kv_heads=2, head_dim=head_dim, rope_base=1e4, eps=1e-5,
                    vocab=32, context=64)
    shapes = {"attn_q": (d, d), "attn_k": (d, d), "attn_v": (d, d), "attn_output": (d, d), "ffn_gate": (128, d),
              "ffn_up": (128, d), "ffn_down": (d, 128), "token_embd": (32, d)}
    rng = np.random.default_rng(0)

    def weight(name: str) -> Any:
        return rng.standard_normal(shapes.get(name.split(".")[-2], (d,))).astype(np.float32) / 8

    def q4(name: str) -> Q4Weight:
        n, k = shapes[name.split(".")[-2]]
        w = Q4Weight(rng.integers(0, 16, (n, k)).astype(np.int8), np.full((n, k // 32), 1 / 64, np.float16),
                     np.full((n, k // 32), -1 / 8, np.float16))
        corrupt(name, w)
        return w

    return SmolLM2(c, tok, weight, length=64, quantized=q4)


@pytest.mark.parametrize(("tensor", "part", "value"), [("attn_q", "d", np.nan), ("attn_q", "m", np.nan),
                                                       ("ffn_up", "d", np.inf), ("attn_output", "m", -np.inf)])
def test_a_non_finite_scale_is_refused_as_such(tensor: str, part: str, value: float) -> None:
    """A NaN (or infinite) scale or minimum in a Q4_1 block: refused at load as what it is, naming the tensor, the
    row and the block (w_q's was refused as "w_q's scales times 1/√d leave f16's normal range", found by a review;
    the other matrices' loaded, every weight of the block NaN)."""
    def corrupt(name: str, w: Q4Weight) -> None:
        if f".{tensor}." in name:
            getattr(w, part)[5, 1] = value

    with pytest.raises(ModelFileError) as err:
        _tiny_q4(corrupt)
    e = err.value
    what = {"d": "scale", "m": "minimum"}[part]
    assert e.message.startswith(f"blk.0.{tensor}.weight: the f16 {what} of row 5's Q4_1 block 1 (columns 32–63) is "
                                f"{np.float16(value)} (1 such in the matrix)")
    assert (e.call, e.code) == ("visa.models.Weights", "V0059") and "intact model file" in (e.fix or "")


def test_finite_scales_load() -> None:
    """The same tiny model with every scale finite loads (the check refuses nothing else)."""
    assert _tiny_q4(lambda name, w: None).weights == "q4_1"


@pytest.mark.parametrize("part", ["d", "m"])
def test_w_qs_folded_factor_must_be_exact(part: str) -> None:
    """With d = 64 the attention's 1/√d = 2⁻³ is folded into w_q's f16 scales and minimums at load (exact while
    they stay in f16's normal range); one that the factor would take below it (the smallest normal plus one ulp,
    2⁻¹⁴ + 2⁻²⁴: its eighth rounds to the subnormals' grid) is refused, V4075; the same value in w_k (no factor)
    loads, as does an eighth that stays exact (2⁻¹⁴ · 8 = 2⁻¹¹)."""
    def small(tensor: str, value: float) -> Callable[[str, Q4Weight], None]:
        def corrupt(name: str, w: Q4Weight) -> None:
            if f".{tensor}." in name:
                getattr(w, part)[2, 1] = value
        return corrupt

    inexact = 2.0 ** -14 + 2.0 ** -24
    assert np.float16(inexact) == inexact and np.float16(np.float32(inexact) / 8) != np.float32(inexact) / 8
    with pytest.raises(HardwareLimitError) as err:
        _tiny_q4(small("attn_q", inexact), head_dim=64)
    e = err.value
    assert e.code == "V4075" and (e.call, e.level, e.axis) == ("visa.models.Weights", "HBM", "QKV")
    assert "w_q's scales times the attention's 1/√d leave f16's normal range" in e.message
    assert e.fix == "use weights='bf16'"
    assert _tiny_q4(small("attn_k", inexact), head_dim=64).weights == "q4_1"
    assert _tiny_q4(small("attn_q", 2.0 ** -11), head_dim=64).weights == "q4_1"
