"""Device images reuse the memory of dead ones (visa.memory.arena, issue 15), and read exactly as fresh ones.

The reuse must be invisible: whatever the dead image went through — dense and strided writes, masked and
4-bit stores, poisons, unwrites, DMA marks, masks written byte by byte (the random steps of the per-byte model
in ``test_pages``) — the next image of its shape holds zero bytes, no byte written and every page ``NONE``
(manual L134–140: a memory starts poisoned).  And memory that a caller still sees through an array the image
handed out is never handed to another image.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import visa.memory.images as images
from tests.memory.gemm_run import run_gemm
from tests.memory.test_pages import LEAD, Model, _step
from visa import axes, fastpaths, m
from visa.memory.arena import Arena
from visa.memory.images import DenseImage
from visa.memory.pages import NONE

axes(I=512, J=512, K=1024)  # the GEMM example's



def _fresh(img: DenseImage) -> None:
    assert not img.read_data().any()
    assert (img.state == NONE).all()
    assert not img.known_bytes(0, img.nbytes).any()
    assert not img.written.any()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 70), page=st.integers(1, 20), seed=st.integers(0, 2**32 - 1),
       ops=st.lists(st.integers(0, 10), min_size=1, max_size=12))
def test_a_reused_image_reads_as_a_fresh_one(n: int, page: int, seed: int, ops: list[int]) -> None:
    mine = Arena(least=1)
    saved, images.ARENA = images.ARENA, mine
    try:
        rng = np.random.default_rng(seed)
        img = DenseImage((*LEAD, n), page_bytes=page)
        ref = Model(n)
        for op in ops:
            _step(img, ref, rng, op)
        del img  # (no cycle holds an image: it dies here)
        again = DenseImage((*LEAD, n), page_bytes=page)
        assert mine.reused == 2  # the bytes and the mask
        _fresh(again)
    finally:
        images.ARENA = saved


def _address(img: DenseImage) -> int:
    """Where the image's bytes are."""
    return int(img.read_data().__array_interface__["data"][0])


def _written(shape: tuple[int, int], count: int, value: int) -> DenseImage:
    """A new image whose first unit holds ``count`` bytes of ``value``, written (a DMA's way: bytes, then mark)."""
    img = DenseImage(shape)
    img.flat_data(0, count)[:count] = value
    img.mark_written(slice(0, 1), 0, count)
    return img


def test_the_next_image_of_a_shape_takes_the_dead_ones_memory(arena: Arena) -> None:
    img = _written((4, 4096), 100, 7)
    address = _address(img)
    del img
    again = DenseImage((4, 4096))
    assert _address(again) == address
    assert arena.reused == 2
    _fresh(again)
    other = DenseImage((4, 2048))  # another shape: new memory
    assert arena.reused == 2
    _fresh(other)


def test_memory_a_caller_still_sees_is_not_reused(arena: Arena) -> None:
    img = DenseImage((2, 8192))
    held = img.data  # the image's bytes, handed out (and written)
    held[0, :10] = 5
    del img
    again = DenseImage((2, 8192))
    assert not np.shares_memory(again.read_data(), held)
    assert held[0, :10].tolist() == [5] * 10  # what the caller holds is unchanged
    _fresh(again)
    del again, held
    third = DenseImage((2, 8192))
    assert arena.reused >= 2  # released now: one of the two dead images' memory, cleared
    _fresh(third)


def test_a_flat_image_keeps_its_images_memory_out_of_reuse(arena: Arena) -> None:
    img = DenseImage((2, 4096))
    img.flat_data(0, 4096)[:4096] = 1
    img.mark_written(slice(0, 1), 0, 4096)
    flat = img.flat_image()
    del img
    again = DenseImage((2, 4096))
    assert not np.shares_memory(again.read_data(), flat.read_data())
    assert flat.all_written(0, 4096)


@pytest.mark.skipif(not images.ARENA.enabled or not fastpaths.get("memory.arena").on,
                    reason="reuse turned off (VISA_FASTPATHS: memory.arena)")
def test_a_kernel_runs_alike_on_reused_memory() -> None:
    """The GEMM example's kernel (manual L466–525) twice in one process, the second time on the memory of the
    first one's context: the same result, byte for byte, and its DM and TRF images did reuse that memory."""
    outs = []
    before = images.ARENA.reused
    for _ in range(2):
        gc.collect()  # the previous context dies here
        ctx, bits = run_gemm(7)
        outs.append(bits)
        del ctx
    assert images.ARENA.reused >= before + 4  # DM and TRF, bytes and masks
    np.testing.assert_array_equal(outs[0], outs[1])


def test_writing_m_does_not_keep_the_callers_locals_alive() -> None:
    """``m["..."]`` reads its caller's locals only for a ``{Name}`` escape: reading them would leave CPython's
    snapshot of them on the frame, and a context let go of after it would live on (and its memory with it)."""
    import weakref

    class Held:
        pass

    def kernel_writer() -> bool:
        ctx = Held()
        gone = weakref.ref(ctx)
        m["I, K"]
        del ctx
        return gone() is None  # (asked while this frame still runs: a frame's end drops any snapshot)

    assert kernel_writer()
    inner = m["K"]  # noqa: F841 (read by the escape below)
    assert m["I, {inner}"] == m["I, K"]


def test_a_full_arena_lets_go_of_memory_still_held_first(arena: Arena) -> None:
    """Images whose arrays stay alive fill the arena; an image that dies after them is still kept (a held
    buffer is the one let go), and the next image reuses it."""
    arena.per_shape = 2
    images_ = [DenseImage((2, 4096)) for _ in range(2)]
    held = [img.data for img in images_]  # arrays that outlive their images
    del images_
    last = _written((2, 4096), 8, 3)
    address = _address(last)
    del last
    again = DenseImage((2, 4096))
    assert _address(again) == address
    _fresh(again)
    assert all(not np.shares_memory(again.read_data(), h) for h in held)


def test_the_memory_given_back_last_is_taken_first(arena: Arena) -> None:
    """A kernel run after another reuses the pages it just wrote (mapped), not an older image's."""
    first, second = DenseImage((2, 4096)), DenseImage((2, 4096))
    address = _address(second)
    del first
    del second
    assert _address(DenseImage((2, 4096))) == address


def test_a_mask_written_through_a_held_array_does_not_reach_the_next_image(arena: Arena) -> None:
    """``written`` hands out the mask, which its holder may write after the pages settled (a True under a page
    NONE, where the mask is otherwise zero): the arena cannot clear the MIXED pages only (review of issue 15)."""
    img = DenseImage((2, 3, 32), page_bytes=8)
    held = img.written
    img.poison(0, 32)  # every page NONE, no mask kept
    held[1, 2, 5] = True
    del held, img
    again = DenseImage((2, 3, 32), page_bytes=8)
    assert arena.reused == 2
    again.scatter(np.array([6]), np.array([1], np.uint8), np.zeros((2, 3, 1), bool))  # no byte: page stays NONE
    again.mark_written(slice(5, 6), 4, 5)  # unit 5, byte 4: its page 0 MIXED, byte 5 untouched
    assert not again.known_bytes(5, 6)[1, 2].any()
    _fresh(DenseImage((2, 3, 32), page_bytes=8))


def test_freed_memory_the_allocator_keeps_goes_back_when_asked() -> None:
    """``release_freed`` trims what glibc keeps once ``memory.arena`` raised its thresholds: 64 MiB allocated and
    freed stay in the heap (the point of the thresholds) until asked for; without them (the reference, other
    systems) it does nothing and says so."""
    from visa.memory.arena import KEPT_FREED, release_freed

    block = np.ones(1 << 26, np.uint8)
    del block
    assert release_freed() is KEPT_FREED
