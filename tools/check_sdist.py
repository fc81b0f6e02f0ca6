"""``make dist``'s check: the sdist unpacked into a temporary directory, installed with its extras into a fresh
venv from the wheel built beside it, runs its own examples and tests there (the sdist holds the whole checkout:
``tests/``, ``examples/``, ``docs/``, ``stubs/``).  ``CHECK_SDIST_PYTEST`` narrows pytest (default: the suite)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path


def main(dist: str) -> int:
    out = Path(dist).resolve()
    sdist = next(out.glob("*.tar.gz"))
    wheel = next(out.glob("*.whl"))
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"
    with tempfile.TemporaryDirectory(prefix="visa-sdist-") as tmp:
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        tree = next(Path(tmp).iterdir())
        venv = Path(tmp) / "venv"
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
        py = str(venv / "bin" / "python")
        subprocess.run([uv, "pip", "install", "--quiet", "--python", py, f"{wheel}[dev]"], check=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run([str(venv / "bin" / "visa"), "examples", str(Path(tmp) / "copied")], check=True, env=env)
        examples = sorted(str(p) for p in (tree / "examples").glob("*.py"))
        subprocess.run([str(venv / "bin" / "visa"), "run", "-q", *examples], check=True, cwd=tree, env=env)
        pytest = os.environ.get("CHECK_SDIST_PYTEST", "").split()
        subprocess.run([str(venv / "bin" / "pytest"), "-p", "no:cacheprovider", *pytest], check=True, cwd=tree,
                       env=env)
    print(f"{sdist.name}: its examples and tests pass from the unpacked sdist")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "dist"))
