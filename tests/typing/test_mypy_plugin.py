"""The mypy plugin's corpus (issue 8): mypy --strict with ``visa.mypy`` over kernels whose output is known.

* ``corpus/ok_*.py`` and every ``examples/*.py`` type-check with zero errors under ``--strict`` and the plugin;
* ``corpus/bad_*.py`` give exactly the lines of ``corpus/bad_*.out`` (``file:line: error: message  [code]``);
* ``corpus/noplugin_*.py`` are checked *without* the plugin: the plain generic stage types still reject a
  method on the wrong stage (``noplugin_*.out``).

mypy runs once per mode over all the files (its API, in this process); set ``VISA_TYPING_REGEN=1`` to rewrite
the ``.out`` files from the current output (then read the diff: every line is a claim about the runtime).
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
ROOT = HERE.parent.parent
EXAMPLES = ROOT / "examples"
REGEN = os.environ.get("VISA_TYPING_REGEN") == "1"

_RECORD = re.compile(r"^(?P<path>[^:\s]+\.py):(?P<line>\d+): (?P<kind>error|note|warning): ")


def run_mypy(files: list[Path], plugin: bool, cache: Path) -> dict[str, list[str]]:
    """mypy --strict over ``files``; its output lines grouped by file name (continuation lines kept)."""
    config = cache / ("with.ini" if plugin else "without.ini")
    config.write_text("[mypy]\nstrict = True\npython_version = 3.11\n"
                      f"mypy_path = {ROOT / 'stubs'}{os.pathsep}{ROOT}\n"
                      + ("plugins = visa.mypy\n" if plugin else ""))
    args = ["--config-file", str(config), "--cache-dir", str(cache / ("c1" if plugin else "c0")),
            "--no-error-summary", "--show-error-codes", "--no-color-output", "--no-pretty",
            *(str(f) for f in files)]
    out, err, _ = mypy_api.run(args)
    assert not err.strip(), err
    grouped: dict[str, list[str]] = defaultdict(list)
    current = ""
    for line in out.splitlines():
        found = _RECORD.match(line)
        if found:
            current = Path(found.group("path")).name
            line = current + line[len(found.group("path")):]
        grouped[current].append(line)
    return grouped


@pytest.fixture(scope="module")
def with_plugin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    files = sorted(CORPUS.glob("ok_*.py")) + sorted(CORPUS.glob("bad_*.py")) + sorted(EXAMPLES.glob("*.py"))
    return run_mypy(files, True, tmp_path_factory.mktemp("mypy"))


@pytest.fixture(scope="module")
def without_plugin(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    return run_mypy(sorted(CORPUS.glob("noplugin_*.py")), False, tmp_path_factory.mktemp("mypy"))


def _names(pattern: str, where: Path = CORPUS) -> list[str]:
    return [p.name for p in sorted(where.glob(pattern))]


@pytest.mark.parametrize("name", _names("ok_*.py") + _names("*.py", EXAMPLES))
def test_positive_kernels_have_no_errors(with_plugin: dict[str, list[str]], name: str) -> None:
    assert with_plugin.get(name, []) == []


def _compare(output: dict[str, list[str]], name: str) -> None:
    expected_file = CORPUS / name.replace(".py", ".out")
    got = output.get(name, [])
    if REGEN:
        expected_file.write_text("".join(line + "\n" for line in got))
    expected = expected_file.read_text().splitlines()
    assert got == expected


@pytest.mark.parametrize("name", _names("bad_*.py"))
def test_negative_kernels_report_the_runtime_refusal(with_plugin: dict[str, list[str]], name: str) -> None:
    _compare(with_plugin, name)


@pytest.mark.parametrize("name", _names("noplugin_*.py"))
def test_typestate_without_the_plugin(without_plugin: dict[str, list[str]], name: str) -> None:
    _compare(without_plugin, name)


def test_every_negative_kernel_expects_an_error() -> None:
    for out in CORPUS.glob("bad_*.out"):
        assert ": error: " in out.read_text(), out.name


def _readme_blocks(lang: str) -> list[list[str]]:
    lines = (ROOT / "README.md").read_text().splitlines()
    starts = [k for k, line in enumerate(lines) if line == f"```{lang}"]
    return [lines[k + 1:lines.index("```", k + 1)] for k in starts]


def test_readme_mypy_example_is_the_corpus_kernel() -> None:
    """The README's layout-error kernel and the mypy output it shows are ``corpus/bad_readme.py`` and its ``.out``
    (the corpus file has a two-line docstring more, so its line numbers are two more)."""
    source = (CORPUS / "bad_readme.py").read_text().splitlines()[2:]
    assert source in _readme_blocks("python")
    console = _readme_blocks("console")[0]
    assert console[0] == "$ mypy kernel.py" and console[-1].startswith("Found ")
    expected = [re.sub(r"^bad_readme\.py:(\d+):", lambda g: f"kernel.py:{int(g.group(1)) - 2}:", line)
                for line in (CORPUS / "bad_readme.out").read_text().splitlines()]
    assert console[1:-1] == expected


def test_a_diagnostic_code_silences_that_refusal_only(tmp_path: Path) -> None:
    """Each refusal is reported under its own code (``[visa-V…]``, docs/errors.md), so ``# type: ignore[visa-V…]``
    silences that diagnostic and nothing else (mypy ≥ 1.16)."""
    source = (CORPUS / "bad_readme.py").read_text().splitlines()
    code = re.search(r"\[(visa-V\d+)\]", (CORPUS / "bad_readme.out").read_text().splitlines()[0])
    assert code is not None
    line = int((CORPUS / "bad_readme.out").read_text().split(":", 2)[1]) - 1
    for ignore, silenced in ((code.group(1), True), ("visa-V9999", False), ("visa", True)):
        lines = list(source)
        lines[line] = lines[line].split("  #")[0] + f"  # type: ignore[{ignore}]"  # before its own comment
        kernel = tmp_path / "kernel.py"
        kernel.write_text("\n".join(lines) + "\n")
        (tmp_path / ignore).mkdir()
        out = run_mypy([kernel], True, tmp_path / ignore)["kernel.py"]
        refusals = [x for x in out if f"kernel.py:{line + 1}: error: fetch sequencer" in x]
        assert (refusals == []) is silenced, (ignore, out)
