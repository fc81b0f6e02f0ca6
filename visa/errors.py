"""Every refusal visa makes is a :class:`VisaError` subclass with a stable code per diagnostic.

A message names the call (engine and stage), the level (Chip, Cluster, Slice, Row, Time, Packet, Element),
the mappings involved, the axis at fault, and the fix, where they apply.  The parts are keyword arguments so
that callers cannot forget the order and tests can check them one by one.  The message ends with the code:
each raise site in visa has its own (``docs/errors.md`` lists them, :mod:`visa.diagnostics` assigns them);
an error built elsewhere carries its class's code.  Manual citations name the manual's section
(:func:`visa.manual.cite`):

>>> e = LayoutError("needs indices of N that the buffer does not hold (L1639)", call="fetch", level="Time",
...                 mapping='m["N / 512"]', axis="N", fix="give the buffer all of N")
>>> str(e)  # doctest: +NORMALIZE_WHITESPACE
'fetch: Time m["N / 512"]: needs indices of N that the buffer does not hold (manual §Sequencer › Insufficient
Input, L1639) (axis N); fix: give the buffer all of N [V300]'
>>> e.code, e.axis, e.level
('V300', 'N', 'Time')
"""

from __future__ import annotations

import sys
from types import FrameType

#: Where an error was built: (file, line) of the raise site, of its caller, and the code (or site) of the
#: refusal of the same class being handled then; ``None`` when there is no calling frame.
_Site = tuple[tuple[str, int], tuple[str, int] | None, "str | _Site"] | None

__all__ = [
    "VisaError",
    "MappingSyntaxError",
    "UnknownAxisError",
    "AxisDeclarationError",
    "DtypeError",
    "LayoutError",
    "InsufficientInputError",
    "IncompatibleShapesError",
    "HardwareLimitError",
    "AddressError",
    "AllocationError",
    "StaleTensorError",
    "TypestateError",
    "UnsupportedOnProfileError",
    "UnsupportedFeatureError",
    "PoisonError",
    "ResourceError",
    "WrongTypeError",
    "RangeError",
]


class VisaError(Exception):
    """Base class of every error visa raises for a mistake in a kernel (the manual's refusals, for example
    "Configuration Failures", L1628–1637).

    ``code`` is the diagnostic's code, stable across releases (``docs/errors.md``); ``type(err).code`` is the
    class's.  The keyword parts are kept as attributes so a tool (or the mypy plugin) can report them
    separately.
    """

    code = "V000"

    def __init__(
        self,
        message: str,
        *,
        call: str | None = None,
        level: str | None = None,
        mapping: str | None = None,
        axis: str | None = None,
        fix: str | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.call = call
        self.level = level
        self.mapping = mapping
        self.axis = axis
        self.fix = fix
        self.line = line
        self._site = self._site_of()
        super().__init__(message)  # str() renders the parts when asked (a refusal caught and retried costs less)

    def __getattribute__(self, name: str) -> object:
        # ``code`` is worked out when first read: finding a raise site's catalogue entry parses the source file
        # of the site (tens of milliseconds the first time per file), and a plan that refuses one candidate and
        # takes another (the commit's commit_in_size, a DMA's packet layout) never reads the code of the
        # refusal it caught.  The site itself is noted when the error is built (issue 15: first launches).
        if name == "code":
            state = object.__getattribute__(self, "__dict__")
            if "code" not in state and "_site" in state:
                state["code"] = self._resolve(state["_site"])
        return super().__getattribute__(name)

    def _site_of(self) -> _Site:
        """Where this error was built (its frame and the frame below it) and, for a refusal rebuilt while one
        of the same class is handled, that one's code or site: what :meth:`_resolve` needs to find the code.
        Only names and line numbers are kept (no frames, no handled exception: nothing they reference)."""
        frame: FrameType | None = sys._getframe(2)
        while frame is not None and frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is self:
            frame = frame.f_back  # a subclass's __init__ calling ours
        if frame is None:
            return None
        here = (frame.f_code.co_filename, frame.f_lineno)
        back = None if frame.f_back is None else (frame.f_back.f_code.co_filename, frame.f_back.f_lineno)
        handled = sys.exc_info()[1]
        prior: str | _Site = None
        if isinstance(handled, VisaError) and type(handled) is type(self):
            state = handled.__dict__
            prior = state["code"] if "code" in state else state.get("_site")
        return here, back, prior

    def _resolve(self, site: _Site) -> str:
        """The code of the raise site that built this error (its catalogue entry), else the class's code."""
        if site is None:
            return type(self).code
        here, back, prior = site
        from visa.diagnostics import code_at

        name = type(self).__name__
        code = code_at(here[0], here[1], name)
        if code is None and back is not None:  # built by a helper: fail(AError, "message", ...)
            code = code_at(back[0], back[1], name)
        if code is None and prior is not None:  # rebuilt from a refusal being handled: keep that one's code
            code = prior if isinstance(prior, str) else self._resolve(prior)
        return code or type(self).code

    def __str__(self) -> str:
        return f"{self._render()} [{self.code}]"

    def describe(self) -> str:
        """The message without its code (the mypy plugin reports the code apart, as ``[visa-V3012]``)."""
        return self._render()

    def _render(self) -> str:
        from visa.manual import cite

        head = []
        if self.call:
            head.append(self.call)
        where = " ".join(p for p in (self.level, self.mapping) if p)
        text = self.message
        if self.axis and f"axis {self.axis}" not in text:
            text += f" (axis {self.axis})"
        if self.line is not None:
            text += f" [manual L{self.line}]"
        if self.fix:
            text += f"; fix: {self.fix}"
        text = cite(text)
        prefix = ": ".join(p for p in (*head, where) if p)
        return f"{prefix}: {text}" if prefix else text

    def __reduce__(self) -> tuple[object, ...]:  # keep keyword parts through pickling
        state = self.__dict__.copy()
        state["code"] = self.code  # the site is not pickled: its code is settled first
        state.pop("_site", None)
        return (_rebuild, (type(self), self.message, state))


def _rebuild(cls: type[VisaError], message: str, state: dict[str, object]) -> VisaError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class MappingSyntaxError(VisaError):
    """The text given to ``m[...]`` is not a mapping expression (manual "Mapping Expressions", L582)."""

    code = "V100"


class UnknownAxisError(VisaError):
    """A mapping names an axis, or an escape names an alias, that is not declared (manual L587–595)."""

    code = "V101"


class AxisDeclarationError(VisaError):
    """``axes(...)`` was given a non-positive size or redeclared a name with another size (manual L587)."""

    code = "V102"


class DtypeError(VisaError, ValueError):
    """A value, size or byte image does not fit an element type (manual L1071, L2117, L2229–2232).

    Also a ``ValueError``, so numeric code that does not know visa can catch it.
    """

    code = "V200"


class LayoutError(VisaError):
    """Two mappings cannot be reconciled by the hardware (manual "Sequencer", L1639–1683)."""

    code = "V300"


class InsufficientInputError(LayoutError):
    """A stream needs tensor indices that the buffer does not hold (manual L1639–1659)."""

    code = "V301"


class IncompatibleShapesError(LayoutError):
    """Buffer and stream have no common factorization (manual L1660–1683)."""

    code = "V302"


class HardwareLimitError(VisaError):
    """A configuration exceeds a limit of the hardware profile (entries, sizes, packets, capacities;
    manual "Configuration Failures" L1628–1637, "Size Constraint" L1074–1093)."""

    code = "V400"


class AddressError(VisaError):
    """An address is misaligned or out of the memory it names (manual L1070–1093, L2424–2427)."""

    code = "V500"


class AllocationError(AddressError):
    """Two live tensors overlap, or a tensor does not fit its memory (manual L150–155, L1085–1093)."""

    code = "V501"


class StaleTensorError(AddressError):
    """A tensor is read after another write overwrote some of its bytes (manual L150–155)."""

    code = "V502"


class TypestateError(VisaError):
    """A stage method was called on a stream that is not at that stage (manual "Memory and Stream", L1107)."""

    code = "V600"


class UnsupportedOnProfileError(VisaError):
    """The hardware profile lacks the capability (for example an RNGD-S-only cast on RNGD, manual L1974)."""

    code = "V700"


class UnsupportedFeatureError(VisaError):
    """The manual leaves the feature unspecified (for example indirect sequencing, manual L1004)."""

    code = "V701"


class PoisonError(VisaError):
    """A result depends on memory that was never written, or on padding that was not masked (the manual
    leaves padding values unconstrained, L616–620, and masks them only on request, L1877–1935)."""

    code = "V800"


class ResourceError(VisaError):
    """A hardware unit is used twice in one pass (for example an ALU, manual "Vector Engine")."""

    code = "V900"


class BankStarvationWarning(UserWarning):
    """A Tensor Unit operation accesses one DM bank 64 or more times in a row: run concurrently with a DMA it
    would starve the DMA and trip the NoC timeout (manual L2841–2842, L2897–2941).  The scheduler runs it as if
    it occupied the DMA engines of its chips (the compiler's behaviour, L2922) and warns."""


class WrongTypeError(VisaError, TypeError):
    """A public call got an argument of the wrong Python type; the message names the parameter, what was given
    and what is expected, as the manual's Rust types would have refused it at compile time (issue 16).  Also a
    ``TypeError``, so plain Python code can catch it."""

    code = "V001"


class RangeError(VisaError, ValueError):
    """An integer argument is outside the range its parameter allows (issue 16; the manual's sizes and
    positions, L587–620).  Also a ``ValueError``."""

    code = "V002"
