"""16 MB of i8 from numpy to HBM (``HostTensor.from_numpy`` + ``to_hbm``) against a numpy copy (issue 15).

The tensor ``A × B`` (4096 × 4096 i8) goes from a numpy array into a host tensor (validation and the host
buffer's layout) and over PCIe into HBM, laid out as on the host (``m["A, B"]``); numpy copies the same array
(``x.copy()``).  The HBM bytes are checked equal before timing.  The figure is the best of several runs, as for
numpy; every run writes the same HBM bytes again.
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import best_of, report
from visa import AxisSet, Context, HostTensor, i8

AX = AxisSet(A=4096, B=4096)


def run() -> list[str]:
    m = AX.m
    x = np.random.default_rng(0).integers(-128, 128, size=(4096, 4096), dtype=np.int8)
    ctx = Context.acquire()

    def visa_path() -> None:
        HostTensor.from_numpy(x, i8, m["A, B"]).to_hbm(m["1"], m["A, B"], ctx.pdma, 0)

    visa_path()
    data, written = ctx.memory.chip(0).hbm.window(0, x.nbytes)
    assert np.array_equal(data.view(np.int8), x.reshape(-1)) and written.all()
    ours = best_of(visa_path, repeat=7)
    theirs = best_of(x.copy, repeat=7)
    return [report("16 MB i8 host → HBM (from_numpy + to_hbm)", ours, theirs, 3)]


if __name__ == "__main__":
    print("\n".join(run()))
