"""A stream reads and writes the memories of its own context only (manual ``Context::acquire()``, L39).

Regressions: ``begin`` read another context's view from the stream's own DM and ``commit_view`` wrote another
context's tensor into the stream's own DM (the tensor kept its old values): silent wrong numbers; ``align`` used
another device's TRF.  Each is now refused before anything is read, written or recorded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from visa import RNGD, AxisSet, CollectTensor, Context, TrfAddress, bf16, i8
from visa import dtypes as dt
from visa.engines.common import StreamLayout
from visa.errors import VisaError
from visa.testing import make_stream, place_dm, place_trf

M = AxisSet(A=32).m


def _dm(ctx: Context, values: Any, address: int = 0) -> Any:
    return place_dm(ctx, values, i8, M["1"], M["1 # 2"], M["1 # 256"], M["A"], address)


def _refused(err: pytest.ExceptionInfo[VisaError], call: str) -> None:
    assert err.value.call == call and "another context" in str(err.value) and err.value.fix


def test_begin_refuses_a_view_of_another_context_L39() -> None:
    mine, other = Context.acquire(RNGD), Context.acquire(RNGD)
    _dm(mine, np.arange(32)[::-1])
    theirs = _dm(other, np.arange(32))
    with pytest.raises(VisaError) as err:
        mine.main.begin(theirs.view())
    _refused(err, "begin")
    with pytest.raises(VisaError) as err:
        mine.main.begin_interleaved(AxisSet(A=32, I=2).m["I"], theirs.view(), theirs.view())
    _refused(err, "begin_interleaved")


def test_commit_view_refuses_a_tensor_of_another_context_before_writing_L39() -> None:
    mine, other = Context.acquire(RNGD), Context.acquire(RNGD)
    src = _dm(mine, np.arange(32))
    dst = _dm(other, np.zeros(32, dtype=np.int8), address=64)
    stream = mine.main.begin(src.view()).fetch(i8, M["1"], M["A"]).collect(M["1"], M["A"])
    written = mine.memory.chip(0).dm.written.copy()
    with pytest.raises(VisaError) as err:
        stream.commit_view(dst.view())
    _refused(err, "commit_view")
    assert np.array_equal(mine.memory.chip(0).dm.written, written) and not mine.schedule.ops
    assert dst.logical().tolist() == [0] * 32


def test_align_refuses_a_trf_tensor_of_another_context_L39() -> None:
    mine, other = Context.acquire(RNGD), Context.acquire(RNGD)
    m = AxisSet(M=32, N=8, K=16).m
    rng = np.random.default_rng(39)
    layout = StreamLayout(bf16, m["1"], m["1 # 2"], m["1 # 256"], m["M"], m["K"])
    stream = make_stream(mine.main, CollectTensor, layout, dt.random_values(bf16, (32, 16), rng), axes="M K")
    trf = place_trf(other, dt.random_values(bf16, (8, 16), rng), bf16, m["1"], m["1 # 2"], m["1 # 256"], m["N"],
                    m["K"], TrfAddress.Full, axes="N K")
    with pytest.raises(VisaError) as err:
        stream.align(m["M"], m["K # 32"], trf)
    _refused(err, "align")
