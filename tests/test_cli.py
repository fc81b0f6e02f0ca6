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
    assert out.out.startswith("FAIL  ") and "InsufficientInputError [V301]" in out.out and "axis N" in out.out
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
    # end to end, in a directory without any mypy configuration (design API.md §4, §6)
    _write(tmp_path, "kernel.py", INSUFFICIENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # mypy imports the plugin, installed or not
    assert main(["check", "kernel.py"]) == 1
    out = capfd.readouterr().out
    line = INSUFFICIENT.splitlines().index('    ctx.main.begin(buf.view()).fetch(i8, m["N / 512"], m["N % 512"])') + 1
    assert f'kernel.py:{line}: error: fetch sequencer: Time m["N / 512"]: needs indices of N' in out
    assert out.count("error:") == 1 and "[visa]" in out
