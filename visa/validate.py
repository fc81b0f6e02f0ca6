"""Argument checks shared by every public entry point (the lowest layer after :mod:`visa.errors`).

A wrong Python type is a :class:`WrongTypeError`: a ``TypeError`` (so plain Python code can catch it) that is
also a :class:`~visa.errors.VisaError`, whose message names the call, the parameter, what was given and what
is expected.  Values of the right type that the manual does not allow stay with the caller's own
``VisaError`` subclass (for example a padding smaller than the size, manual L741–778).

>>> expect_int(3, "n", call="pad")
3
>>> expect_int(5000.5, "n", call="pad")
Traceback (most recent call last):
visa.errors.WrongTypeError: pad: parameter n must be an int, got 5000.5 (float); fix: pass an int [V...]
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable
from typing import Any, TypeVar

from visa.errors import RangeError, VisaError, WrongTypeError

__all__ = ["WrongTypeError", "RangeError", "describe", "wrong_type", "expect_int", "expect_instance", "expect_str",
           "expect_choice", "expect_callable", "expect_ints", "expect_mapping", "expect_dtype", "option_int"]

T = TypeVar("T")


def describe(value: object) -> str:
    """A short, safe description of ``value`` for a message: its repr (cut) and its type."""
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the real refusal
        text = "<unprintable>"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__module__}.{type(value).__qualname__})" \
        if type(value).__module__ not in ("builtins",) else f"{text} ({type(value).__name__})"


def wrong_type(param: str, value: object, expected: str, *, call: str, fix: str | None = None) -> WrongTypeError:
    """The refusal of a wrong-typed argument: ``call: parameter <param> must be <expected>, got <value>``."""
    return WrongTypeError(f"parameter {param} must be {expected}, got {describe(value)}", call=call,
                          fix=fix or f"pass {expected}")


def expect_int(value: object, param: str, *, call: str, lo: int | None = None, hi: int | None = None,
               error: type[VisaError] | None = None, fix: str | None = None) -> int:
    """``value`` as a Python int (numpy integers accepted; bool, float and str refused), within ``lo..hi``.

    Out of range raises ``error`` (the caller's :class:`~visa.errors.VisaError` subclass; ``ValueError``
    -compatible :class:`RangeError` by default).
    """
    if type(value) is int:  # (the usual argument: no ABC check)
        n = value
    elif isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise wrong_type(param, value, "an int", call=call, fix=fix)
    else:
        n = int(value)
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        span = f"{'' if lo is None else lo}..{'' if hi is None else hi}"
        raise (error or RangeError)(f"parameter {param} must be in {span}, got {n}", call=call,
                                    fix=fix or f"pass an int in {span}")
    return n


def expect_instance(value: object, cls: type[T] | tuple[type[T], ...], param: str, *, call: str,
                    expected: str | None = None, fix: str | None = None) -> T:
    """``value`` if it is an instance of ``cls``, else a :class:`WrongTypeError` naming the parameter."""
    if not isinstance(value, cls):
        if expected is None:
            names = [c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,))]
            expected = "a " + " or ".join(names)
        raise wrong_type(param, value, expected, call=call, fix=fix)
    return value  # type: ignore[return-value, unused-ignore]  # (mypy < 1.17 does not narrow to T)


def expect_str(value: object, param: str, *, call: str, fix: str | None = None) -> str:
    """``value`` if it is a str."""
    return expect_instance(value, str, param, call=call, expected="a str", fix=fix)


def expect_choice(value: object, choices: tuple[str, ...], param: str, *, call: str) -> str:
    """``value`` if it is one of the strings ``choices`` (a wrong type or an unknown choice both refused)."""
    if not isinstance(value, str) or value not in choices:
        raise wrong_type(param, value, "one of " + ", ".join(repr(c) for c in choices), call=call)
    return value


def expect_callable(value: object, param: str, *, call: str) -> Callable[..., object]:
    """``value`` if it is callable."""
    if not callable(value):
        raise wrong_type(param, value, "a function", call=call)
    return value


def expect_ints(value: object, param: str, *, call: str, expected: str = "a list of ints",
                fix: str | None = None) -> tuple[int, ...]:
    """``value`` as a tuple of Python ints: a list, tuple, range or 1-d integer numpy array whose every entry is
    an int (numpy integers accepted; bool, float and str refused).  Text, a set, a dict or a lone number is
    refused whole, naming the parameter (its entries' values are the caller's rule)."""
    import numpy as np

    ok = isinstance(value, list | tuple | range) or (isinstance(value, np.ndarray) and value.ndim == 1)
    entries = list(value) if ok else []  # type: ignore[call-overload]
    if not ok or any(isinstance(v, bool | np.bool_) or not isinstance(v, numbers.Integral) for v in entries):
        raise wrong_type(param, value, expected, call=call, fix=fix)
    return tuple(int(v) for v in entries)


def expect_mapping(value: object, param: str, *, call: str, level: str | None = None) -> Any:
    """``value`` if it is a :class:`~visa.mapping.Mapping` (a bare ``"A"`` is refused with the fix ``m["A"]``)."""
    if isinstance(value, _mapping_class()):
        return value
    hint = f' (m["{value}"], not the bare text)' if isinstance(value, str) else ""
    raise WrongTypeError(f"parameter {param} must be a mapping such as m[\"A\"], got {describe(value)}", call=call,
                         level=level, fix=f'write {param} as m["..."] over declared axes{hint}')


def expect_dtype(value: object, param: str, *, call: str) -> Any:
    """The element type ``value`` names (a visa scalar class such as ``i32``, or its manual spelling ``"i32"``,
    manual L1962–1979); numpy types and anything else are refused."""
    if isinstance(value, type) and value in _scalar_classes():  # (an element type: dtypes.scalar gives it back)
        return value
    from visa import dtypes as dt

    try:
        return dt.scalar(value)  # type: ignore[arg-type]
    except (VisaError, TypeError, KeyError):
        raise wrong_type(param, value, "a visa element type such as i32 or bf16", call=call,
                         fix=f"pass one of {', '.join(dt.SCALARS)} (from visa import i32), not a numpy type"
                         ) from None


@functools.cache
def _mapping_class() -> type:
    """:class:`visa.mapping.Mapping` (imported on first use: the mapping layer imports this module)."""
    from visa.mapping.core import Mapping

    return Mapping


@functools.cache
def _scalar_classes() -> frozenset[type]:
    """The visa element type classes (``dtypes.SCALARS``' values), found on first use."""
    from visa import dtypes as dt

    return frozenset(dt.SCALARS.values())


def option_int(lo: int, what: str = "") -> Callable[[str], int]:
    """A command-line option's type (``argparse``'s ``type=``): an int of at least ``lo``; ``what`` (the option's
    meaning) is added to the refusal, which argparse prints naming the option (exit status 2).

    >>> option_int(1, "new tokens")("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: 0 is below 1 (new tokens)
    """
    import argparse

    said = f" ({what})" if what else ""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an int{said}") from None
        if n < lo:
            raise argparse.ArgumentTypeError(f"{n} is below {lo}{said}")
        return n
    return parse
