"""The static type of ``m["..."]`` under the :mod:`visa.mypy` plugin.

With the plugin, ``m["A / 8 # 256"]`` — in an annotation or as a value — has the type
``m[Literal["A / 8 # 256 (A=2048)"]]``: a :class:`~visa.mapping.core.Mapping` whose type argument is the
canonical text of the mapping (``str(mapping)``, the manual's equivalence classes, L1017–1028) followed by the
sizes of the axes it uses.  Equivalent spellings therefore give the same type, different layouts different
types, and the type alone rebuilds the mapping.  Nothing here runs: the class is never instantiated.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from visa.mapping.core import Mapping

__all__ = ["m"]

Canon = TypeVar("Canon")


class m(Mapping, Generic[Canon]):  # noqa: N801 - printed by mypy as the user wrote it: m[Literal['A']]
    """A mapping whose canonical text and axis sizes are the literal type argument (static typing only; the
    equivalence classes of manual L1017–1028)."""

    __slots__ = ()
