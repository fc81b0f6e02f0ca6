"""The fast-path registry (ARCHITECTURE principle 7, API.md §8 "Reference mode")."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from visa import fastpaths
from visa.errors import VisaError


@pytest.mark.skipif(os.environ.get(fastpaths.ENV, "").strip() not in ("", "on", "1", "all"),
                    reason="the environment turns paths off (VISA_FASTPATHS): this test needs them on")
def test_switches_nest_and_restore() -> None:
    a = fastpaths.register("test.a", "a path for this test")
    b = fastpaths.register("test.b", "another")
    assert a.on and b.on
    with fastpaths.disabled("test.a"):
        assert not a.on and b.on
        with fastpaths.disabled():
            assert not a.on and not b.on
        assert not a.on and b.on
    with fastpaths.only("test.b"):
        assert not a.on and b.on
    assert a.on and b.on
    assert {"test.a", "test.b"} <= set(fastpaths.names())
    assert fastpaths.register("test.a", "again, same owner") is a


def test_unknown_names_are_refused() -> None:
    with pytest.raises(VisaError, match="no registered fast path"):
        fastpaths.disabled("test.no-such-path")


def _run(env: str, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"VISA_FASTPATHS": env, "PATH": ""}, check=False)


def test_environment_turns_paths_off() -> None:
    code = ("import visa.fastpaths as f; p = f.register('test.env', 'x'); q = f.register('test.env2', 'y');"
            "print(p.on, q.on)")
    assert _run("off", code).stdout.split() == ["False", "False"]
    assert _run("-test.env", code).stdout.split() == ["False", "True"]
    assert _run("on", code).stdout.split() == ["True", "True"]


@pytest.mark.parametrize(("env", "says"), [("-no.such.path", "no registered fast path"),
                                           ("fetch", "neither 'off', 'on' nor '-name'")])
def test_environment_typo_is_refused_at_acquire(env: str, says: str) -> None:
    out = _run(env, "import visa; visa.Context.acquire()")
    assert out.returncode != 0 and says in out.stderr


def test_every_engine_and_memory_path_is_registered_and_listed(capsys: pytest.CaptureFixture[str]) -> None:
    """``import visa`` registers every owner's paths (each named after its owner), and ``visa run --fastpaths``
    lists them with their state (API.md §8)."""
    import visa
    from visa.cli import main

    names = [n for n in fastpaths.names() if not n.startswith("test.")]
    owners = {n.split(".")[0] for n in names}
    assert {"fetch", "dma", "memory", "collect", "commit", "contraction", "vector", "transpose", "host"} <= owners
    for n in names:  # a path lives beside its owner: the mapping, memory, engines or tensors layer (or the scalars')
        module = fastpaths.get(n).module
        assert module.startswith(("visa.mapping.", "visa.memory.", "visa.engines.", "visa.tensors.")) \
            or module == "visa.fast_dtypes", (n, module)
    with fastpaths.disabled("dma.words"):
        assert main(["run", "--fastpaths"]) == 0
    out = capsys.readouterr().out
    assert all(n in out for n in names) and any(line.startswith("dma.words") and " off " in line
                                                 for line in out.splitlines())
    del visa


def test_the_fastpaths_page_lists_every_path() -> None:
    """docs/fastpaths.md has a row for every registered path (name and owner module)."""
    import pathlib

    import visa

    page = (pathlib.Path(__file__).parent.parent / "docs" / "fastpaths.md").read_text()
    for name in (n for n in fastpaths.names() if not n.startswith("test.")):
        owner = fastpaths.get(name).module.replace(".", "/")
        assert f"| `{name}` |" in page, name
        assert owner.split("/")[-1] in page or owner in page, (name, owner)
    del visa
