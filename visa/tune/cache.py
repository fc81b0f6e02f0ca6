"""The sweep's result cache on disk: one JSON file per point, keyed by the swept function's source, the point's
parameters and visa's version, so an interrupted sweep resumes where it stopped and an edited kernel runs again.

>>> import tempfile
>>> c = Cache(Path(tempfile.mkdtemp()), "mod:fn:abc")
>>> c.get({"k_tile": 512}) is None
True
>>> c.put({"k_tile": 512}, {"cycles": 10})
>>> c.get({"k_tile": 512})
{'cycles': 10}
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["Cache", "default_dir"]


def default_dir() -> Path:
    """``$VISA_TUNE_CACHE``, else ``$XDG_CACHE_HOME/visa/tune`` (``~/.cache/visa/tune``)."""
    env = os.environ.get("VISA_TUNE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "visa" / "tune"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tcp-visa")
    except PackageNotFoundError:  # pragma: no cover - a source tree without an install
        return "unknown"


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


class Cache:
    """The cached rows of one swept function (``fingerprint``: its module's source hash and name)."""

    __slots__ = ("folder",)

    def __init__(self, root: Path, fingerprint: str) -> None:
        self.folder = Path(root) / _digest([fingerprint, _version()])[:24]

    def _path(self, params: dict[str, Any]) -> Path:
        return self.folder / f"{_digest(params)[:32]}.json"

    def get(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """The stored measurement of ``params``, or None (also for a file a crash left unreadable)."""
        try:
            data = json.loads(self._path(params).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        return data

    def put(self, params: dict[str, Any], row: dict[str, Any]) -> None:
        """Store a measurement (written to a temporary file and renamed: a reader never sees half of it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(params)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(row, default=repr))
        os.replace(tmp, path)
