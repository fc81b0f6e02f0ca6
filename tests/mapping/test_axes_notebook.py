"""``axes()`` re-declared when a notebook cell is re-run (issue 29, item 6)."""

from __future__ import annotations

import builtins

import pytest

from visa.errors import AxisDeclarationError
from visa.mapping import Mapping

CELL = "from visa import axes, m\naxes(A={a}, B=4)\nmapping = m['A, B']\n"


def _run(namespace: dict[str, object], a: int) -> None:
    exec(CELL.format(a=a), namespace)  # noqa: S102 - a notebook cell


def test_a_notebook_may_redeclare_an_axis_and_old_mappings_keep_their_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(builtins, "get_ipython", lambda: None, raising=False)
    cell: dict[str, object] = {"__name__": "__main__"}
    _run(cell, 8)
    before = cell["mapping"]
    assert isinstance(before, Mapping)
    _run(cell, 8)  # the same cell again
    _run(cell, 16)  # the cell edited: A is now 16
    after = cell["mapping"]
    assert isinstance(after, Mapping) and after.size == 64 and before.size == 32


def test_a_module_still_refuses_a_conflicting_redeclaration() -> None:
    module: dict[str, object] = {"__name__": "kernels"}
    _run(module, 8)
    with pytest.raises(AxisDeclarationError, match="already declared with size 8, not 16"):
        _run(module, 16)
