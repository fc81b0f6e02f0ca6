"""Every refusal visa makes is a :class:`VisaError` subclass with a stable code.

A message names the call (engine and stage), the level (Chip, Cluster, Slice, Row, Time, Packet, Element),
the mappings involved, the axis at fault, and the fix, where they apply (design API.md §5).  The parts are
keyword arguments so that callers cannot forget the order and tests can check them one by one:

>>> e = LayoutError("needs indices of N that the buffer does not hold", call="fetch", level="Time",
...                 mapping='m["N / 512"]', axis="N", fix="give the buffer all of N")
>>> str(e)
'fetch: Time m["N / 512"]: needs indices of N that the buffer does not hold (axis N); fix: give the buffer all of N'
>>> e.code, e.axis, e.level
('V300', 'N', 'Time')
"""

from __future__ import annotations

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
    """Base class of every error visa raises for a mistake in a kernel (design API.md §5).

    ``code`` is stable across releases; the keyword parts are kept as attributes so a tool (or the mypy
    plugin) can report them separately.
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
        super().__init__(self._render())

    def _render(self) -> str:
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
        prefix = ": ".join(p for p in (*head, where) if p)
        return f"{prefix}: {text}" if prefix else text

    def __reduce__(self) -> tuple[object, ...]:  # keep keyword parts through pickling
        return (_rebuild, (type(self), self.message, self.__dict__.copy()))


def _rebuild(cls: type[VisaError], message: str, state: dict[str, object]) -> VisaError:
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    Exception.__init__(err, err._render())
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


class WrongTypeError(VisaError, TypeError):
    """A public call got an argument of the wrong Python type; the message names the parameter, what was given
    and what is expected (design API.md §5; issue 16).  Also a ``TypeError``, so plain Python code can catch it."""

    code = "V001"


class RangeError(VisaError, ValueError):
    """An integer argument is outside the range its parameter allows (design API.md §5; issue 16).  Also a
    ``ValueError``."""

    code = "V002"
