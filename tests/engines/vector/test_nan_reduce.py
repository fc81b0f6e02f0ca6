"""An f32 ``Max``/``Min`` reduction whose every member is NaN gives the reduction's identity (−inf for Max, +inf
for Min, L5398–5402): the reducer starts from the identity (as identity padding does, L5554–5560) and f32 max and
min take the non-NaN operand (``arith.fmax32``/``fmin32``, maximumNumber/minimumNumber), so
``max(…max(max(−inf, NaN), NaN)…) = −inf``.  numpy's ``fmax.reduce`` started from the first member and gave NaN
(found by a review, session 38); a group holding one number gives that number.  Checked against numpy's
``fmax.reduce(…, initial=identity)``, inter-slice and intra-slice, with the fast paths on and off."""

from __future__ import annotations

import numpy as np
import pytest

from visa import RNGD, AxisSet, f32, fastpaths
from visa.engines.common import StreamData, StreamLayout
from visa.engines.vector import InterSliceReduceOpF32, IntraSliceReduceOpF32
from visa.engines.vector.arith import sequential_reduce, tree4
from visa.engines.vector.inter import execute_inter_reduce, plan_inter_reduce
from visa.engines.vector.intra import execute_intra_reduce, plan_intra_reduce

NAN = np.float32(np.nan)


def _numpy(op: str, x: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """numpy's f32 max (min) that skips NaN, from the identity."""
    ufunc, ident = (np.fmax, -np.inf) if op == "Max" else (np.fmin, np.inf)
    return np.asarray(ufunc.reduce(x, axis=axis, initial=ident), np.float32)


def _bits(x: np.ndarray) -> list[int]:
    return np.asarray(x, np.float32).view(np.uint32).reshape(-1).tolist()


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_a_fold_of_nans_is_the_identity(op: str) -> None:
    rows = np.array([[NAN] * 5, [NAN, NAN, 3.0, NAN, NAN], [NAN, -np.inf, NAN, NAN, NAN],
                     [np.inf, NAN, NAN, NAN, -0.0]], np.float32)
    got = sequential_reduce(op, "f32", rows)
    assert _bits(got) == _bits(_numpy(op, rows, 1))
    assert got[0] == (-np.inf if op == "Max" else np.inf) and got[1] == 3.0
    assert _bits(sequential_reduce(op, "f32", tree4(op, "f32", rows[:, :4])[None, :])) == \
        _bits(_numpy(op, rows[:, :4], (0, 1)).reshape(1))


def _both(run: object) -> tuple[list[int], list[int]]:
    on = run()  # type: ignore[operator]
    with fastpaths.disabled():
        off = run()  # type: ignore[operator]
    return on, off


@pytest.mark.parametrize("op", [InterSliceReduceOpF32.Max, InterSliceReduceOpF32.Min])
@pytest.mark.parametrize("ring", ["G, X", "G, 1 # 2"])
def test_the_inter_slice_reduce_of_nans(op: InterSliceReduceOpF32, ring: str) -> None:
    """Two slices, lanes 0 and 2–7 NaN on both, lane 1 a number on one: the identity and the number, on and off."""
    m = AxisSet(G=1, R=2, X=2, T=1, L=8).m
    layout = StreamLayout(f32, m["1"], m["1 # 2"], m["G, R"], m["T"], m["L"])
    values = np.full(layout.shape, NAN, np.float32)
    values[0, 0, 1, 0, 1] = 3.0
    known = np.ones(layout.shape, bool)
    want = _numpy(op.name, values[0, 0], 0).reshape(-1)  # over R (the slices)

    def run() -> list[int]:
        cfg = plan_inter_reduce(RNGD, layout, op, m[ring], m["T"])
        out = execute_inter_reduce(cfg, StreamData(values, known))
        v, k = np.broadcast_arrays(np.asarray(out.values), np.asarray(out.known))
        return _bits(np.where(k, v, np.float32(0))) + [int(b) for b in k.reshape(-1)]  # every lane, in place

    on, off = _both(run)
    assert on == off  # lane for lane, known-mask included
    n = len(on) // 2
    got = [b for b, k in zip(on[:n], on[n:], strict=True) if k]
    assert sorted(set(got)) == sorted(set(_bits(want)))


#: (Time, Packet, out Time, out Packet) over ``H``: the time steps only, the lanes' tree too, padded lanes.
INTRA = [("H", "1 # 4", "1", "1 # 4"), ("H / 4", "H % 4", "1", "1 # 4"), ("A, H / 4", "H % 4", "A", "1 # 4"),
         ("H / 2", "H % 2 # 4", "1", "1 # 4")]


@pytest.mark.parametrize("op", [IntraSliceReduceOpF32.Max, IntraSliceReduceOpF32.Min])
@pytest.mark.parametrize("case", INTRA)
def test_the_intra_slice_reduce_of_nans(op: IntraSliceReduceOpF32, case: tuple[str, str, str, str]) -> None:
    """Over H = 8 (A = 2 rows): row 0 every member NaN, row 1 one number among NaNs: the identity and the
    number, on and off; padded lanes hold the identity (L5554–5560)."""
    ti, pa, ot, op_ = case
    m = AxisSet(A=2, H=8).m
    lay = StreamLayout(f32, m["1"], m["1"], m["1"], m[ti], m[pa])
    cfg = plan_intra_reduce(RNGD, lay, op, "H", m[ot], m[op_], None)
    ident = np.float32(-np.inf if op.name == "Max" else np.inf)
    a = 2 if "A" in ti else 1
    logical = np.full((a, 8), NAN, np.float32)  # [A, H]
    logical[-1, 5] = 7.0 if a == 2 else NAN
    shape = (1, 1, 1, m[ti].size, m[pa].size)
    vals = np.full(shape, ident, np.float32)
    lanes = m[pa.split(" # ")[0]].size
    vals[0, 0, 0, :, :lanes] = logical.reshape(m[ti].size, lanes)  # time-major, lanes minor: the order of A, H
    known = np.ones(shape, bool)
    want = _numpy(op.name, logical, 1)

    def run() -> list[int]:
        out, _ = execute_intra_reduce(cfg, StreamData(vals, known), None)
        return _bits(np.asarray(out.values)[0, 0, 0, :, 0])

    on, off = _both(run)
    assert on == off == _bits(want)
