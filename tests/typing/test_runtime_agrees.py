"""The plugin reports the runtime's message: the same kernels, run, raise exactly what mypy printed.

Each case runs a refusal of the negative corpus on the simulator and checks that ``str(err)`` is the message
of the corresponding line of ``corpus/*.out`` (the plugin and the runtime call the same plan functions).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from visa import AxisSet, Context, VisaError, i8, i32
from visa.testing import place_dm

CORPUS = Path(__file__).resolve().parent / "corpus"


def _expected(name: str, line: int) -> str:
    for text in (CORPUS / f"{name}.out").read_text().splitlines():
        head = f"{name}.py:{line}: error: "
        if text.startswith(head):
            return text[len(head):].rsplit("  [", 1)[0]
    raise AssertionError(f"no error at {name}.py:{line}")


def _insufficient() -> None:  # bad_insufficient_input.py:9 (manual L1639–1659)
    ctx = Context.acquire()
    m = AxisSet(N=2048).m
    d = place_dm(ctx, np.zeros(2048, np.int8), i8, m["1"], m["1 # 2"], m["1 # 256"], m["N % 512"], 0, axes="N")
    ctx.main.begin(d.view()).fetch(i8, m["N / 512"], m["N % 512"])


def _incompatible() -> None:  # bad_incompatible_shapes.py:13 (manual L1660–1683)
    ctx = Context.acquire()
    m = AxisSet(A=15).m
    d = place_dm(ctx, np.zeros(15, np.int8), i8, m["1"], m["1 # 2"], m["1 # 256"], m["A % 5, A / 5"], 0, axes="A")
    ctx.main.begin(d.view()).fetch(i8, m["1"], m["[A % 3, A / 3] # 16"])


def _alignment() -> None:  # bad_packet_alignment.py:10 (manual L1711–1716)
    ctx = Context.acquire()
    m = AxisSet(A=2048).m
    d = place_dm(ctx, np.zeros(2048, np.int8), i8, m["1"], m["1 # 2"], m["A / 8 # 256"], m["A % 8"], 0, axes="A")
    ctx.main.begin(d.view()).fetch(i8, m["A % 2"], m["A / 2 % 4"])


def _commit_flit() -> None:  # bad_stream_rules.py:19 (manual L2192, L2328)
    ctx = Context.acquire()
    m = AxisSet(A=256, M=8, N=32).m
    d = place_dm(ctx, np.zeros((256, 8, 32), np.int32), i32, m["1"], m["1 # 2"], m["A"], m["M, N % 4"], 0,
                 axes="A M N")
    ctx.main.begin(d.view()).fetch(i32, m["M"], m["N % 4"]).commit(m["M, N % 4"], 0)


CASES: list[tuple[str, int, Callable[[], None]]] = [
    ("bad_insufficient_input", 9, _insufficient),
    ("bad_incompatible_shapes", 13, _incompatible),
    ("bad_packet_alignment", 10, _alignment),
    ("bad_stream_rules", 19, _commit_flit),
]


@pytest.mark.parametrize(("name", "line", "run"), CASES, ids=[f"{n}:{k}" for n, k, _ in CASES])
def test_the_runtime_raises_what_mypy_reports(name: str, line: int, run: Callable[[], None]) -> None:
    with pytest.raises(VisaError) as err:
        run()
    assert str(err.value) == _expected(name, line)
