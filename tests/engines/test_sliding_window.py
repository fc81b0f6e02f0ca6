"""A sliding window read through a linear combination (manual L1006–1016): the fetch reads overlapping rows of
a buffer, and the schedule records the bytes the read may touch.

Regression (issue 27): a sliding-window fetch through a *relabelled view* of a linear combination failed with
``RelationError`` in the schedule's footprint code (the tensor's own relabelling worked; no test had the view
path).
"""

from __future__ import annotations

import numpy as np
import pytest

from visa import AxisSet, Context, i32
from visa.mapping import Mapping
from visa.schedule import footprint
from visa.testing import place_dm

AX = AxisSet(X=16, N=8, F=3)
m = AX.m
WINDOW = "$(N : 1, F : 2) # 16"  # (N, F) at N + 2F, the manual's sliding window (L1011–1016), padded to X


def _ctx() -> Context:
    ctx = Context.acquire()
    ctx.num_chips = 1
    return ctx


@pytest.mark.parametrize("through", ["view", "tensor"])
def test_sliding_window_fetch_and_commit_L1011(through: str) -> None:
    ctx = _ctx()
    x = np.arange(16, dtype=np.int32) * 3 + 1
    t = place_dm(ctx, x, i32, m["1"], m["1 # 2"], m["1 # 256"], m["X"], 0)
    src = t.view().relabel(m[WINDOW]) if through == "view" else t.relabel(Element=m[WINDOW]).view()
    out = (ctx.main.begin(src).fetch(i32, m["F"], m["N"]).collect(m["F"], m["N"])
           .commit(m["F, N"], 1 << 12))
    want = np.array([[x[n + 2 * f] for n in range(8)] for f in range(3)])
    assert np.array_equal(out.logical(axes="F N"), want)
    # the pass's read footprint: the view's, the 12 positions the window reaches (N + 2F ≤ 11), not the padding
    # 12..15; the relabelled tensor's, its whole extent (a tensor covers its bytes)
    op = ctx.schedule.ops[-1]
    spans = [s for s in op.reads.spans if s.memory == "dm"]
    assert len(spans) == 1
    covered = {b for lo, hi in zip(spans[0].lo.tolist(), spans[0].hi.tolist(), strict=True) for b in range(lo, hi)}
    assert covered == set(range((12 if through == "view" else 16) * 4))


def test_cover_of_a_linear_combination_L1006() -> None:
    # 1 + Σ (size_k − 1)·n_k positions, each reachable; a padding past them is not
    assert m[WINDOW].cover().tolist() == [True] * 12 + [False] * 4
    # strides that skip positions: $(A : 3, B : 2) with A = B = 2 reaches 0, 2, 3, 5 of 6
    ax = AxisSet(A=2, B=2)
    assert ax.m["$(A : 3, B : 2)"].cover().tolist() == [True, False, True, True, False, True]
    # a mapping without a linear combination: cover is validity
    plain: Mapping = m["N # 12"]
    assert plain.cover().tolist() == plain.validity().tolist()
    view = place_dm(_ctx(), np.zeros(16, dtype=np.int32), i32, m["1"], m["1 # 2"], m["1 # 256"], m["X"], 0)
    assert footprint(view.view().relabel(m[WINDOW]))  # no RelationError
