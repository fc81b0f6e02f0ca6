"""The Transpose Engine's worked examples (manual L6913–7040), end to end through DM.

Run with ``visa run examples/transpose.py``.  Each example puts a tensor in DM, fetches it, collects it into
32-byte flits, transposes within the flits, commits the result, checks it against numpy, and prints the
engine's configuration and cycles (the manual's 72, 6, 128 and 68).

The manual's examples are fragments ``input.transpose()`` on a ``CollectTensor`` (L6922–6944, L6954–6977,
L6987–7009, L7019–7039).  Here the fetch and collect build that ``CollectTensor`` (the fragment's Time and
Packet) from DM, ``.transpose(Time, Packet)`` passes the ``TransposeTensor`` mappings Rust infers from the
fragment's result type, and a commit writes the result back.  Two departures, both for the
DM tensor's exact Cluster and Slice sizes (L1079–1084): Cluster ``m![1]`` is ``m["1 # 2"]``, and the small
matrix's ``P = 64`` (L6953) is ``P = 256``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from visa import dtypes as dt
from visa.context import Context
from visa.mapping import AxisSet
from visa.testing import place_dm


def transpose_through_dm(ctx: Context, line: str, sizes: dict[str, int], dtype: type[dt.Scalar], *, element: str,
                         fetch: tuple[str, str], collect: tuple[str, str], transpose: tuple[str, str],
                         commit: str, cycles: int, address: int) -> None:
    """DM → fetch → collect → transpose → commit → DM, checked against numpy's transpose."""
    m = AxisSet(**sizes).m
    names = list(sizes)
    rng = np.random.default_rng(7)
    x: Any = dt.random_values(dtype, tuple(sizes.values()), rng)
    src = place_dm(ctx, x, dtype, m["1"], m["1 # 2"], m["P"], m[element], 0, axes=names)
    flits = (ctx.main.begin(src.view())
             .fetch(dtype, m[fetch[0]], m[fetch[1]])
             .collect(m[collect[0]], m[collect[1]]))
    moved = flits.transpose(m[transpose[0]], m[transpose[1]])
    report = moved.reports[-1]
    out = moved.commit(m[commit], address)

    # The committed rows are numpy's transpose: DM holds, per slice, the tensor in the order `commit` names.
    order = ["P", *(a for a in commit.replace(",", " ").split() if a in sizes and sizes[a] > 1)]
    perm = [names.index(a) for a in order]
    want = np.transpose(x, perm)
    got = out.logical(axes=order)
    assert np.array_equal(got, want), f"{line}: committed tensor differs from numpy's transpose"
    assert report.cycles == cycles, f"{line}: {report.cycles} cycles, the manual says {cycles}"
    print(f"{line}: {report.config}: {report.cycles} cycles (manual: {cycles}) — matches numpy")


def main() -> None:
    """The four examples, each at its own DM address, checked against numpy and the manual's cycle counts."""
    ctx = Context.acquire()
    # Basic 8×8 (L6913–6945): in_rows = D, in_cols = E, n = C, double buffering.
    transpose_through_dm(ctx, "L6913 basic 8x8", dict(P=256, C=8, D=8, E=8), dt.i8, element="C, D, E",
                         fetch=("C, D", "E"), collect=("C, D", "E # 32"), transpose=("C, E", "D # 32"),
                         commit="C, E, D", cycles=72, address=1 << 12)
    # Small matrix (L6946–6978): 6 padded rows trimmed.
    transpose_through_dm(ctx, "L6946 small 4x2", dict(P=256, A=4, B=2), dt.i8, element="A, B # 8",
                         fetch=("A", "B # 8"), collect=("A", "B # 32"), transpose=("B", "A # 32"),
                         commit="B, A # 8", cycles=6, address=2 << 12)
    # Large columns (L6979–7010): in_cols = 32 > 16 columns, single buffering.
    transpose_through_dm(ctx, "L6979 in_cols=32", dict(P=256, B=2, C=8, D=4, E=8), dt.i8, element="B, C, D, E",
                         fetch=("B, C, D", "E"), collect=("B, C, D", "E # 32"), transpose=("B, D, E", "C # 32"),
                         commit="B, D, E, C", cycles=128, address=3 << 12)
    # bf16 (L7011–7040): at most 4 rows of 16-bit elements.
    transpose_through_dm(ctx, "L7011 bf16", dict(P=256, C=8, D=4, E=8), dt.bf16, element="C, D, E",
                         fetch=("C, D", "E"), collect=("C, D", "E # 16"), transpose=("C, E", "D # 16"),
                         commit="C, E, D", cycles=68, address=4 << 12)


if __name__ == "__main__":
    main()
