"""The tokenizer of a GGUF file, built from its metadata with Hugging Face ``tokenizers`` (no hand-written BPE).

A ``gpt2`` tokenizer (``tokenizer.ggml.model``) is byte-level BPE over the file's ``tokens`` and ``merges``.  The
pre-tokenizer follows llama.cpp's for the file's ``tokenizer.ggml.pre``: for ``smollm`` (as for ``starcoder``,
``refact``, ``command-r``) each number character is split off on its own (``\\p{N}``), then GPT-2's pattern
(``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)``) splits the rest, and the
bytes map to the byte-level alphabet; ``gpt2`` itself skips the digit split.  Tokens of type CONTROL (3) are
special: their text in the input is that token (as ``<|im_start|>`` in a chat template).  Nothing is added
around the text (the file says ``add_bos_token = false``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from visa.models.loader import GgufModel, ModelFileError
from visa.validate import expect_int, expect_ints, expect_str

__all__ = ["Tokenizer", "token_ids"]

#: GGUF token types (llama.cpp's ``llama_token_type``): CONTROL tokens are special.
CONTROL = 3
#: llama.cpp's pre-tokenizers that split every number character off before GPT-2's pattern.
DIGIT_SPLIT = ("smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva")
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"


class Tokenizer:
    """``encode(text) -> list[int]`` and ``decode(ids) -> str`` of a GGUF file's byte-level BPE vocabulary."""

    def __init__(self, tokens: Sequence[str], merges: Sequence[str], types: Sequence[int], pre: str,
                 eos: int | None = None) -> None:
        try:
            from tokenizers import Regex, decoders, models, pre_tokenizers
            from tokenizers import Tokenizer as HfTokenizer
        except ImportError as exc:  # pragma: no cover - the extra is what provides it
            raise ModelFileError("the tokenizer needs the package tokenizers", call="visa.models.Tokenizer",
                                 level="host", mapping="-", axis="-", fix="pip install 'tcp-visa[models]'") from exc
        vocab = {tok: i for i, tok in enumerate(tokens)}
        pairs: list[tuple[str, str]] = []
        for merge in merges:
            left, right = merge.split(" ", 1)
            pairs.append((left, right))
        bpe = models.BPE(vocab=vocab, merges=pairs, fuse_unk=False, byte_fallback=False)
        tok = HfTokenizer(bpe)
        split = [pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated")] if pre in DIGIT_SPLIT else []
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [*split, pre_tokenizers.Split(Regex(GPT2_PATTERN), behavior="isolated"),
             pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        tok.decoder = decoders.ByteLevel()
        from tokenizers import AddedToken

        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t, kind in zip(tokens, types, strict=True) if kind == CONTROL])
        self._tok: Any = tok
        self.vocab_size = len(tokens)
        self.eos = eos
        self.pre = pre

    @classmethod
    def from_gguf(cls, model: GgufModel) -> Tokenizer:
        """The tokenizer of a GGUF file (``tokenizer.ggml.*``); only ``gpt2`` (byte-level BPE) models."""
        kind = model.field("tokenizer.ggml.model")
        if kind != "gpt2":
            raise ModelFileError(f"tokenizer model {kind!r} is not byte-level BPE ('gpt2')",
                                 call="visa.models.Tokenizer.from_gguf", level="host", mapping="-", axis="-",
                                 fix="use a GGUF file with a gpt2 tokenizer")
        eos = int(model.field("tokenizer.ggml.eos_token_id")) if model.has("tokenizer.ggml.eos_token_id") else None
        return cls(model.field("tokenizer.ggml.tokens"), model.field("tokenizer.ggml.merges"),
                   model.field("tokenizer.ggml.token_type"), str(model.field("tokenizer.ggml.pre")), eos)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; no BOS or other token added."""
        expect_str(text, "text", call="Tokenizer.encode")
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (special tokens spelled out, so that ``decode(encode(s)) == s``); each id one of the
        vocabulary's (``0 … vocab_size − 1``: ``tokenizers`` dropped a larger one silently and overflowed on a
        negative one)."""
        return str(self._tok.decode(list(self.check_ids(ids, "Tokenizer.decode")), skip_special_tokens=False))

    def token(self, i: int) -> str:
        """The text of one token id (as :meth:`decode` gives it)."""
        expect_int(i, "i", call="Tokenizer.token", lo=0, hi=self.vocab_size - 1)
        return self.decode([i])

    def check_ids(self, ids: object, call: str) -> tuple[int, ...]:
        """``ids`` as a tuple of token ids of this vocabulary, or the refusal naming ``call`` (:func:`token_ids`)."""
        return token_ids(ids, self.vocab_size, call)


def token_ids(ids: object, vocab: int, call: str) -> tuple[int, ...]:
    """``ids`` as a tuple of ints, each a token id of a vocabulary of ``vocab`` tokens, or the refusal naming
    ``call``, the argument (``ids``, ``ids[k]``) and the range (:func:`visa.validate.expect_ints`, ``expect_int``:
    a ``WrongTypeError`` or a ``RangeError``)."""
    out = expect_ints(ids, "ids", call=call, expected="a list of token ids (ints)")
    top = vocab - 1
    for k, i in enumerate(out):
        if not 0 <= i <= top:
            expect_int(i, f"ids[{k}]", call=call, lo=0, hi=top, fix=f"keep every token id in 0..{top}")
    return out
