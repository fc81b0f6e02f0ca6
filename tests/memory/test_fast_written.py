"""``memory.written-memo`` (visa/memory/fast_written.py) against asking the mask each time (issue 24): masked
fetches of a DM tensor with a padded lane, repeated between changes of the memory under it — bytes poisoned
(unmasked or in the padding), the tensor written again, a DMA over it, a byte unwritten — give the same streams
(values and known-mask) and the same schedule with the memo on as off; an image's stamp changes at every write,
and an image that handed out its arrays is not remembered."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fastpath_switch import skip_unless
from visa import RNGD, AxisSet, Context, PadValue, fastpaths, i32
from visa.memory import fast_written
from visa.memory.units import enabled_units
from visa.testing import place_dm

AX = AxisSet(C=2, S=256, V=4, W=7)
M = AX.m
ELEMENT = 32 * 4  # bytes of a slice's tensor (4 rows of 8 lanes of i32)

STEPS = st.lists(st.sampled_from(["fetch", "poison-lane", "poison-pad", "rewrite", "dma", "unwrite"]),
                 min_size=1, max_size=8)


def _run(steps: list[str], seed: int) -> list[Any]:
    """Run ``steps`` over a tensor at DM address 0 (its lane 7 never written), fetching it masked after each."""
    ctx = Context(RNGD)
    rng = np.random.default_rng(seed)
    x = rng.integers(-1000, 1000, size=(2, 256, 4, 7)).astype(np.int32)
    t = place_dm(ctx, x, i32, M["1"], M["C"], M["S"], M["V, W # 8"], 0, axes="C S V W")
    other = place_dm(ctx, x[::-1].copy(), i32, M["1"], M["C"], M["S"], M["V, W # 8"], 1 << 12, axes="C S V W")
    dm = ctx.memory.chip(0).dm
    seen: list[Any] = []
    for k, step in enumerate(steps):
        if step == "poison-lane":  # an unmasked byte of one slice (row k % 4, lane 2)
            dm.poison(32 * (k % 4) + 8, 32 * (k % 4) + 9, np.array([k % 512]))
        elif step == "poison-pad":  # the padded lane of every slice: still masked
            dm.poison(28, 32)
        elif step == "rewrite":
            t = place_dm(ctx, x + k, i32, M["1"], M["C"], M["S"], M["V, W # 8"], 0, axes="C S V W")
        elif step == "dma":
            t = other.view().to_dm(M["C"], M["S"], M["V, W # 8"], ctx.tdma, 0)
        elif step == "unwrite":
            on = np.zeros((2, 256, 1), dtype=bool)
            on[1, k % 256] = True
            dm.unwrite(np.array([40 + k % 8]), on)
        s = ctx.main.begin(t.view()).fetch(i32, M["V"], M["W # 8"], pad_value=PadValue.Zero)
        seen.append((np.asarray(s.data.values).copy(), np.asarray(s.data.known).copy()))
    seen.append([(op.track, op.name, op.start, op.cycles) for op in ctx.schedule.ops])
    return seen


@settings(max_examples=25, deadline=None)
@given(STEPS, st.integers(0, 2**32 - 1))
def test_remembered_answers_are_the_masks(steps: list[str], seed: int) -> None:
    with fastpaths.only("memory.written-memo", "fetch.masked-known", "fetch.all-known", "fetch.loop-nest"):
        fast = _run(steps, seed)
    with fastpaths.disabled("memory.written-memo"):
        reference = _run(steps, seed)
    for got, want in zip(fast[:-1], reference[:-1], strict=True):
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert fast[-1] == reference[-1]


@skip_unless("memory.written-memo")
def test_stamps_change_with_every_write_and_handed_images_are_asked() -> None:
    ctx = Context(RNGD)
    x = np.arange(2 * 256 * 28, dtype=np.int32).reshape(2, 256, 4, 7)
    place_dm(ctx, x, i32, M["1"], M["C"], M["S"], M["V, W # 8"], 0, axes="C S V W")
    dm = ctx.memory.chip(0).dm
    units = enabled_units(dm, np.ones(dm.lead_shape, dtype=bool))
    loops = ((2, 8), (7, 1))
    before = dm._stamp  # noqa: SLF001
    assert fast_written.elements_written(i32, units, 0, loops)
    assert fast_written._key(units) is not None  # noqa: SLF001 (remembered)
    dm.poison(4, 5)  # an unmasked byte: a new stamp, a new answer
    assert dm._stamp != before  # noqa: SLF001
    assert not fast_written.elements_written(i32, units, 0, loops)
    _ = dm.written  # handed out: a write through it would reach no stamp
    assert fast_written._key(units) is None  # noqa: SLF001
