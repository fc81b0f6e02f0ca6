"""The fast path ``dma.holds-every-index`` (visa/engines/dma/fast_holds.py): a DMA plan's check that the
destination holds every index of the source skipped when the destination holds every index of each of its axes.

Over pairs of layouts of one ``[R, C]`` tensor (whole, split, permuted, padded, narrowed with ``=`` or ``%``, a
stride of an axis, a broadcast digit, a destination missing part of an axis) on HBM and DM: the check raises the
same error or none with the path alone on as with every path but it, the path answers for some pairs and never for
a destination missing an index; and the moves of the first-launch kernels plan and run alike."""

from __future__ import annotations

import importlib
import itertools

import numpy as np
import pytest

from tests.fastpath_switch import alone_and_without
from visa import AxisSet, Context, HostTensor, fastpaths, i32
from visa.engines.dma import fast_holds
from visa.engines.dma.config import Side
from visa.errors import VisaError
from visa.hw import RNGD
from visa.mapping import Mapping

AX = AxisSet(R=16, C=32)
M = AX.m

#: element mappings of the tensor on HBM (some hold part of it only)
ELEMENTS = ("R, C", "C, R", "R / 2, C, R % 2", "R, C # 64", "C % 4, R, C / 4", "R, C / 2", "R % 8, C",
            "R = 8, C", "R, C % 16", "R, 1 # 2, C", "[R, C] / 2", "R, C / 4, C % 4")
#: DM layouts (cluster, slice, element)
DM = (("1 # 2", "R, 1 # 16", "C"), ("1 # 2", "[R, C / 16] # 256", "C % 16"), ("R / 8", "R % 8, 1 # 32", "C"),
      ("1 # 2", "[C % 2, R] # 256", "C / 2"), ("1 # 2", "[R % 8] # 256", "C"))


def _side(medium: str, levels: tuple[str, ...]) -> Side | None:
    try:
        maps: dict[str, Mapping] = {"Chip": M["1"]}
        if medium == "hbm":
            maps["Element"] = M[levels[0]]
        else:
            maps.update(Cluster=M[levels[0]], Slice=M[levels[1]], Element=M[levels[2]])
    except VisaError:
        return None
    return Side.of(medium, maps, 0)


#: the module (the package ``visa.engines.dma`` re-exports its function ``plan`` under the same name)
PLAN = importlib.import_module("visa.engines.dma.plan")

SIDES = [s for s in ([_side("hbm", (e,)) for e in ELEMENTS] + [_side("dm", d) for d in DM]) if s is not None]


def _outcome(src: Side, dst: Side) -> str:
    try:
        PLAN._check_holds(src, dst, PLAN._buffer(RNGD, src, 32), PLAN._buffer(RNGD, dst, 32), "test")
    except VisaError as err:
        return f"{type(err).__name__}: {err}"
    return "holds"


@pytest.mark.parametrize("k", range(len(SIDES)))
def test_the_check_is_the_references(k: int) -> None:
    src = SIDES[k]
    for dst in SIDES:
        alone, without = alone_and_without("dma.holds-every-index", lambda: _outcome(src, dst))  # noqa: B023
        assert alone == without, (src.label(), dst.label())


def test_the_path_answers_only_for_destinations_holding_everything() -> None:
    dims_of = PLAN._stream_dims
    answered = 0
    for src, dst in itertools.product(SIDES, SIDES):
        if fast_holds.every_index(dims_of(src, False), dst):
            answered += 1
            with fastpaths.disabled("dma.holds-every-index"):
                assert _outcome(src, dst) == "holds"
    assert answered >= len(SIDES)  # (every side holding the whole tensor answers for every source)


@pytest.mark.parametrize("layout", range(len(DM)))
def test_moves_plan_and_run_alike(layout: int) -> None:
    def run() -> tuple[object, ...]:
        ctx = Context.acquire()
        x = np.arange(16 * 32, dtype=np.int32).reshape(16, 32)
        h = HostTensor.from_numpy(x, i32, M["R, C"]).to_hbm(M["1"], M["R, C"], ctx.pdma, 0)
        cl, sl, el = DM[layout]
        try:
            dm = h.to_dm(M[cl], M[sl], M[el], ctx.tdma, 0)
            back = dm.to_hbm(M["R, C"], ctx.tdma, 1 << 28).to_host(M["R, C"], ctx.pdma).numpy()
        except VisaError as err:
            return (type(err).__name__, str(err))
        return (back.tobytes(), [(o.track, o.name, o.start, o.cycles) for o in ctx.schedule.ops])

    alone, without = alone_and_without("dma.holds-every-index", run)
    assert alone == without


@pytest.mark.parametrize("element", ["R, C, [# 1 + 1] / 2", "[# 1 + R] / 5, R, C", "R, [# 2 + C] = 1, C"])
def test_a_one_position_composite_that_is_padding_is_refused_alike(element: str) -> None:
    """A destination digit of one position whose atom is a composite (``[# 1 + 1] / 2``: that position is
    padding) holds no index: the path must not skip the check (a review found the path raising
    InsufficientInputError where the reference raises LayoutError)."""
    import contextlib

    m = AxisSet(R=4, C=8).m
    outcomes = []
    for switch in (contextlib.nullcontext(), fastpaths.disabled("dma.holds-every-index")):
        ctx = Context.acquire()
        with switch:
            try:
                HostTensor.from_numpy(np.zeros((4, 8), np.int32), i32, m["R, C"]).to_hbm(m["1"], m[element],
                                                                                          ctx.pdma, 0)
                outcomes.append(("ok", ""))
            except VisaError as err:
                outcomes.append((type(err).__name__, str(err)))
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "LayoutError", outcomes
