"""The worked examples of ``docs/vector-engine.md`` run as they stand (issue 29, item 1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "vector-engine.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)


def test_the_page_has_its_four_examples() -> None:
    assert len(BLOCKS) == 4


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_each_worked_example_runs_and_checks_its_result(k: int, tmp_path: Path) -> None:
    path = tmp_path / f"vector_example_{k}.py"  # a file: mappings resolve their axes by the module's source
    path.write_text(BLOCKS[k])
    import runpy

    runpy.run_path(str(path), run_name="__docs__")
