"""HostTensor.from_numpy's fast path (visa/tensors/handles.py ``host_range_check`` / ``as_storage``: an array
already of the type's storage, whose storage holds exactly the type's values, is taken as is) against the slow
path (the same values through float64 / int64), for every visa dtype (issue 15 review, docs/manual-notes.md).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import dtypes as dt
from visa.tensors.handles import to_storage

FLOATS = [dt.f32, dt.f16, dt.bf16, dt.f8e4m3, dt.f8e5m2]
INTS = [dt.i4, dt.i5, dt.i8, dt.i9, dt.i16, dt.i32]


def _outcome(dtype: type[dt.Scalar], arr: np.ndarray, overflow: str) -> tuple[str, object]:
    try:
        out = to_storage(dtype, arr, "test", overflow=overflow)
    except dt.DtypeError as err:
        return "refused", err.message
    assert out.dtype == dtype.storage
    return "ok", out


@pytest.mark.parametrize("f", FLOATS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("overflow", ["error", "saturate", "inf", "nan"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_float_fast_path_is_the_slow_path(f: type[dt.FloatScalar], overflow: str, data: st.DataObject) -> None:
    """Every bit pattern of the storage (NaN, ±inf, ±0, subnormals, ±max): taken as is, or refused, exactly as
    its float64 values are."""
    n = 1 << (8 * f.bits_dtype.itemsize)
    raw = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=64))
    fast_in = np.array(raw, dtype=np.int64).astype(f.bits_dtype).view(f.storage)
    slow_in = fast_in.astype(np.float64)
    fast, slow = _outcome(f, fast_in, overflow), _outcome(f, slow_in, overflow)
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "ok":
        a = np.asarray(fast[1]).astype(np.float64)
        b = np.asarray(slow[1]).astype(np.float64)
        assert np.array_equal(np.isnan(a), np.isnan(b))
        keep = ~np.isnan(a)
        assert np.array_equal(a[keep], b[keep]) and np.array_equal(np.signbit(a[keep]), np.signbit(b[keep]))


@pytest.mark.parametrize("i", INTS, ids=lambda i: i.__name__)
@pytest.mark.parametrize("overflow", ["error", "saturate", "wrap"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_int_fast_path_is_the_slow_path(i: type[dt.IntScalar], overflow: str, data: st.DataObject) -> None:
    """Every value of the storage, the narrow types' out-of-range ones too (i4 in int8, i9 in int16): the
    storage-typed array gives what its int64 values give (refused, wrapped or clamped alike)."""
    info = np.iinfo(i.storage)
    raw = data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1, max_size=64))
    fast, slow = (_outcome(i, np.array(raw, dtype=d), overflow) for d in (i.storage, np.int64))
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "ok":
        assert np.array_equal(np.asarray(fast[1]), np.asarray(slow[1]))
        assert int(np.min(fast[1])) >= i.min and int(np.max(fast[1])) <= i.max


def test_narrow_int_storage_out_of_range_is_refused() -> None:
    """An int8 array holding 8 is not an i4 array: the fast path must not take it."""
    with pytest.raises(dt.DtypeError):
        to_storage(dt.i4, np.array([8], dtype=np.int8), "test")
    with pytest.raises(dt.DtypeError):
        to_storage(dt.i9, np.array([256], dtype=np.int16), "test")
