"""Import an example (``examples/<name>.py``) as a module, for the tests that run its kernels and read its
constants; registered in ``sys.modules`` so that its dataclasses and annotations resolve."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` as the module ``visa_example_<name>`` (executed afresh on each call)."""
    spec = importlib.util.spec_from_file_location(f"visa_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
