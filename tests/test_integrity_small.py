"""The smaller integrity findings of issue 23 (finding 8): each a wrong answer or an unclear failure a few lines
of user code reached, now a clear refusal before anything changes, or a right answer."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa.kernels import bounds

# ---------------------------------------------------------------------------------------------------------
# visa.kernels.bounds is a bound for bf16-subnormal results too
# ---------------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=2.0**-140, max_value=2.0**-120), st.booleans())
def test_bounds_hold_for_bf16_subnormal_results(y: float, negative: bool) -> None:
    """Rounding a value below bf16's least normal (2**-126) to bf16 errs by up to half its spacing 2**-133, which
    ``b·|y|`` alone does not cover: every bound that ends in a bf16 rounding covers it."""
    y = -y if negative else y
    want = np.array([y])
    err = abs(float(np.array(y, np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)) - y)
    for bound in (bounds.add(want), bounds.mul(want), bounds.swiglu(want), bounds.rms_norm(want, 8),
                  bounds.softmax(np.abs(want), 8, 0.0)):
        assert err <= float(bound[0]), (y, err, float(bound[0]))
    x, w = np.array([[y]]), np.array([[1.0]])
    assert err <= float(bounds.gemm(x, w, 1)[0, 0])
    _, ar = bounds.all_reduce(np.array([[y], [0.0]]), 1)
    assert err <= float(ar[0])
