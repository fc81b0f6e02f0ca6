"""``visa.tune``: sweeps on this process, a local process pool and a real Dask cluster; errors, the cache, the
command line, the table, the CSV and the plot (API.md §8 "Sweeps"); and the tiling choices of ``Gemm`` it sweeps.
"""

from __future__ import annotations

import csv
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from visa import AxisSet, HardwareLimitError
from visa.cli import main as visa_main
from visa.errors import VisaError
from visa.kernels import Gemm
from visa.tune import Row, SweepResult, grid, sweep
from visa.tune.command import load, parse_grid

# One point: a small GEMM whose K tile and double buffering are the choices (each run checked against numpy by
# examples/tune_gemm.py's ``gemm``); ``fail`` makes the point's own check fail.
POINT = textwrap.dedent('''
    import sys
    sys.path.insert(0, {examples!r})
    from tune_gemm import gemm

    def point(k_tile, double_buffer=True, fail=False):
        report = gemm(k_tile=k_tile, double_buffer=double_buffer, m=32, n=64, k=2048)
        assert not fail, "the point's own result check failed"
        return report
''')
EXAMPLES = str(Path(__file__).resolve().parents[1] / "examples")
SPACE = {"k_tile": [256, 512, 1024], "double_buffer": [True, False]}


@pytest.fixture()
def point(tmp_path: Path) -> Any:
    script = tmp_path / "points.py"
    script.write_text(POINT.format(examples=EXAMPLES))
    fn, _, _ = load(f"{script}:point")
    return fn


def _measured(result: SweepResult) -> list[tuple[Any, ...]]:
    """What must not depend on where a point ran: its parameters, cycles, roofline and error."""
    return [(r.params, r.cycles, r.utilisation, r.bound, r.error and r.error.split(":")[0]) for r in result.rows]


def test_grid_samples_and_lists() -> None:
    assert grid({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    sample = grid({"a": range(10), "b": range(10)}, samples=7, seed=3)
    assert len(sample) == 7 and len({(p["a"], p["b"]) for p in sample}) == 7
    assert sample == sorted(sample, key=lambda p: (p["a"], p["b"]))  # kept in grid order
    assert grid([{"a": 1}, {"a": 5}]) == [{"a": 1}, {"a": 5}]
    with pytest.raises(VisaError, match="not a list of values"):
        grid({"a": 3})
    with pytest.raises(VisaError, match="no values"):
        grid({"a": []})


def test_in_process_sweep_records_errors_and_finds_the_best(point: Any, tmp_path: Path) -> None:
    result = sweep(point, SPACE, workers=1, cache=False)
    assert [r.params for r in result.rows] == grid(SPACE)
    refused = [r for r in result.rows if r.error]
    # a whole-Row K tile leaves no TRF half for the next load (manual L4151–4154): refused, the sweep goes on
    assert [r.params for r in refused] == [{"k_tile": 1024, "double_buffer": True}]
    assert "HardwareLimitError" in (refused[0].error or "") and "k_tile ≤ 512" in (refused[0].error or "")
    ok = [r for r in result.rows if r.ok]
    assert len(ok) == 5 and all(r.cycles and r.cycles > 0 and 0 < (r.utilisation or 0) <= 1 for r in ok)
    assert result.best is not None and result.best.cycles == min(r.cycles or 0 for r in ok)
    # a failing check is an error row too
    failed = sweep(point, [{"k_tile": 512, "fail": True}, {"k_tile": 512}], workers=1, cache=False)
    assert failed.rows[0].error is not None and "AssertionError" in failed.rows[0].error
    assert "points.py" in failed.rows[0].error and failed.rows[1].ok


def test_process_pool_gives_the_same_rows(point: Any) -> None:
    here = sweep(point, SPACE, workers=1, cache=False)
    pool = sweep(point, SPACE, workers=2, cache=False)
    assert _measured(pool) == _measured(here)
    assert all(r.peak_memory is None or r.peak_memory > 0 for r in pool.rows)


def test_cache_resumes_an_interrupted_sweep(point: Any, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = sweep(point, SPACE, workers=1, cache=cache, samples=2, seed=1)  # "interrupted" after two points
    assert not any(r.cached for r in first.rows)
    seen: list[tuple[bool, int]] = []
    full = sweep(point, SPACE, workers=1, cache=cache, on_row=lambda r, done, total: seen.append((r.cached, total)))
    cached = {tuple(r.params.items()) for r in full.rows if r.cached}
    assert cached == {tuple(r.params.items()) for r in first.rows}
    assert len(seen) == 6 and sum(c for c, _ in seen) == 2
    assert _measured(full) == _measured(sweep(point, SPACE, workers=1, cache=False))
    # an edit of the swept function's file runs its points again
    script = Path(point.__globals__["__file__"])
    script.write_text(script.read_text() + "\n# edited\n")
    again = sweep(load(f"{script}:point")[0], SPACE, workers=1, cache=cache)
    assert not any(r.cached for r in again.rows)


def test_dask_local_cluster(point: Any) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        on_dask = sweep(point, SPACE, dask=client, cache=False)
        via_executor = sweep(point, [{"k_tile": 512, "fail": True}, {"k_tile": 256}],
                             executor=client.get_executor(), cache=False)
    assert _measured(on_dask) == _measured(sweep(point, SPACE, workers=1, cache=False))
    assert via_executor.rows[0].error is not None and "AssertionError" in via_executor.rows[0].error
    assert via_executor.rows[1].ok


def test_command_line_writes_table_csv_and_plot(point: Any, tmp_path: Path, capsys: Any) -> None:
    image = pytest.importorskip("matplotlib.image")
    script = Path(point.__globals__["__file__"])
    out = tmp_path / "sweep"
    code = visa_main(["tune", f"{script}:point", "--grid", "k_tile=256,512", "--grid", "double_buffer=true,false",
                      "--workers", "1", "--no-cache", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "best" in text and "4 points" in text
    rows = list(csv.DictReader(open(f"{out}.tune.csv")))
    assert [(int(r["k_tile"]), r["double_buffer"]) for r in rows] == [(256, "True"), (256, "False"),
                                                                       (512, "True"), (512, "False")]
    assert all(int(r["cycles"]) > 0 for r in rows)
    png = image.imread(f"{out}.tune.png")
    assert png.shape[0] > 200 and png.shape[1] > 400 and float(np.std(png)) > 0.05  # drawn, not blank
    assert parse_grid(["a=1,2", "a=3", "b=x,none"]) == {"a": [1, 2, 3], "b": ["x", None]}
    assert visa_main(["tune", f"{script}:nothing", "--grid", "k_tile=256"]) == 2


def test_table_and_html_show_every_row() -> None:
    rows = [Row({"k": 1}, 100, 0.5, "MAC", 0.1), Row({"k": 2}, None, error="HardwareLimitError: no")]
    result = SweepResult(rows, ["k"])
    text = str(result)
    assert "100" in text and "HardwareLimitError" in text and "50.0%" in text
    assert "<table" in result._repr_html_() or "<pre" in result._repr_html_()
    assert result.best is rows[0] and result.errors == [rows[1]]


# ---------------------------------------------------------------------------- the tiling choices it sweeps


@pytest.mark.parametrize(("k_tile", "m_block"), [(128, 1), (256, 2), (1024, None)])
def test_gemm_tiling_choices_agree_with_numpy(k_tile: int, m_block: int | None) -> None:
    import sys

    sys.path.insert(0, EXAMPLES)
    from tune_gemm import gemm

    report = gemm(k_tile=k_tile, m_block=m_block, double_buffer=k_tile <= 512, m=64, n=64, k=2048)  # checks itself
    assert report.kernel is not None and report.kernel.cycles > 0


def test_gemm_tiling_refusals() -> None:
    ax = AxisSet(M=64, N=64, K=2048, P=2)
    with pytest.raises(HardwareLimitError, match="multiple of 32 from 32 to 1024"):
        Gemm(ax, k_tile=48)
    with pytest.raises(HardwareLimitError, match="multiple of 32 from 32 to 1024"):
        Gemm(ax, k_tile=2048)
    with pytest.raises(HardwareLimitError, match="at least one M tile"):
        Gemm(ax, m_block=0)
    with pytest.raises(VisaError, match="multiple of it"):
        Gemm(AxisSet(M=64, N=64, K=640, P=2), k_tile=256)
    big = Gemm(AxisSet(M=4096, N=4096, K=4096, P=2), k_tile=1024, m_block=64)
    with pytest.raises(HardwareLimitError, match="use a smaller m_block"):
        big.block_of(512 * 1024, True, False)
