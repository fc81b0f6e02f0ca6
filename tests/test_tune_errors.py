"""``visa.tune``'s arguments of the wrong type or out of range, refused as visa diagnostics naming the call, the
argument and the fix before any point runs (session 40, h40x): each was a raw ``TypeError``/``ValueError`` of
``random``, ``concurrent.futures`` or ``pathlib`` — or, for ``threads='x'``, an error recorded on every point, and
``workers=0`` silently meant every core.  ``visa tune``'s options are checked by argparse (exit status 2), and a
refusal of the sweep itself is printed, not a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from visa.cli import main as visa_main
from visa.errors import RangeError, VisaError, WrongTypeError
from visa.tune import Row, SweepResult, grid, sweep


def point(a: int, b: int = 1) -> int:
    """A point whose cycles are its parameters (module level: a worker loads it by name)."""
    return a * 100 + b


RUN = dict(workers=1, cache=False)


@pytest.mark.parametrize(("param", "kwargs"), [
    ("fn", dict(fn=3)),
    ("fn", dict(fn=lambda a: a)),
    ("space", dict(space=3)),
    ("space", dict(space="ab")),
    ("space[1]", dict(space=[{"a": 1}, 2])),
    ("samples", dict(samples="3")),
    ("samples", dict(samples=1.5)),
    ("seed", dict(samples=1, seed=[1])),
    ("workers", dict(workers="2")),
    ("threads", dict(threads="x")),
    ("cache", dict(cache=3)),
    ("progress", dict(progress="yes")),
    ("on_row", dict(on_row=3)),
    ("executor", dict(executor=3)),
])
def test_sweep_refuses_a_wrong_type_naming_it(param: str, kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = dict(fn=point, space={"a": [1, 2, 3]}, **RUN) | kwargs
    with pytest.raises(WrongTypeError) as err:
        sweep(args.pop("fn"), args.pop("space"), **args)
    e = err.value
    assert isinstance(e, TypeError) and e.call == "visa.tune.sweep"
    assert e.message.startswith(f"parameter {param} must be ") and e.fix


@pytest.mark.parametrize(("param", "kwargs", "span"), [
    ("workers", dict(workers=-1), "1.."), ("workers", dict(workers=0), "1.."),
    ("threads", dict(threads=0), "1.."), ("threads", dict(threads=-2), "1.."),
])
def test_sweep_refuses_a_count_out_of_range_naming_it(param: str, kwargs: dict[str, Any], span: str) -> None:
    """``workers=-1``: ``ValueError: max_workers must be greater than 0`` from the pool; ``workers=0`` ran on
    every core (``0 or os.cpu_count()``); ``threads=0`` limited nothing."""
    with pytest.raises(RangeError) as err:
        sweep(point, {"a": [1]}, **({"cache": False} | kwargs))
    e = err.value
    assert isinstance(e, ValueError) and e.call == "visa.tune.sweep"
    assert e.message.startswith(f"parameter {param} must be in {span}, got ") and param in (e.fix or "")


def test_samples_below_one_is_refused_for_a_list_of_points_too() -> None:
    """A list of points sampled with ``samples=0`` ran none, ``samples=-1`` raised ``random``'s ValueError; a grid
    already refused them (V0042)."""
    for space in ({"a": [1, 2]}, [{"a": 1}, {"a": 2}]):
        for samples in (0, -1):
            with pytest.raises(VisaError) as err:
                grid(space, samples=samples)
            assert err.value.code == "V0042" and err.value.call == "visa.tune.sweep"


def test_the_results_calls_refuse_wrong_arguments(tmp_path: Path) -> None:
    result = SweepResult([Row({"a": 1}, 101), Row({"a": 2}, 201)], ["a"])
    with pytest.raises(WrongTypeError, match=r"^SweepResult\.table: parameter limit must be an int"):
        result.table(limit="x")  # type: ignore[arg-type]
    with pytest.raises(RangeError, match=r"^SweepResult\.table: parameter limit must be in 0\.\."):
        result.table(limit=-1)  # (dropped the last row)
    assert result.table(limit=1).row_count == 1
    with pytest.raises(WrongTypeError, match=r"^SweepResult\.to_csv: parameter path must be a file name"):
        result.to_csv(3)  # type: ignore[arg-type]
    with pytest.raises(WrongTypeError, match=r"^SweepResult\.speedup: parameter default must be a point"):
        result.speedup(3)  # type: ignore[arg-type]
    assert result.speedup({"a": 2}) == 201 / 101 and result.to_csv(tmp_path / "r.csv").is_file()


def test_the_checked_sweep_still_runs() -> None:
    """The checks refuse nothing that ran: a list of points, a sample of a grid with a seed, a folder as cache."""
    rows = sweep(point, [{"a": 1}, {"a": 2, "b": 3}], **RUN).rows
    assert [r.cycles for r in rows] == [101, 203]
    sample = sweep(point, {"a": [1, 2, 3, 4]}, samples=2, seed=5, threads=1, **RUN)
    assert len(sample.rows) == 2 and all(r.ok for r in sample.rows)


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--workers", "0", "0 is below 1"), ("--samples", "-1", "-1 is below 1"), ("--threads", "0", "0 is below 1"),
    ("--workers", "two", "'two' is not an int"),
])
def test_visa_tune_refuses_an_option_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str,
                                                  value: str, said: str) -> None:
    script = tmp_path / "points.py"
    script.write_text("def point(a):\n    return a\n")
    with pytest.raises(SystemExit) as code:
        visa_main(["tune", f"{script}:point", "--grid", "a=1,2", option, value])
    assert code.value.code == 2
    assert f"argument {option}: {said}" in capsys.readouterr().err


def test_visa_tune_prints_a_refusal_of_the_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A FUNCTION that is a lambda: the sweep's refusal printed (exit status 2), not a traceback."""
    script = tmp_path / "points.py"
    script.write_text(textwrap.dedent("""
        point = lambda a: a
    """))
    assert visa_main(["tune", f"{script}:point", "--grid", "a=1,2", "--no-cache", "--workers", "1"]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert "visa tune: visa.tune.sweep: parameter fn must be a function defined at module level" in out
