"""Fast path ``transpose.shared-rows`` (issue 24), beside :mod:`visa.engines.transpose`, whose reference
``execute`` it stands for: a stream whose slices share rows (:class:`~visa.engines.shared.SharedRows`) is
transposed once per distinct row.

The Transpose Engine reorders the elements within each slice's flits (L6841–6856), the same in every slice: the
slices that held the same row before hold the same row after.  The reference's ``matmul_16384`` fetches its rhs
tile broadcast over the 8 row groups of slices (64 distinct rows of 512) and transposes it on its way to the TRF;
transposing the distinct rows keeps the sharing, so the commit that follows writes one slice of each class
(``commit.shared-rows``) and the sub context's fetch and TRF load read one (``fetch.shared-rows``,
``collect.shared-load``).  The rows' values and known-masks are those of the reference, row for row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from visa import fastpaths
from visa.engines.common import StreamData
from visa.engines.shared import SharedRows

if TYPE_CHECKING:
    from visa.engines.transpose import TransposeConfig

__all__ = ["SHARED", "execute"]

SHARED = fastpaths.register("transpose.shared-rows", "a stream whose slices share rows (SharedRows) transposed once "
                                                     "per distinct row, kept shared")


def execute(config: TransposeConfig, data: SharedRows) -> SharedRows:
    """The transpose of every distinct row of ``data``, shared as before."""
    from visa.engines.transpose import execute as reference  # (that module dispatches here)

    def run(inner: StreamData) -> StreamData:
        return reference(config, inner)

    return data.map(run)
