"""The plugin reports the runtime's message: the same kernels, run, raise exactly what mypy printed.

Each case runs a refusal of the negative corpus on the simulator and checks that ``str(err)`` is the message
of the corresponding line of ``corpus/*.out`` (the plugin and the runtime call the same plan functions).

The corpus files of :data:`RUNNABLE` are themselves runnable: every function taking only ``ctx: Context`` is
called with a fresh context, and the errors mypy reports inside the functions the run went through (the
kernel and the helpers on the traceback) must be exactly the runtime's refusal — or none if it ran.  Every
error of those files must be accounted for by some run.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from visa import AxisSet, Context, HostTensor, VisaError, i8, i32
from visa.testing import place_dm

CORPUS = Path(__file__).resolve().parent / "corpus"


def _expected(name: str, line: int) -> str:
    for text in (CORPUS / f"{name}.out").read_text().splitlines():
        head = f"{name}.py:{line}: error: "
        if text.startswith(head):
            message, code = text[len(head):].rsplit("  [", 1)
            assert code.startswith("visa-V"), text  # the plugin reports the diagnostic's own code
            return f"{message} [{code[len('visa-'):-1]}]"  # str(err) ends with the code
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


def _chip_count() -> None:  # bad_placement.py:19 (manual L1079): the HbmTensor a DMA makes, in a 1-chip kernel
    ctx = Context.acquire()
    m = AxisSet(A=2048).m
    x = HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
    ctx.num_chips = 1
    x.to_hbm(m["1 # 2"], m["A"], ctx.tdma, 0)


CASES: list[tuple[str, int, Callable[[], None]]] = [
    ("bad_insufficient_input", 9, _insufficient),
    ("bad_incompatible_shapes", 13, _incompatible),
    ("bad_packet_alignment", 10, _alignment),
    ("bad_stream_rules", 19, _commit_flit),
    ("bad_placement", 19, _chip_count),
]


@pytest.mark.parametrize(("name", "line", "run"), CASES, ids=[f"{n}:{k}" for n, k, _ in CASES])
def test_the_runtime_raises_what_mypy_reports(name: str, line: int, run: Callable[[], None]) -> None:
    with pytest.raises(VisaError) as err:
        run()
    assert str(err.value) == _expected(name, line)


# -- runnable corpus files -------------------------------------------------------------------------------------
#: Negative kernels written as ``def kernel(ctx: Context)`` (constructors, no parameters to fabricate).
RUNNABLE = ["bad_addresses", "bad_axis_set", "bad_sub_context", "bad_trf_param", "bad_vector_pass",
            "bad_vector_stages", "bad_views", "bad_vector_data"]

_ERROR = re.compile(r"^(?P<file>[^:]+\.py):(?P<line>\d+): error: (?P<msg>.*?)(?:  \[(?P<code>[A-Za-z0-9-]+)\])?$")


def _errors(name: str) -> list[tuple[int, str]]:
    """(line, message) of every ``[visa]`` error of ``corpus/<name>.out`` (continuation lines joined)."""
    out: list[tuple[int, str]] = []
    lines = (CORPUS / f"{name}.out").read_text().splitlines()
    k = 0
    while k < len(lines):
        text = lines[k]
        while not text.endswith("]") and k + 1 < len(lines):
            k += 1
            text += "\n" + lines[k]
        found = _ERROR.match(text.replace("\n", "\x00"))
        assert found is not None, text
        code = found.group("code") or ""
        if code.startswith("visa"):  # str(err) is the message and its code: [V3012] for [visa-V3012]
            suffix = f" [{code[len('visa-'):]}]" if code.startswith("visa-") else ""
            out.append((int(found.group("line")), found.group("msg").replace("\x00", "\n") + suffix))
        k += 1
    return out


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"visa_corpus_{name}", CORPUS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _span(fn: Callable[..., object]) -> range:
    lines, start = inspect.getsourcelines(fn)
    return range(start, start + len(lines))


def _kernels(module: ModuleType) -> list[Callable[[Context], None]]:
    return [fn for fn in vars(module).values() if inspect.isfunction(fn) and fn.__module__ == module.__name__
            and list(inspect.signature(fn).parameters) == ["ctx"]]


@pytest.mark.parametrize("name", RUNNABLE)
def test_runnable_kernels_raise_what_mypy_reports(name: str) -> None:
    module = _module(name)
    errors = _errors(name)
    assert errors, f"{name}.out reports no refusal"
    path = str(CORPUS / f"{name}.py")
    functions = {fn.__code__: fn for fn in vars(module).values()
                 if inspect.isfunction(fn) and fn.__module__ == module.__name__}
    accounted: set[int] = set()
    kernels = _kernels(module)
    assert kernels, name
    for kernel in kernels:
        spans = [_span(kernel)]
        try:
            kernel(Context.acquire())
            got: list[str] = []
        except VisaError as err:
            got = [str(err)]
            tb = err.__traceback__
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == path and tb.tb_frame.f_code in functions:
                    spans.append(_span(functions[tb.tb_frame.f_code]))
                tb = tb.tb_next
        mine = [(line, msg) for line, msg in errors if any(line in sp for sp in spans)]
        assert [msg for _, msg in mine] == got, kernel.__name__
        accounted |= {line for line, _ in mine}
    assert {line for line, _ in errors} <= accounted, "errors outside the runnable kernels"


#: Positive kernels written as ``def kernel(ctx: Context)``: the plugin reports nothing, and they run.
OK_RUNNABLE = ["ok_reassigned", "ok_vector_types"]


@pytest.mark.parametrize("name", OK_RUNNABLE)
def test_runnable_positive_kernels_run(name: str) -> None:
    kernels = _kernels(_module(name))
    assert kernels, name
    for kernel in kernels:
        kernel(Context.acquire())
