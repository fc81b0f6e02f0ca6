"""The command line (design API.md §6): ``visa run FILE``, ``visa check FILE``, ``visa trace FILE -o trace.json``."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from visa.cli import PLUGIN, main, mypy_command

ROOT = Path(__file__).resolve().parent.parent

# The kernel of design API.md §2, host code at module scope and no main(): the file itself is the entry point.
SECTION_2 = '''
import numpy as np
from visa import axes, m, i32, Context, HostTensor, HbmTensor, device, launch
from visa.engines.vector import BranchMode, FxpBinaryOp

axes(A=2048)
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["A / 8 # 256"]

@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    dm = x.to_dm(Cluster, Slice, m["A % 8"], ctx.tdma, 0)
    out = (ctx.main.begin(dm.view())
           .fetch(i32, m["1"], m["A % 8"])
           .collect(m["1"], m["A % 8"])
           .vector_init()
           .vector_intra_slice_branch(BranchMode.Unconditional)
           .vector_fxp(FxpBinaryOp.AddFxp, 1)
           .vector_final()
           .commit(m["A % 8"], 1 << 12))
    return out.to_hbm(m["A"], ctx.tdma, 1 << 28)

ctx = Context.acquire()
x = HostTensor.rand(i32, m["A"], np.random.default_rng(42))
y = launch(kernel, ctx, x.to_hbm(m["1"], m["A"], ctx.pdma, 0)).to_host(m["A"], ctx.pdma)
assert np.array_equal(y.numpy(), x.numpy() + 1)
'''

# A kernel whose fetch needs indices the buffer does not hold (manual L1639–1659): a refusal at run time, and
# with the plugin a mypy error at the call.
INSUFFICIENT = '''
from visa import Context, DmTensor, axes, i8, m

axes(N=2048)


def read_insufficient(ctx: Context, buf: DmTensor[i8, m["1"], m["1 # 2"], m["1 # 256"], m["N % 512"]]) -> None:
    ctx.main.begin(buf.view()).fetch(i8, m["N / 512"], m["N % 512"])
'''


def _write(tmp_path: Path, name: str, text: str, prefix: str = "") -> Path:
    path = tmp_path / name
    path.write_text(prefix + textwrap.dedent(text))
    return path


def test_run_calls_main_and_prints_the_check_and_the_cycle_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(ROOT / "examples" / "constant_add.py")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PASS  ")
    assert "device RNGD" in out and "engine" in out and "cycles" in out and "fetch" in out


def test_run_quiet_prints_only_the_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "-q", str(ROOT / "examples" / "constant_add.py")]) == 0
    assert capsys.readouterr().out.count("\n") == 1


def test_run_without_main_runs_the_file_as_a_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # regression: such a file used to run, then be reported "SKIP ... no main()" without its cycle table
    path = _write(tmp_path, "section2.py", SECTION_2)
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("PASS  ") and "device RNGD" in out


def test_run_does_not_run_the_main_block_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "guarded.py", '''
        def main() -> None:
            print("host code")

        if __name__ == "__main__":
            main()
        ''')
    assert main(["run", str(path)]) == 0
    assert capsys.readouterr().out.count("host code") == 1


def test_run_reports_a_refusal_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "refused.py", '''
        import numpy as np
        from visa.testing import place_dm

        def main() -> None:
            ctx = Context.acquire()
            buf = place_dm(ctx, np.zeros(2048, np.int8), i8, m["1"], m["1 # 2"], m["1 # 256"], m["N % 512"], 0)
            read_insufficient(ctx, buf)
        ''', prefix=INSUFFICIENT)
    assert main(["run", str(path)]) == 1
    out = capsys.readouterr()
    first, where = out.out.splitlines()[:2]
    assert first.startswith("FAIL  ") and "InsufficientInputError [V3" in first and "axis N" in first
    code = first.split("[", 1)[1].split("]", 1)[0]
    assert first.endswith("'%'") and f"[{code}]" not in first.split("]: ", 1)[1]  # the code once, up front
    # the user's file, line and kernel statement, not the visa frame that raised
    line = INSUFFICIENT.splitlines().index('    ctx.main.begin(buf.view()).fetch(i8, m["N / 512"], m["N % 512"])') + 1
    assert where == f'      at {path}:{line}: ctx.main.begin(buf.view()).fetch(i8, m["N / 512"], m["N % 512"])'
    assert out.out.splitlines()[2] == f"      (visa explain {code}: the rule and the fix)"
    assert "Traceback" not in out.out + out.err


def test_run_reports_a_failed_check_and_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "wrong.py", '''
        def main() -> None:
            assert 1 + 1 == 3, "numbers differ"
        ''')
    assert main(["run", "-q", str(path), str(tmp_path / "absent.py")]) == 1
    out = capsys.readouterr().out
    assert "FAIL  " in out and "result check failed: numbers differ" in out
    assert "ERROR " in out and "no such file" in out


def test_run_treats_a_scripts_exit_status_as_its_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = _write(tmp_path, "ok.py", "import sys\nsys.exit(0)\n")
    bad = _write(tmp_path, "bad.py", "import sys\nsys.exit(3)\n")
    assert main(["run", str(ok)]) == 0
    assert main(["run", str(bad)]) == 1
    assert "exited with status 3" in capsys.readouterr().out


def test_trace_writes_one_chrome_trace_per_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "trace.json"
    assert main(["trace", str(ROOT / "examples" / "constant_add.py"), "-o", str(out)]) == 0
    events = json.loads(out.read_text())["traceEvents"]
    process = [e for e in events if e["name"] == "process_name"]
    assert [e["args"]["name"] for e in process] == ["device 0 (RNGD) chip 0"]
    slices = [e for e in events if e["ph"] == "X"]
    assert slices and all(e["pid"] == 1 and e["tid"] > 0 and e["dur"] > 0 for e in slices)
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {"pcie", "main"} <= threads and any(t.startswith("dma") for t in threads)
    assert f"wrote {out}" in capsys.readouterr().out


def test_trace_of_a_failing_run_is_written_up_to_the_failure(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "fails.py", '''
        import numpy as np
        from visa import Context, HostTensor, axes, i32, m

        axes(N=256)

        def main() -> None:
            ctx = Context.acquire()
            x = HostTensor.from_numpy(np.arange(256, dtype=np.int32), i32, m["N"])
            x.to_hbm(m["1"], m["N"], ctx.pdma, 0)
            assert False, "the check fails after one DMA"
        ''')
    out = tmp_path / "trace.json"
    assert main(["trace", str(path), "-o", str(out)]) == 1
    events = json.loads(out.read_text())["traceEvents"]
    assert [e["name"] for e in events if e["ph"] == "X"] and "up to the failure" in capsys.readouterr().out


def test_run_reports_every_context_even_garbage_collected_ones(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "many.py", '''
        import gc
        import numpy as np
        from visa import Context, HostTensor, axes, i32, m

        axes(N=64)

        def one() -> None:
            ctx = Context.acquire()
            HostTensor.from_numpy(np.arange(64, dtype=np.int32), i32, m["N"]).to_hbm(m["1"], m["N"], ctx.pdma, 0)

        def main() -> None:
            for _ in range(3):
                one()
                gc.collect()
        ''')
    assert main(["run", str(path)]) == 0
    assert capsys.readouterr().out.count("device RNGD") == 3


def test_check_enables_the_plugin_without_a_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    cmd = mypy_command(["k.py"], tmp_path)
    config = Path(cmd[cmd.index("--config-file") + 1])
    assert f"plugins = {PLUGIN}" in config.read_text() and "strict = True" in config.read_text()
    assert cmd[-1] == "k.py" and capsys.readouterr().err == ""


def test_check_keeps_a_project_config_that_enables_the_plugin(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.mypy]\nplugins = ["{PLUGIN}"]\n')
    monkeypatch.chdir(tmp_path)
    assert mypy_command(["k.py"], tmp_path) == [sys.executable, "-m", "mypy", "--strict", "k.py"]


def test_check_says_when_it_bypasses_a_project_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mypy.ini").write_text("[mypy]\nwarn_unused_ignores = True\n")
    monkeypatch.chdir(tmp_path)
    cmd = mypy_command(["k.py"], tmp_path)
    assert "--config-file" in cmd
    assert "mypy.ini does not enable the visa.mypy plugin" in capsys.readouterr().err


def test_check_reports_the_layout_error_at_the_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    # end to end, in a directory without any mypy configuration
    _write(tmp_path, "kernel.py", INSUFFICIENT)
    monkeypatch.chdir(tmp_path)
    # no PYTHONPATH: mypy must find the installed package and its plugin from another directory (issue 16; make
    # installs it editable with hatchling, a plain .pth that mypy reads)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert main(["check", "kernel.py"]) == 1
    out = capfd.readouterr().out
    line = INSUFFICIENT.splitlines().index('    ctx.main.begin(buf.view()).fetch(i8, m["N / 512"], m["N % 512"])') + 1
    assert f'kernel.py:{line}: error: fetch sequencer: Time m["N / 512"]: needs indices of N' in out
    assert out.count("error:") == 1 and "[visa-V3" in out  # the diagnostic's own code, a sub-code of [visa]


def test_a_failed_check_says_what_it_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 16: "result check failed: " used to end there; now the assert, its line and its operands."""
    path = _write(tmp_path, "arrays.py", '''
        import numpy as np

        def main() -> None:
            got = np.arange(6).reshape(2, 3)
            want = got.copy()
            want[1, 2] = 7
            assert np.array_equal(got, want)
        ''')
    assert main(["run", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"FAIL  {path}: result check failed"
    assert lines[1] == f"      at {path}:8: assert np.array_equal(got, want)"
    assert lines[2] == ("      1 of 6 elements differ; first at index (1, 2): np.int64(5) and np.int64(7); "
                        "largest difference 2")
    scalar = _write(tmp_path, "scalar.py", "def main() -> None:\n    total = 2 + 2\n    assert total == 5\n")
    assert main(["run", str(scalar)]) == 1
    out = capsys.readouterr().out
    assert "total = 4" in out and "5 = 5" in out
    bound = _write(tmp_path, "bound.py", '''
        import numpy as np

        def main() -> None:
            got, want = np.array([1.0, 2.0, 3.5]), np.array([1.0, 2.0, 3.0])
            assert np.all(np.abs(got - want) <= 0.25)
        ''')
    assert main(["run", str(bound)]) == 1
    assert ("1 of 3 elements fail np.abs(got - want) <= 0.25; first at index (2,): np.abs(got - want) = "
            "np.float64(0.5), 0.25 = np.float64(0.25)") in capsys.readouterr().out


def test_run_prints_whole_operation_names_and_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(ROOT / "examples" / name) for name in ("gemm.py", "constant_add.py")]
    assert main(["run", *files]) == 0
    out = capsys.readouterr().out
    assert "fetch → switch → collect → aligner → reducer.tree → reducer.accumulator → cast → commit " in out
    last = out.splitlines()[-1]
    assert last.startswith("2 passed, 0 failed in ") and "operations" in last and "cycles simulated" in last
    assert "\x1b[" not in out  # no colour codes when the output is not a terminal


def test_ctrl_c_stops_and_prints_the_schedule_so_far(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "stopped.py", '''
        import numpy as np

        def main() -> None:
            ctx = Context.acquire()
            HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)
            raise KeyboardInterrupt  # the user's Ctrl-C during the next operation
        ''', prefix="from visa import Context, HostTensor, axes, i32, m\naxes(A=2048)\n")
    assert main(["run", str(path), str(ROOT / "examples" / "constant_add.py")]) == 130
    out = capsys.readouterr().out
    assert f"STOP  {path}: interrupted after" in out and "the schedule so far" in out
    assert "host.to_hbm" in out and "device RNGD: 1 operations" in out
    assert "constant_add" not in out and "0 of 2 files finished" in out
    trace = tmp_path / "stopped.json"
    assert main(["trace", str(path), "-o", str(trace)]) == 130
    assert [ev["name"] for ev in json.loads(trace.read_text())["traceEvents"] if ev["ph"] == "X"] == \
        ['host.to_hbm → HbmTensor[i32, m["1"], m["A"]] @ 0']


def test_progress_shows_on_a_terminal_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    import visa.cli as cli
    from visa.context import OBSERVERS

    monkeypatch.setattr(cli, "_PROGRESS_AFTER", 0.0)
    example = ROOT / "examples" / "constant_add.py"
    tty = io.StringIO()
    assert cli._run_one(example, False, Console(file=tty, force_terminal=True, soft_wrap=True)).status == "pass"
    assert "ops," in tty.getvalue() and "cycles" in tty.getvalue()
    # a first operation that takes long still shows the line (a timer starts it, not the next operation)
    slow = _write(tmp_path, "slow.py", "import time\n\ndef main() -> None:\n    time.sleep(0.6)\n")
    monkeypatch.setattr(cli, "_PROGRESS_AFTER", 0.1)
    tty = io.StringIO()
    assert cli._run_one(slow, False, Console(file=tty, force_terminal=True, soft_wrap=True)).status == "pass"
    assert "0 ops, 0 cycles: starting" in tty.getvalue()
    log = io.StringIO()
    assert cli._run_one(example, False, Console(file=log, force_terminal=False, soft_wrap=True)).status == "pass"
    assert "ops," not in log.getvalue() and log.getvalue().startswith("PASS  ")
    assert OBSERVERS == []


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"visa {version('tcp-visa')}"


@pytest.mark.parametrize(("found", "words"), [(None, "needs mypy >= 1.16"), ((1, 15), "found 1.15")])
def test_check_names_the_extra_when_mypy_is_missing_or_too_old(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str],
                                                             found: tuple[int, ...] | None, words: str) -> None:
    import visa.cli as cli

    monkeypatch.setattr(cli, "_mypy_version", lambda: found)
    assert main(["check", "kernel.py"]) == 2
    err = capsys.readouterr().err
    assert words in err and "pip install 'tcp-visa[check]'" in err


def test_the_declared_mypy_floor_is_the_one_check_enforces() -> None:
    import visa.cli as cli

    text = (ROOT / "pyproject.toml").read_text()
    floor = ".".join(map(str, cli.MYPY_FLOOR))
    assert f'check = ["mypy>={floor}"]' in text
    assert "make lowest" in (ROOT / ".ci" / "run").read_text()  # every floor, mypy's included, on 3.11–3.13


def test_explain_prints_the_catalogue_entry(capsys: pytest.CaptureFixture[str]) -> None:
    from visa.diagnostic_codes import CODES

    code = CODES["sequencer._Ctx.insufficient InsufficientInputError: needs indices of that"]
    assert main(["explain", code.lower()]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{code}  InsufficientInputError in visa.mapping.sequencer"  # no private function names
    assert out[2] == "  the manual's rule: manual §Sequencer › Insufficient Input, L1639–1659"
    assert out[3].startswith("  fix: give the buffer the whole of")
    assert main(["explain", "V9999"]) == 2
    assert "no diagnostic V9999" in capsys.readouterr().err


def test_explain_accepts_the_number_alone_names_placeholders_and_shows_snippets(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29: ``visa explain 3079`` and ``v3079`` work; the message's run-time parts read ``<axis>``, not
    ``*…*``; a failing and a fixed kernel follow where visa.snippets has them."""
    from visa.diagnostic_codes import CODES

    code = CODES["sequencer._Ctx.insufficient InsufficientInputError: needs indices of that"]
    assert main(["explain", code[1:]]) == 0
    text = capsys.readouterr().out
    assert main(["explain", code.lower()]) == 0
    assert capsys.readouterr().out == text
    assert "*…*" not in text and "needs indices of <axis> that the buffer <buffer> does not hold" in text
    assert "  fails:" in text and "  fixed:" in text
    assert '.fetch(i32, m["1"], m["A % 16"])' in text.split("  fixed:")[0]
    assert '.fetch(i32, m["1"], m["A % 8"])' in text.split("  fixed:")[1]
    private = CODES["base.VeBase._vrf VisaError: the vrf operand belongs"]
    assert main(["explain", private]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("in visa.stream.vector.base.VeBase") and "_vrf" not in first


def test_a_failing_np_testing_check_points_at_the_users_line(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29: a check that fails inside numpy (np.testing) is shown at the user's line that called it."""
    path = _write(tmp_path, "close.py", '''
        import numpy as np

        def main() -> None:
            got = np.array([1.0, 2.0, 3.5])
            want = np.array([1.0, 2.0, 3.0])
            np.testing.assert_allclose(got, want, rtol=1e-3)
        ''')
    assert main(["run", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"      at {path}:7: np.testing.assert_allclose(got, want, rtol=1e-3)" in out
    assert "1 of 3 elements differ; first at index (2,)" in out
    assert "numpy" not in out.split("      at ")[1].splitlines()[0]


def test_run_verbose_lists_the_critical_path_operations(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29: ``visa run -v`` lists the operations the critical path numbers, with the line that issued each."""
    assert main(["run", "-v", str(ROOT / "examples" / "constant_add.py")]) == 0
    out = capsys.readouterr().out
    path = next(line for line in out.splitlines() if "critical path:" in line)
    numbers = [int(n) for n in path.split(":", 1)[1].replace("→", " ").replace("#", " ").split()]
    # each operation's line (a line under it that says why it was slower, issue 22, is not an operation)
    listed = [line for line in out.split("critical path operation", 1)[1].splitlines()[1:]
              if line.strip().startswith("#")]
    for n, line in zip(numbers, listed, strict=False):
        assert line.strip().startswith(f"#{n} ")
        assert "constant_add.py:" in line
    assert len(listed) >= len(numbers)


def test_run_reports_a_device_whose_last_reference_went_away(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Contexts are held weakly (tests acquire thousands); ``visa run`` holds them during a file, so a device the
    garbage collector could take before the report is still reported, and counted in the summary."""
    path = _write(tmp_path, "dropped.py", '''
        import gc

        def helper() -> None:
            ctx = Context.acquire()
            HostTensor.zeros(i32, m["A"]).to_hbm(m["1"], m["A"], ctx.pdma, 0)

        def main() -> None:
            helper()
            gc.collect()
        ''', prefix="from visa import Context, HostTensor, axes, i32, m\naxes(A=2048)\n")
    assert main(["run", str(path), str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("device RNGD: 1 operations") == 2
    assert out.splitlines()[-1].startswith("2 passed, 0 failed") and "2 operations" in out.splitlines()[-1]


def test_examples_copies_the_bundled_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 29: ``visa examples DIR`` copies the examples a wheel ships (a checkout's ``examples/`` here)."""
    from visa.cli import examples_dir

    source = examples_dir()
    assert source is not None
    assert main(["examples", str(tmp_path / "mine")]) == 0
    copied = sorted(p.name for p in (tmp_path / "mine").glob("*.py"))
    assert copied == sorted(p.name for p in source.glob("*.py")) and "constant_add.py" in copied
    assert main(["examples", str(tmp_path / "mine")]) == 2  # never over a directory that holds something
    assert "is not empty" in capsys.readouterr().err


def test_a_reader_that_closes_the_pipe_gets_no_traceback() -> None:
    """``visa explain V0057 | head``: the reader closes the pipe before the text is written; ``visa`` stops with
    exit status 1 and writes nothing to standard error (a ``BrokenPipeError`` traceback before, h40x)."""
    import os
    import subprocess

    read, write = os.pipe()
    os.close(read)  # every write to the pipe fails: the reader has gone
    try:
        done = subprocess.run([sys.executable, "-m", "visa.cli", "explain", "V0057"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(write)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_an_output_that_cannot_be_written_is_said_not_a_traceback(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``visa trace -o`` into a folder that does not exist and ``visa examples`` under a file: exit status 2 and
    the path with the system's reason (a ``FileNotFoundError`` traceback before, h40x)."""
    missing = tmp_path / "no" / "such" / "trace.json"
    assert main(["trace", str(tmp_path / "absent.py"), "-o", str(missing)]) == 2
    err = capsys.readouterr().err
    assert f"visa trace: cannot write {missing}: No such file or directory" in err
    (tmp_path / "file").write_text("")
    assert main(["examples", str(tmp_path / "file" / "examples")]) == 2
    err = capsys.readouterr().err
    assert f"visa examples: cannot write {tmp_path / 'file' / 'examples'}: " in err and "Traceback" not in err
    assert main(["examples", str(tmp_path / "file")]) == 2  # the file itself (NotADirectoryError before, review)
    assert f"visa examples: {tmp_path / 'file'} is a file; name a new directory" in capsys.readouterr().err
