"""The fast path ``dma.written-whole-dm`` (visa/tensors/fast_poison.py): a DM → DM tensor DMA that writes every byte
of its new destination and reads no byte at the destination's offsets skips poisoning them first.  Random DM → DM
moves — onto their own source or a raw handle's bytes (overlapping), apart, padded, partial (a last packet reading
past its source's end), across slices and clusters — leave the DM bytes, their written-state and the schedule (each
operation's name, start and end) of the reference: with the path alone on, with every path on but it, with every
path off."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.engines.test_fast_written_whole import _over_read
from tests.fastpath_switch import alone_and_without
from visa import RNGD, AxisSet, Context, DmTensor, HostTensor, bf16, device, fastpaths, launch
from visa.errors import VisaError
from visa.memory import owed

LIMIT = 2048
UNITS = np.array([*range(8), *range(256, 264)], dtype=np.int64)  # slices 0..7 of clusters 0 and 1

#: destination layouts (Cluster, Slice, Element) of a (T=4, D) tensor: one row a slice, padded rows, two clusters,
#: two rows a slice, the whole tensor in one slice, a transposed split, a padded row or two (left unwritten)
LAYOUTS = [("1 # 2", "T # 256", "D"), ("1 # 2", "T # 256", "D # 72"), ("T / 2 # 2", "T % 2 # 256", "D"),
           ("1 # 2", "T / 2 # 256", "T % 2, D"), ("1 # 2", "1 # 256", "T, D"), ("T / 2 # 2", "T % 2 # 256", "D # 64"),
           ("1 # 2", "D / 16 # 256", "T, D % 16"), ("1 # 2", "1 # 256", "T # 5, D"),
           ("1 # 2", "D / 16 # 256", "T # 6, D % 16")]
ADDRESSES = [0, 64, 120, 128, 200, 256, 384, 512, 640, 768, 1024, 1280]


def _program(seed: int) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    ctx = Context(RNGD)
    spaces = {d: AxisSet(T=4, D=d).m for d in (64, 60)}
    hbm = {}
    for k, (d, m) in enumerate(spaces.items()):
        x = HostTensor.from_numpy(rng.standard_normal((4, d)).astype(np.float32), bf16, m["T, D"], axes="T D")
        hbm[d] = x.to_hbm(m["1"], m["T, D"], ctx.pdma, k << 12)
    plan = [(int(rng.integers(2)), int(rng.integers(len(LAYOUTS))), int(rng.choice(ADDRESSES)),
             int(rng.integers(4))) for _ in range(10)]
    log: list[str] = []

    @device(chip=1)
    def kernel(ctx: Context, h64: Any, h60: Any) -> None:
        live: list[tuple[int, Any]] = [(64, h64.to_dm(m64["1 # 2"], m64["T # 256"], m64["D"], ctx.tdma, 0)),
                                       (60, h60.to_dm(m60["1 # 2"], m60["T # 256"], m60["D"], ctx.tdma, 320))]
        for which, layout, address, how in plan:
            d, src = live[which % len(live)] if how else live[-1]
            m = spaces[d]
            at = int(rng.choice(ADDRESSES))
            try:
                cl, sl, el = (m[s] for s in LAYOUTS[layout])
                if how == 3:  # a raw handle over bytes the new tensor may overlap (its own source's, or fresh ones)
                    src = DmTensor.from_addr(ctx, bf16, m["1"], cl, sl, el, at)
                live.append((d, src.to_dm(cl, sl, el, ctx.tdma, address)))
                log.append(f"{d} {LAYOUTS[layout]} @ {address}")
            except VisaError as e:
                log.append(f"{type(e).__name__}: {e.message[:80]}")

    m64, m60 = spaces[64], spaces[60]
    launch(kernel, ctx, hbm[64], hbm[60])
    image = ctx.memory.chip(0).dm
    known = image.known_bytes(0, LIMIT).reshape(-1, LIMIT)[UNITS]
    data = np.where(known, owed.read_units(image, UNITS, 0, LIMIT), 0)
    schedule = [(op.name, op.start, op.end) for op in ctx.schedule.ops]
    return data, known, schedule, log


@pytest.mark.parametrize("seed", range(12))
def test_written_whole_dm_is_the_reference(seed: int) -> None:
    alone, without = alone_and_without("dma.written-whole-dm", lambda: _program(seed))
    with fastpaths.disabled():
        none = _program(seed)
    for got, want, off in zip(alone, without, none, strict=True):
        if isinstance(got, np.ndarray):
            assert np.array_equal(got, want) and np.array_equal(got, off)
        else:
            assert got == want == off
    assert sum("Error" not in line for line in alone[3]) >= 3  # (moves made, not only refusals)


def test_an_over_read_onto_the_destination_reads_poison_either_way() -> None:
    """A DM → DM move whose last packet reads past its source's end into the new tensor's own first bytes (L7896):
    the reference reads them as poison; so must the path (the program of dma.written-whole's test)."""
    got = alone_and_without("dma.written-whole-dm", _over_read)
    assert got[0].startswith("PoisonError") and len(set(got)) == 1, got


@pytest.mark.parametrize("from_dm", [True, False])
def test_a_refused_move_leaves_its_destination_poisoned_either_way(from_dm: bool) -> None:
    """A move refused at execution (Cluster and Slice on one axis: the DMA would write outside the memory,
    V5015) after its destination's poison fill was skipped for the write that never came: the destination is
    poisoned as the reference leaves it (found by a review, session 38; `dma.written-whole` had it too)."""
    from visa.errors import AddressError, PoisonError

    def run() -> list[str]:
        ctx = Context(RNGD)
        m = AxisSet(T=2, D=64, R=2, Q=2).m
        x = HostTensor.from_numpy(np.ones((2, 64), np.float32), bf16, m["T, D"], axes="T D")
        h = x.to_hbm(m["1"], m["T, D"], ctx.pdma, 0)
        log: list[str] = []

        @device(chip=1)
        def kernel(ctx: Context, h: Any) -> Any:
            h.to_dm(m["Q # 2"], m["[T, R] # 256"], m["D"], ctx.tdma, 512)  # known bytes where the move writes
            s = h.to_dm(m["1 # 2"], m["T # 256"], m["D"], ctx.tdma, 0) if from_dm else h
            with pytest.raises(AddressError):
                s.to_dm(m["T # 2"], m["T # 256"], m["D"], ctx.tdma, 512)
            raw = DmTensor.from_addr(ctx, bf16, m["1"], m["1 # 2"], m["T # 256"], m["D"], 512)
            return raw.to_hbm(m["T, D"], ctx.tdma, 1 << 20)

        out = launch(kernel, ctx, h)
        try:
            log.append(f"read {float(out.to_host(m['T, D'], ctx.pdma).numpy().sum())}")
        except PoisonError:
            log.append("poisoned")
        return log

    assert run() == ["poisoned"]
    with fastpaths.disabled():
        assert run() == ["poisoned"]
