"""Fixtures of the memory tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import visa.memory.images as images
from visa.memory.arena import Arena


@pytest.fixture
def arena(monkeypatch: pytest.MonkeyPatch) -> Iterator[Arena]:
    """An arena that maps (and so keeps) images of any size, in place of the device images' one."""
    mine = Arena(least=1)
    monkeypatch.setattr(images, "ARENA", mine)
    yield mine
    gc.collect()
