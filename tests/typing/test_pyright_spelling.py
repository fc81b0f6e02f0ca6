"""The spelling pyright and Pylance accept, ``M[Literal["A % 8"]]``, is the same type as ``m["A % 8"]`` under the
mypy plugin (issue 29, item 4; docs/ide.md).

``examples/constant_add.py`` with its annotations respelt ``M[Literal[...]]`` (values stay ``m["..."]``) and two
host functions added: pyright reports nothing; the plugin reports exactly the layout error ``m["..."]``
annotations give (a transposed layout passed to ``launch``) and accepts an equivalent spelling; the file runs.
pyright still flags the ``m["A"]`` annotations of the example itself, which is why ``M`` exists.
"""

from __future__ import annotations

import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "constant_add.py"

HOSTS = '''

def host(ctx: Context, x: HbmTensor[i32, M[Literal["1"]], M[Literal["A / 8, A % 8"]]]) -> None:
    launch(kernel, ctx, x)  # the same layout as m["A"], spelt otherwise: fine


def wrong(ctx: Context, x: HbmTensor[i32, M[Literal["1"]], M[Literal["A % 8, A / 8"]]]) -> None:
    launch(kernel, ctx, x)  # a transposed layout: the plugin refuses it
'''


def respelt(tmp_path: Path) -> Path:
    """The example with ``m["X"]`` in its signatures written ``M[Literal["X"]]``, and :data:`HOSTS` added."""
    lines = []
    for line in EXAMPLE.read_text().splitlines():
        if line.startswith("def "):
            line = re.sub(r'\bm\["([^"]*)"\]', r'M[Literal["\1"]]', line)
        elif line.startswith("from visa import "):
            line = "from typing import Literal\n\n" + line.replace("from visa import ", "from visa import M, ")
        lines.append(line)
    path = tmp_path / "respelt_kernel.py"
    path.write_text("\n".join(lines) + "\n" + HOSTS)
    return path


def _pyright(*files: Path) -> str:
    exe = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("pyright is not installed (pip install -e '.[dev]' installs it)")
    got = subprocess.run([exe, "--pythonpath", sys.executable, *map(str, files)], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    return got.stdout


def test_pyright_accepts_the_literal_spelling_and_flags_the_plain_one(tmp_path: Path) -> None:
    assert "0 errors" in _pyright(respelt(tmp_path))
    plain = _pyright(EXAMPLE)
    assert "error" in plain and "0 errors" not in plain  # m["A"] in an annotation: pyright cannot read it


def test_the_plugin_reads_the_literal_spelling_as_the_same_type(tmp_path: Path) -> None:
    kernel = respelt(tmp_path)
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\nplugins = visa.mypy\n")
    out, err, status = mypy_api.run(["--config-file", str(config), "--cache-dir", str(tmp_path / "cache"),
                                     "--no-error-summary", "--show-error-codes", str(kernel)])
    assert not err.strip(), err
    # the kernel's errors only: run from a source tree that is not the installed package (the unpacked sdist beside
    # the wheel, `make lowest`), mypy checks visa's own modules as sources too, and at numpy's floor stubs reports
    # their annotations (`mypy --strict visa` is `make typecheck`'s, at the newest numpy)
    lines = [ln for ln in out.splitlines() if ": error:" in ln and ln.startswith(str(kernel))]
    wrong = next(k for k, ln in enumerate(kernel.read_text().splitlines(), 1) if "a transposed layout" in ln)
    assert len(lines) == 1 and f"respelt_kernel.py:{wrong}: error:" in lines[0], out
    assert "m[Literal['A % 8, A / 8 (A=2048)']]" in lines[0] and "m[Literal['A (A=2048)']]" in lines[0]


def test_the_literal_spelling_runs(tmp_path: Path) -> None:
    runpy.run_path(str(respelt(tmp_path)), run_name="__respelt__")["main"]()
