"""The points of a sweep: a grid (every combination), a list of points, or a seeded sample of a large grid.

>>> grid({"k_tile": [256, 512], "double_buffer": [True, False]})  # doctest: +NORMALIZE_WHITESPACE
[{'k_tile': 256, 'double_buffer': True}, {'k_tile': 256, 'double_buffer': False},
 {'k_tile': 512, 'double_buffer': True}, {'k_tile': 512, 'double_buffer': False}]
>>> a = grid({"a": range(100)}, samples=3, seed=1)
>>> a == grid({"a": range(100)}, samples=3, seed=1) and a != grid({"a": range(100)}, samples=3, seed=2)
True
>>> len(grid({"a": range(10), "b": range(10)}, samples=5, seed=0))
5
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from visa.errors import VisaError
from visa.validate import expect_int, wrong_type

__all__ = ["Point", "Space", "grid", "size"]

#: One point: parameter name → value, the keyword arguments of one call of the swept function.
Point = dict[str, Any]
#: What :func:`visa.tune.sweep` takes: a grid (name → the values to try) or the points themselves.
Space = Mapping[str, Iterable[Any]] | Sequence[Mapping[str, Any]]


def _axes(space: Mapping[str, Iterable[Any]]) -> list[tuple[str, list[Any]]]:
    axes: list[tuple[str, list[Any]]] = []
    for name, values in space.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise VisaError(f"parameter name {name!r} is not a Python identifier", call="visa.tune.sweep",
                            fix="name each parameter as the swept function's keyword argument")
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise VisaError(f"parameter {name}: {values!r} is not a list of values to try", call="visa.tune.sweep",
                            fix=f"write {name}=[{values!r}] for a single value")
        vals = list(values)
        if not vals:
            raise VisaError(f"parameter {name} has no values to try", call="visa.tune.sweep",
                            fix=f"give {name} at least one value")
        axes.append((name, vals))
    return axes


def size(space: Space) -> int:
    """How many points the space holds (a grid's product of sizes)."""
    if isinstance(space, Mapping):
        return math.prod(len(v) for _, v in _axes(space))
    return len(space)


def _decode(axes: list[tuple[str, list[Any]]], index: int) -> Point:
    """The ``index``-th point of the grid in row-major order (the last parameter fastest)."""
    point: Point = {}
    for name, values in reversed(axes):
        index, digit = divmod(index, len(values))
        point[name] = values[digit]
    return {name: point[name] for name, _ in axes}


def grid(space: Space, *, samples: int | None = None, seed: int | None = 0) -> list[Point]:
    """The points of ``space`` in order: every combination of a grid (the last parameter fastest), or the given
    points; with ``samples``, that many points drawn without repeats (seeded by ``seed``) and kept in grid
    order, without building the whole grid (a sample of a huge grid is cheap)."""
    call = "visa.tune.sweep"
    if samples is not None:
        samples = expect_int(samples, "samples", call=call, fix="pass samples=N (N ≥ 1), or None for every point")
        if samples < 1:  # (a list of points was sampled to none, a grid refused: both refused)
            raise VisaError(f"samples = {samples}: a sample holds at least one point", call="visa.tune.sweep",
                            fix="use samples ≥ 1, or None for the whole grid")
    if seed is not None:
        seed = expect_int(seed, "seed", call=call)
    if isinstance(space, Mapping):
        axes = _axes(space)
        total = math.prod(len(v) for _, v in axes)
        if samples is None or samples >= total:
            indices: Iterable[int] = range(total)
        else:
            indices = sorted(random.Random(seed).sample(range(total), samples))
        return [_decode(axes, i) for i in indices]
    if isinstance(space, (str, bytes)) or not isinstance(space, Sequence):
        raise wrong_type("space", space, "a grid {name: [values…]} or a list of points [{name: value}, …]",
                         call=call)
    for k, p in enumerate(space):
        if not isinstance(p, Mapping):
            raise wrong_type(f"space[{k}]", p, "a point {name: value, …} (a dict)", call=call)
    points = [dict(p) for p in space]
    for p in points:
        _axes({k: [v] for k, v in p.items()})  # names must be identifiers
    if samples is not None and samples < len(points):
        keep = sorted(random.Random(seed).sample(range(len(points)), samples))
        points = [points[i] for i in keep]
    return points
