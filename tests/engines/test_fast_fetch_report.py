"""``fetch.report-memo`` (visa/engines/fast_fetch_report.py): a fetch's engine report kept per configuration,
addresses and layout is the report the fetch builds (L2060, L2897–2941), for random fetches of random tensors
(dtype, element count, address, context, zero point, interleaved pairs), asked twice, with the path on and off —
the schedule's cycles the same."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from visa import RNGD, AxisSet, Context, fastpaths, i8, i32
from visa.testing import place_dm


def _reports(dtype: Any, e: int, address: int, kind: str, zp: int, pair: bool) -> tuple[Any, ...]:
    ctx = Context(RNGD)
    ax = AxisSet(C=2, S=256, E=e, I=2)
    m = ax.m
    per = 32 // (dtype.size_bits // 8)
    x = np.ones((2, 256, e), dtype=dtype.storage)
    t = place_dm(ctx, x, dtype, m["1"], m["C"], m["S"], m["E"], address, axes="C S E")
    u = place_dm(ctx, x, dtype, m["1"], m["C"], m["S"], m["E"], address + 4 * e, axes="C S E")
    tu = getattr(ctx, kind)
    out = []
    for _ in range(2):
        if pair:
            s = tu.begin_interleaved(m["I"], t.view(), u.view()).fetch(dtype, m[f"E / {per}, I"], m[f"E % {per}"])
        elif zp:
            s = tu.begin(t.view()).fetch_with_zero_point(dtype, m[f"E / {per}"], m[f"E % {per}"], zp)
        else:
            s = tu.begin(t.view()).fetch(dtype, m[f"E / {per}"], m[f"E % {per}"])
        out.append(s.reports[-1])
        if pair:
            continue  # (the report is the fetch's; the pass is left open)
        s.commit(m["E"], 0) if kind == "main" else s.collect(m[f"E / {per}"], m[f"E % {per}"]).to_vrf(m["E"], 0)
    return (*out, tuple(op.cycles for op in ctx.schedule.ops), tuple(op.start for op in ctx.schedule.ops))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([i8, i32]), st.sampled_from([32, 64, 96]), st.sampled_from([1024, 4096, 4128]),
       st.sampled_from(["main", "sub"]), st.sampled_from([0, 0, 2]), st.booleans())
def test_the_kept_report_is_the_one_built(dtype: Any, e: int, address: int, kind: str, zp: int, pair: bool) -> None:
    pair = pair and kind == "main" and not zp
    fast = _reports(dtype, e, address, kind, zp, pair)
    with fastpaths.disabled("fetch.report-memo"):
        reference = _reports(dtype, e, address, kind, zp, pair)
    assert fast[0] == fast[1] == reference[0] == reference[1]
    assert fast[2:] == reference[2:]
