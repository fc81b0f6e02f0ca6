"""docs/coverage.md — every construct of the manual with its status and tests (issue 27) — is current: it is what
``tools/coverage.py`` generates, every test it names exists, and no construct is left untested."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_coverage_page_is_current_and_every_construct_has_its_status() -> None:
    got = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "coverage.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert got.returncode == 0, got.stdout + got.stderr
