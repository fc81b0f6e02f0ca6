"""Imports point down only (ARCHITECTURE "Layers"): every import in the package — at module level, under
``TYPE_CHECKING`` or inside a function — goes to a module of the same layer or a lower one.

The layers, lowest first: hardware tables and errors; scalars; the mapping algebra; memories; engines; tensor
handles and their moves; stream stages; the test helpers and the host side (``Context``, the schedule);
kernels built from them (and the tuner); models built from the kernels; the mypy plugin; the command line and
the error catalogue (which imports every module); the package face (``visa/__init__.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "visa"

#: Module prefix → layer rank (the longest matching prefix wins).
LAYERS = {
    "visa.hw": 0, "visa.errors": 0, "visa.diagnostics": 0, "visa.diagnostic_codes": 0, "visa.manual": 0,
    "visa.fastpaths": 0, "visa.html": 0,
    "visa.dtypes": 1, "visa.fast_dtypes": 1,
    "visa.mapping": 2, "visa.validate": 2,
    "visa.memory": 3,
    "visa.engines": 4,
    "visa.tensors": 5,
    "visa.stream": 6,
    "visa.testing": 7, "visa.context": 7, "visa.schedule": 7,
    "visa.kernels": 8, "visa.tune": 8,
    "visa.models": 9,
    "visa.mypy": 10,
    "visa.cli": 11, "visa.catalogue": 11, "visa.snippets": 11,
    "visa": 12,
}


def _rank(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` for every import of a visa module in the file (``from visa import dtypes`` counts
    as ``visa.dtypes``)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "visa"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "visa":
                out += [(node.lineno, f"visa.{a.name}") for a in node.names]
            elif node.module.startswith("visa."):
                out.append((node.lineno, node.module))
    return out


FILES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_imports_point_down(path: Path) -> None:
    here = _module_name(path)
    rank = _rank(here)
    upward = [f"{here}:{line} imports {mod} (layer {_rank(mod)} > {rank})"
              for line, mod in _imports(path) if _rank(mod) > rank]
    assert not upward, "\n".join(upward)


def test_every_module_has_a_layer() -> None:
    """A new top-level module or package is given its layer here, not left to the package face's rank."""
    tops = {".".join(_module_name(p).split(".")[:2]) for p in FILES}
    assert tops <= set(LAYERS), f"give these a layer in LAYERS: {sorted(tops - set(LAYERS))}"


#: The dense image's owed-writes methods (:mod:`visa.memory.pending`): only the memory layer names them; the
#: layers above enter the protocol through :mod:`visa.memory.owed` (issue 23, "Reference mode").
OWED = {"_raw", "_flat_raw", "_cover", "_defer_copy", "_write_copies", "_read_units", "_sources", "_pending"}


def _attributes(path: Path) -> list[tuple[int, str]]:
    return [(node.lineno, node.attr) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute)]


@pytest.mark.parametrize("path", [p for p in FILES if not _module_name(p).startswith("visa.memory")],
                         ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_owed_writes_entered_from_memory_only(path: Path) -> None:
    here = _module_name(path)
    found = [f"{here}:{line} names {attr}" for line, attr in _attributes(path) if attr in OWED]
    assert not found, "\n".join(found) + "\n(use visa.memory.owed: read_units, holders, store_with_copies)"


#: The memory modules that read and write an image's bytes: the stream layer hands typed requests to the engines
#: instead (:mod:`visa.engines.access`, issue 23, "Reference mode").
BYTE_MODULES = ("visa.memory.images", "visa.memory.units", "visa.memory.owed", "visa.memory.transfer",
                "visa.memory.pending")


@pytest.mark.parametrize("path", [p for p in FILES if _module_name(p).startswith("visa.stream")],
                         ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_the_stream_layer_reads_no_memory_bytes(path: Path) -> None:
    found = [f"{_module_name(path)}:{line} imports {mod}" for line, mod in _imports(path)
             if any(mod == b or mod.startswith(b + ".") for b in BYTE_MODULES)]
    assert not found, "\n".join(found) + "\n(ask the engines: visa.engines.access.RowRead / ElementWrite)"
