"""Snippets for :mod:`visa.models` (``SmolLM2``: its KV cache length, ``run`` and ``generate``).  The programs build
a tiny model of the same architecture from random weights and a 32-token vocabulary instead of loading the
98 MB SmolLM2-135M file (``SmolLM2.load()``), so that each runs in a second or two; with the real model only the
first lines differ."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["MODELS"]

_TINY = '''
import numpy as np
from visa.models import SmolLM2, Tokenizer
from visa.models.loader import LlamaConfig

# a one-block model of SmolLM2's architecture with random weights (SmolLM2.load() reads the real one)
tokens = [chr(c) for c in range(97, 123)] + ["Ġ", "."] + [f"<|x{k}|>" for k in range(3)] + ["<|endoftext|>"]
tokenizer = Tokenizer(tokens, [], [1] * 28 + [3] * 4, "smollm", eos=31)
config = LlamaConfig(blocks=1, dim=64, ffn=128, heads=2, kv_heads=2, head_dim=32, rope_base=1e4, eps=1e-5,
                     vocab=32, context=64)
shapes = {"attn_norm": (64,), "attn_q": (64, 64), "attn_k": (64, 64), "attn_v": (64, 64), "attn_output": (64, 64),
          "ffn_norm": (64,), "ffn_gate": (128, 64), "ffn_up": (128, 64), "ffn_down": (64, 128),
          "token_embd": (32, 64), "output_norm": (64,)}
rng = np.random.default_rng(0)


def weight(name: str) -> np.ndarray:
    return rng.standard_normal(shapes[name.split(".")[-2]]).astype(np.float32) / 8
'''
_MODEL = "model = SmolLM2(config, tokenizer, weight, length=64)   # a KV cache of 64 positions"

_Q4 = '''
from visa.models.loader import Q4Weight


def q4(name: str) -> Q4Weight:  # a matrix kept Q4_1: nibbles 0..15, an f16 scale and minimum per block of 32
    n, k = shapes[name.split(".")[-2]]
    return Q4Weight(rng.integers(0, 16, (n, k)).astype(np.int8), np.full((n, k // 32), 1 / 64, np.float16),
                    np.full((n, k // 32), -1 / 8, np.float16))
'''

_NAN = '''

def corrupt(name: str) -> Q4Weight:  # the file's attn_k with a NaN scale in row 3's second block
    w = q4(name)
    if "attn_k" in name:
        w.d[3, 1] = np.nan
    return w
'''

#: site key → the failing and the fixed program.
MODELS: dict[str, Snippet] = {
    "smollm2.SmolLM2._check_options ContextLengthError: a kv cache of": module(
        _TINY, "model = SmolLM2(config, tokenizer, weight, length=48)   # not a multiple of 32 (or below 64)",
        "model = SmolLM2(config, tokenizer, weight, length=64)"),
    "smollm2.SmolLM2._check_options ModelOptionError: chips the tensor-parallel split": module(
        _TINY, "model = SmolLM2(config, tokenizer, weight, length=64, chips=3)   # the butterfly pairs c, c XOR 2^k",
        "model = SmolLM2(config, tokenizer, weight, length=64, chips=1)"),
    "smollm2.SmolLM2._check_options ModelOptionError: q4_1 matrices on chips": module(
        _TINY + _Q4, "model = SmolLM2(config, tokenizer, weight, length=64, chips=2, quantized=q4)   # shards: bf16",
        "model = SmolLM2(config, tokenizer, weight, length=64, chips=1, quantized=q4)"),
    "device.Weights.add_block_q4 ModelFileError: blk the f16 of": module(
        _TINY + _Q4 + _NAN, "model = SmolLM2(config, tokenizer, weight, length=64, quantized=corrupt)   # a NaN scale",
        "model = SmolLM2(config, tokenizer, weight, length=64, quantized=q4)"),
    "device.Weights.__init__ HardwareLimitError: the model's weights caches": module(
        _TINY, "model = SmolLM2(config, tokenizer, weight, length=16384)   # the decode mask alone: 2 GiB",
        "model = SmolLM2(config, tokenizer, weight, length=64)"),
    "smollm2.SmolLM2.run ContextLengthError: tokens at position need": module(
        _TINY, _MODEL + '\nout = model.run([3], 64)   # position 64 is past the cache',
        _MODEL + '\nout = model.run([3], 63)   # the last position'),
    "smollm2.SmolLM2.generate ContextLengthError: an empty prompt has": module(
        _TINY, _MODEL + '\ntext = model.generate("", max_new_tokens=1)',
        _MODEL + '\ntext = model.generate("ab", max_new_tokens=1)'),
    "smollm2.SmolLM2.generate ContextLengthError: prompt tokens new ones": module(
        _TINY, _MODEL + '\ntext = model.generate("ab", max_new_tokens=64)   # 2 + 64 positions',
        _MODEL + '\ntext = model.generate("ab", max_new_tokens=1)'),
    "smollm2.SmolLM2._ids ContextLengthError: no token ids a": module(
        _TINY, _MODEL + '\nlogits = model.logits([])   # no token to run',
        _MODEL + '\nlogits = model.logits([3, 4])'),
    "smollm2.SmolLM2.generate ModelOptionError: temperature the sampler divides": module(
        _TINY, _MODEL + '\ntext = model.generate("ab", 1, temperature=float("nan"))',
        _MODEL + '\ntext = model.generate("ab", 1, temperature=0.7, seed=1)'),
}
