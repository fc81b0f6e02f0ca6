"""mypy's cache never turns a kernel's ``m["A"]`` annotation into ``Name "A" is not defined`` (issue 29, item 3).

mypy re-parses a module whose cache entry is valid when one of its dependencies changed, without the hook
that rewrites ``m["A"]`` (:func:`visa.mypy.mappings.fix_annotations`).  That happened when a helper module the
kernel imports was edited, and when visa was installed at a second location (a checkout and a wheel) sharing
one ``.mypy_cache``.  mypy runs three times here over one cache: cold, after a helper's interface changed, and
with visa imported from a copy of the package at another path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from visa.mypy.mappings import needs_parse_fix

pytest.importorskip("mypy")

PACKAGE = Path(__file__).resolve().parents[2] / "visa"

KERNEL = '''
import helper
from visa import Context, HbmTensor, axes, device, i32, m

axes(A=2048)


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    dm = x.to_dm(m["1 # 2"], m["A / 8 # 256"], m["A % 8"], ctx.tdma, 0)
    helper.helper()
    return dm.to_hbm(m["A"], ctx.tdma, 1 << 20)
'''


def _mypy(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--cache-dir", ".cache",
                           "kernel.py"], cwd=project, env=env, capture_output=True, text=True, timeout=600)


def test_a_shared_cache_survives_an_edited_helper_and_a_second_install(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "mypy.ini").write_text("[mypy]\nstrict = True\nplugins = visa.mypy\n")
    (project / "kernel.py").write_text(KERNEL)
    (project / "helper.py").write_text("def helper() -> int:\n    return 1\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}

    first = _mypy(project, env)
    assert first.returncode == 0, first.stdout + first.stderr

    (project / "helper.py").write_text("def helper() -> str:\n    return 'one'\n")  # its interface changed
    second = _mypy(project, env)
    assert second.returncode == 0, second.stdout + second.stderr

    other = tmp_path / "elsewhere"
    shutil.copytree(PACKAGE, other / "visa", ignore=shutil.ignore_patterns("__pycache__"))
    moved = {**env, "PYTHONPATH": str(other), "MYPYPATH": str(other)}
    where = subprocess.run([sys.executable, "-c", "import visa; print(visa.__file__)"], env=moved, cwd=project,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(other))  # visa (and its plugin) now come from the second location
    third = _mypy(project, moved)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "is not defined" not in third.stdout


def test_which_modules_need_the_parse_fix(tmp_path: Path) -> None:
    kernel = tmp_path / "kernel.py"
    kernel.write_text(KERNEL)
    plain = tmp_path / "plain.py"
    plain.write_text('from visa import m\n\nX = m["A"]\n\n\ndef f(x: "int") -> int:\n    return x\n')
    spelled = tmp_path / "spelled.py"
    spelled.write_text('import visa\n\n\ndef f(x: visa.m["A % 8"]) -> visa.m["B.C"]:\n    return x\n')
    assert needs_parse_fix(str(kernel))
    assert not needs_parse_fix(str(plain))  # a value, not an annotation; and "A % 8" parses as text anyway
    assert needs_parse_fix(str(spelled))  # a dotted name in a return annotation
    assert not needs_parse_fix(str(tmp_path / "missing.py"))
