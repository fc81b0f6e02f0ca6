"""One point of a sweep, as a worker process runs it: load the swept function, call it, measure it.

The function travels as a :class:`Target`.  A function of an importable module goes by name (the worker imports
the module once and keeps it, with every plan cache visa fills, for the points that follow).  A function of a
script (``visa tune kernel.py:point``, or one defined in ``__main__``) goes with its file's source, which the
worker compiles into a module of its own once per source: a worker on another machine (a Dask cluster) needs
visa installed, not the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import math
import os
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from visa.validate import wrong_type

__all__ = ["Target", "target_of", "run_point", "Measured", "limit_threads", "peak_bytes"]


@dataclass(frozen=True)
class Target:
    """Where the swept function comes from: a module name, or a script's source and file name."""

    qualname: str
    module: str | None = None
    source: str | None = None
    filename: str | None = None

    @property
    def fingerprint(self) -> str:
        """What the result cache keys on: the function's module source (so an edit anywhere in it, or in the
        function, runs the points again) and its name."""
        text = self.source
        if text is None and self.module is not None:
            mod = sys.modules.get(self.module) or importlib.import_module(self.module)
            try:
                text = inspect.getsource(mod)
            except (OSError, TypeError):
                text = self.module
        digest = hashlib.sha256((text or "").encode()).hexdigest()
        return f"{self.module or self.filename}:{self.qualname}:{digest}"

    def load(self) -> Callable[..., Any]:
        """The function itself (its module loaded once per process)."""
        if self.source is None:
            assert self.module is not None
            obj: Any = importlib.import_module(self.module)
        else:
            obj = _script_module(self.source, self.filename or "<sweep>")
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        if not callable(obj):
            raise TypeError(f"{self.qualname} is not callable")
        fn: Callable[..., Any] = obj
        return fn


_SCRIPTS: dict[str, types.ModuleType] = {}  # source digest → the module compiled from it
_SOURCES: dict[str, tuple[str, str]] = {}  # that module's name → (source, file name)


def _script_module(source: str, filename: str) -> types.ModuleType:
    """A script's source compiled into a module (not ``__main__``: its ``if __name__ == "__main__"`` block does
    not run), once per source and process; its folder joins ``sys.path`` as it would for ``python FILE``."""
    key = hashlib.sha256(source.encode()).hexdigest()
    mod = _SCRIPTS.get(key)
    if mod is None:
        name = f"_visa_tune_{Path(filename).stem}_{key[:12]}"
        mod = types.ModuleType(name)
        mod.__file__ = filename
        folder = str(Path(filename).resolve().parent)
        if Path(folder).is_dir() and folder not in sys.path:
            sys.path.insert(0, folder)
        sys.modules[name] = mod  # dataclasses and pickling look the module up by name
        _SOURCES[name] = (source, filename)
        exec(compile(source, filename, "exec"), mod.__dict__)
        _SCRIPTS[key] = mod
    return mod


def target_of(fn: Callable[..., Any]) -> Target:
    """The :class:`Target` of ``fn``: by name when its module can be imported by name, else by its file's
    source.  A lambda or a function nested in another has no name to look up and is refused."""
    qualname = getattr(fn, "__qualname__", None)
    module = getattr(fn, "__module__", None)
    if qualname is None or "<" in qualname:  # (a WrongTypeError is a TypeError, as this refusal was)
        raise wrong_type("fn", fn, "a function defined at module level (a worker loads it by its name; a lambda "
                         "or a nested function has none)", call="visa.tune.sweep",
                         fix="define the swept function at module level")
    mod = sys.modules.get(module or "")
    spec = getattr(mod, "__spec__", None)
    if module and module != "__main__" and module not in _SOURCES and spec is not None and spec.name == module:
        return Target(qualname, module=module)
    if module in _SOURCES:  # a script this process compiled: its source as it was read
        source, path = _SOURCES[module]
        return Target(qualname, source=source, filename=path)
    filename = getattr(mod, "__file__", None) or inspect.getsourcefile(fn)
    if filename is None:
        raise TypeError(f"{qualname}: its source file is unknown, so a worker cannot load it")
    return Target(qualname, source=Path(filename).read_text(), filename=str(filename))


@dataclass(frozen=True)
class Measured:
    """What one call of the swept function gave (:class:`visa.tune.Row` adds the point and the cache flag)."""

    cycles: int | None
    utilisation: float | None
    bound: str | None
    wall: float
    peak_memory: int | None
    error: str | None


def _metrics(result: Any) -> tuple[int, float | None, str | None]:
    """Cycles, utilisation and bound from what the function returned: a ``KernelReport`` (its kernel roofline
    when it launched a kernel, else the whole run's), a number of cycles, or a mapping with ``"cycles"``."""
    roof = getattr(result, "kernel", None) or getattr(result, "roofline", None)
    if roof is not None and hasattr(roof, "cycles"):
        return int(roof.cycles), float(roof.utilisation), str(roof.bound)
    if isinstance(result, Mapping) and "cycles" in result:
        util = result.get("utilisation")
        return int(result["cycles"]), None if util is None else float(util), result.get("bound")
    if isinstance(result, (int, float)) and not isinstance(result, bool) and math.isfinite(result):
        return int(result), None, None
    raise TypeError(f"the swept function returned {type(result).__name__}; return ctx.report() (a KernelReport), "
                    "the cycles, or a dict with 'cycles'")


def _peak_reset() -> bool:
    """Reset this process's peak resident size (Linux: ``clear_refs`` 5), so the next reading is this point's."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_bytes() -> int | None:
    """This process's own peak resident size in bytes: Linux's ``VmHWM``, the high-water mark of its address space
    (``getrusage``'s ``ru_maxrss`` is not a child's own: the kernel carries the parent's peak across the fork and
    exec into it); ``ru_maxrss`` where there is no ``/proc``; None where neither is there.  What a sweep point's
    ``peak`` and the benchmarks' peaks read (a host-side measurement: the manual has no part in it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource

        scale = 1 if sys.platform == "darwin" else 1024
        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * scale
    except ImportError:  # pragma: no cover - Windows
        return None


@contextlib.contextmanager
def limit_threads(threads: int | None) -> Iterator[None]:
    """At most ``threads`` BLAS threads (``threadpoolctl``, when installed) and Contraction Engine workers inside
    the block: workers sharing a machine should not each spread over every core."""
    if threads is None:
        yield
        return
    from visa.engines.contraction import blas

    with contextlib.ExitStack() as stack:
        try:
            from threadpoolctl import threadpool_limits

            stack.enter_context(threadpool_limits(limits=threads))
        except ImportError:
            pass
        stack.enter_context(blas.workers(threads))
        yield


def _where(err: BaseException) -> str:
    """The error and the last frame outside visa that raised it (the user's kernel or check)."""
    package = str(Path(__file__).resolve().parents[1])
    frames = [f for f in traceback.extract_tb(err.__traceback__) if not f.filename.startswith(package)]
    at = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text}{at}" if text else f"{type(err).__name__}{at}"


def run_point(target: Target, params: dict[str, Any], threads: int | None = None) -> Measured:
    """Call the target with ``params`` and measure it: its cycles and roofline, the wall time, the peak memory
    of this process during the call (where the system can reset it), or the error it raised."""
    fn = target.load()
    reset = _peak_reset()
    start = time.perf_counter()
    try:
        with limit_threads(threads):
            result = fn(**params)
        cycles, util, bound = _metrics(result)
    except Exception as err:  # the point failed (its own check, a refusal): the sweep goes on
        return Measured(None, None, None, time.perf_counter() - start, peak_bytes() if reset else None,
                        _where(err))
    return Measured(cycles, util, bound, time.perf_counter() - start, peak_bytes() if reset else None, None)


def default_threads(workers: int) -> int:
    """BLAS threads per worker: the cores shared out (at least one)."""
    return max(1, (os.cpu_count() or 1) // max(1, workers))
