"""The Vector Engine's kernels run end to end in the suite (manual L157–299, L4590–4623): each example's
``main()`` builds its inputs, launches the kernel on the simulator and checks the result against numpy."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from visa.cli import run_file

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.mark.parametrize("name", ["constant_add.py", "elementwise_mul.py", "relu.py", "inter_slice_reduce.py"])
def test_example_main_passes(name: str) -> None:
    namespace = runpy.run_path(str(EXAMPLES / name), run_name="__vector_test__")
    namespace["main"]()


def test_hello_kernels_under_visa_run(capsys: pytest.CaptureFixture[str]) -> None:
    """``visa run`` on the two elementwise "Hello, TCP!" kernels (L157–299) prints PASS and the cycle table."""
    assert run_file(EXAMPLES / "constant_add.py")
    assert run_file(EXAMPLES / "elementwise_mul.py")
    out = capsys.readouterr().out
    assert out.count("PASS") == 2 and "vector" in out and "sub" in out
