"""The convolution and the i4-weight GEMV examples: their schedules (issue 27 items 1–3).

``test_contraction_kernels.py`` runs each example's ``main()`` against numpy; here the kernels run on a context
of the test's, so that the passes' places in the schedule and their cycles can be read: the TRF load on the sub
context first, the contraction on the main context after it, at the cycles its aligner configuration implies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.example_loader import load_example
from visa import Context, HostTensor, launch
from visa.hw import RNGD
from visa.mapping.axes import AXES_ATTR


def _launch(name: str, *args: tuple[str, str]) -> list[Any]:
    """Launch example ``name`` on random HBM tensors (one per ``(dtype name, layout)``, 256 MiB apart) and return
    its Tensor Unit operations (the main and sub contexts') in schedule order."""
    ex = load_example(name)
    m = getattr(ex, AXES_ATTR).m
    ctx = Context.acquire()
    rng = np.random.default_rng(0)
    tensors = [HostTensor.rand(getattr(ex, dtype), m[layout], rng).to_hbm(m["1"], m[layout], ctx.pdma, k << 28)
               for k, (dtype, layout) in enumerate(args)]
    launch(ex.kernel, ctx, *tensors)
    return [op for op in ctx.schedule.ops if op.track in ("main", "sub")]


def test_conv2d_schedule_and_cycles_L3737_L3745() -> None:
    load, conv = _launch("conv2d", ("bf16", "N, Y, K, X"), ("bf16", "C, K, Fh, Fw"))
    assert (load.track, conv.track) == ("sub", "main") and conv.start >= load.end  # the TRF is read once written
    engines = {r.engine: r for r in conv.engines}
    details = dict(engines["aligner"].details)
    assert (details["collect_flits"], details["feed_flits"], details["shifts"], details["shift_stride"]) == (3, 2, 3, 1)
    steps = 30 * 2 * 3 * 32 * 3  # H × C/8 × Fh × K × Fw: one computation packet per cycle
    assert engines["aligner"].cycles == steps
    assert engines["fetch"].cycles == 30 * 2 * 3 * 32 * 2  # each row read once per group: two flits, reused 3×
    # aligner-bound: the command's overhead (visa/engines/timing.py), the fills, then the aligner's steps
    assert conv.cycles == RNGD.timing.full_command_cycles + sum(r.latency for r in conv.engines) + steps


def test_gemv_i4_schedule_and_dual_channel_L4145_L2140() -> None:
    load, gemv = _launch("gemv_i4", ("i4", "I, J"), ("i8", "J"))
    assert gemv.start >= load.end and (0, "sub") in gemv.lanes  # dual channel: the sub context's channel too
    engines = {r.engine: r for r in gemv.engines}
    assert dict(engines["aligner"].details)["reg_type"] == 1  # i4 weights read as i8 (L4145)
    assert engines["fetch"].cycles == 8 and engines["aligner"].cycles == 8  # 512 B at 64 B/cycle; 8 packets
