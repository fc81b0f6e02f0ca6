"""``vector.intra-valid-split`` (visa/engines/vector/fast_intra_valid.py): the intra-slice reducer's plan (manual
L5359–5584) with its validity masks as broadcasts over the slices is the reference plan, mask by mask and field by
field (the VCG's configuration included), for reductions in Time and in Packet, padded axes in the stream, padded
slices and slices sharing an axis with the stream (the path not taken); and the row max of
``benchmarks/bench_first_launch.py``, at 64 columns, gives the same values and cycles with the path on and off."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.fastpath_switch import needs
from visa import RNGD, AxisSet, BranchMode, Context, HostTensor, fastpaths, i32
from visa.engines.common import StreamLayout
from visa.engines.vector import IntraSliceReduceOpI32
from visa.engines.vector.intra import IntraReduceConfig, plan_intra_reduce
from visa.errors import VisaError

AX = AxisSet(A=8, B=6, R=16, X=4, Y=2)
M = AX.m
#: (slice, time, packet, otime, opacket): R reduced
CASES = [
    ("A / 2", "R", "A % 2 # 4", "1", "A % 2 # 4"),  # in Time (T21, L5405; A in Slice and Packet: not taken)
    ("A / 2, X", "A % 2, R / 4", "R % 4", "A % 2", "1 # 4"),  # in Packet (a tree) and Time
    ("A", "R / 4", "R % 4", "1", "1 # 4"),  # in Packet and Time
    ("A", "R # 24 / 4", "R # 24 % 4", "1", "1 # 4"),  # padded R: identity padding (the VCG)
    ("A # 12", "R", "1 # 4", "1", "1 # 4"),  # padded slices: the path not taken
    ("A / 2, R / 8", "R % 8", "A % 2 # 4", "1", "A % 2 # 4"),  # R in Slice too: refused the same way
    ("A / 2", "R, B", "A % 2 # 4", "B", "A % 2 # 4"),  # a kept axis in Time
]


def _plan(case: tuple[str, ...], cluster: str = "Y") -> IntraReduceConfig | tuple[type, str]:
    slice_, time, packet, otime, opacket = case
    lay = StreamLayout(i32, M["1"], M[cluster], M[slice_], M[time], M[packet])
    try:
        return plan_intra_reduce(RNGD, lay, IntraSliceReduceOpI32.AddSat, "R", M[otime], M[opacket], None)
    except VisaError as e:
        return type(e), str(e)


@pytest.mark.parametrize("cluster", ["Y", "1 # 2"])  # (a padded cluster: the path not taken)
@pytest.mark.parametrize("case", CASES)
def test_split_masks_are_the_reference(case: tuple[str, ...], cluster: str) -> None:
    fast = _plan(case, cluster)
    with fastpaths.disabled("vector.intra-valid-split"):
        ref = _plan(case, cluster)
    if not isinstance(ref, IntraReduceConfig):
        assert fast == ref
        return
    assert isinstance(fast, IntraReduceConfig)
    for name in ("op", "dtype", "axis", "out", "packet_reduce", "slots", "steps", "vcg"):
        assert getattr(fast, name) == getattr(ref, name)
    for name in ("perm", "contributes", "relevant", "out_valid"):
        a, b = getattr(fast, name), getattr(ref, name)
        assert a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


def test_the_masks_are_broadcasts() -> None:
    needs("vector.intra-valid-split")
    cfg = _plan(CASES[3])  # (padded R: the VCG asked of the broadcast masks)
    assert isinstance(cfg, IntraReduceConfig)
    assert cfg.contributes.strides[:3] == (0, 0, 0) and cfg.relevant.strides[:3] == (0, 0, 0)
    assert cfg.vcg is not None


def _row_max() -> tuple[np.ndarray, tuple[int, ...]]:
    ax = AxisSet(R=512, C=64)
    m = ax.m
    x = np.random.default_rng(3).integers(-(2**31), 2**31 - 1, size=(512, 64), dtype=np.int32)
    ctx = Context(RNGD)
    xh = HostTensor.from_numpy(x, i32, m["R, C"]).to_hbm(m["1"], m["R, C"], ctx.pdma, 0)
    dm = xh.to_dm(m["R / 256"], m["R % 256"], m["C"], ctx.tdma, 0)
    s: Any = (ctx.main.begin(dm.view()).fetch(i32, m["C / 4"], m["C % 4 # 8"])
              .collect(m["C / 4"], m["C % 4 # 8"])
              .vector_init().vector_intra_slice_branch(BranchMode.Unconditional)
              .vector_trim_way4(m["C % 4"])
              .vector_intra_slice_reduce("C", m["1"], m["1 # 4"], IntraSliceReduceOpI32.Max)
              .vector_pad_way8(m["1 # 8"]).vector_final().commit(m["1 # 8"], 1 << 16))
    got = s.to_hbm(m["R"], ctx.tdma, 1 << 28).to_host(m["R"], ctx.pdma).numpy()
    assert np.array_equal(got, x.max(axis=1))
    return got, tuple(op.cycles for op in ctx.schedule.ops)


def test_row_max_is_the_same_with_the_paths_off() -> None:
    fast = _row_max()
    with fastpaths.disabled("vector.intra-valid-split", "fetch.padded-known", "fetch.mask-rows"):
        ref = _row_max()
    with fastpaths.disabled():
        every_off = _row_max()
    assert np.array_equal(fast[0], ref[0]) and fast[1] == ref[1] == every_off[1]
