"""The spelling pyright and Pylance accept, ``M[Literal["A % 8"]]``, is the same type as ``m["A % 8"]`` under the
mypy plugin (issue 29, item 4; docs/ide.md).

``pyright_kernel.py`` annotates its kernel with ``M[Literal[...]]`` and uses ``m["..."]`` as values: pyright
reports nothing, the plugin reports exactly the layout error ``m["..."]`` annotations give (a transposed
layout passed to ``launch``) and accepts an equivalent spelling, and the file runs.  pyright still flags the
``m["A"]`` annotations of the examples, which is why ``M`` exists.
"""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

HERE = Path(__file__).resolve().parent
KERNEL = HERE / "pyright_kernel.py"
ROOT = HERE.parent.parent


def _pyright(*files: Path) -> str:
    exe = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("pyright is not installed (pip install -e '.[dev]' installs it)")
    got = subprocess.run([exe, "--pythonpath", sys.executable, *map(str, files)], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    return got.stdout


def test_pyright_accepts_the_literal_spelling_and_flags_the_plain_one() -> None:
    assert "0 errors" in _pyright(KERNEL)
    plain = _pyright(ROOT / "examples" / "constant_add.py")
    assert "error" in plain and "0 errors" not in plain  # m["A"] in an annotation: pyright cannot read it


def test_the_plugin_reads_the_literal_spelling_as_the_same_type(tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\nplugins = visa.mypy\n")
    out, err, status = mypy_api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"),
                                     "--no-error-summary", "--show-error-codes", str(KERNEL)])
    assert not err.strip(), err
    lines = [ln for ln in out.splitlines() if ": error:" in ln]
    wrong = next(k for k, ln in enumerate(KERNEL.read_text().splitlines(), 1) if "a transposed layout" in ln)
    assert len(lines) == 1 and f"pyright_kernel.py:{wrong}: error:" in lines[0], out
    assert "m[Literal['A % 8, A / 8 (A=2048)']]" in lines[0] and "m[Literal['A (A=2048)']]" in lines[0]


def test_the_literal_spelling_runs() -> None:
    runpy.run_path(str(KERNEL), run_name="__pyright_kernel__")["main"]()
