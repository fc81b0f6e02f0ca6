"""Snippets for the kernel library :mod:`visa.kernels`: ``Gemm``'s shapes and tiling choices (k_tile, m_block,
double buffering, prefetch), ``Rows``, the MoE routing, the i8 GEMM and the AllReduce (manual L7382–7610,
L8596–8707)."""

from __future__ import annotations

from visa.snippets.base import Snippet, module

__all__ = ["KERNELS_LIB"]

_NEW = "from visa import AxisSet\nfrom visa.kernels import Gemm"

# x[M, K] · w[N, K]ᵀ on one chip (bf16 in and out)
_GEMM = """import numpy as np
from visa import AxisSet, Context, HbmTensor, HostTensor, bf16, device, launch
from visa.kernels import Arena, Gemm

ax = AxisSet({sizes})
m = ax.m
gemm = Gemm(ax{options})
ctx = Context.acquire()
rng = np.random.default_rng(0)
x = HostTensor.rand(bf16, m["M, K"], rng).to_hbm(m["1"], m["M, K"], ctx.pdma, 0)
w = HostTensor.rand(bf16, m["N, K"], rng).to_hbm(m["1"], m["N, K"], ctx.pdma, 1 << 28)
{before}

@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[bf16, m["1"], m["M, K"]],
           w: HbmTensor[bf16, m["1"], m["N, K"]]) -> HbmTensor[bf16, m["1"], m["M, N"]]:
    arena = Arena()
    {body}


y = launch(kernel, ctx, x, w)
"""
_GEMM_LINES = {"sizes": "M=1, N=32, K=32", "options": "", "before": "", "body": "return gemm(ctx, arena, x, w)"}


def _gemm(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    return Snippet(_GEMM.format(**(_GEMM_LINES | failing)), _GEMM.format(**(_GEMM_LINES | (fixed or {}))))


_PREFETCH = "p = gemm.prefetch(ctx, {w}, gemm.prefetch_slots(arena))\n    return gemm(ctx, arena, x, w, prefetched=p)"
_W2 = 'w2 = HostTensor.rand(bf16, m["N, K"], rng).to_hbm(m["1"], m["N, K"], ctx.pdma, 1 << 29)\n'
# x and w held whole in DM (stream=False): 28 KiB of a slice's DM left for the f32 partials of the K tiles
_RESIDENT = {"sizes": "M=64, N=32, K=2560", "body": "return gemm(ctx, arena, x, w, stream=False)"}
_LONG_K = {"sizes": "M=1, N=32, K=2048", "options": ", k_tile=1024"}

_ROWS = "from visa import AxisSet\nfrom visa.kernels import Rows"
_MOE = "from visa import AxisSet\nfrom visa.kernels.moe import MoeRouting, TokenRows"

# x[C, S, D] over C chips, summed over the chips by all_reduce (manual L7382-7610)
_REDUCE = """import numpy as np
from visa import AxisSet, Context, HostTensor, device, {dtype}, launch
from visa.kernels import Arena, all_reduce

ax = AxisSet(C={n}, S=16, D=128)
m = ax.m
ctx = Context.acquire()
x = np.ones(({n}, 16, 128), np.float32)
xh = HostTensor.from_numpy(x, {dtype}, m["C, S, D"], axes="C S D").to_hbm(m["C"], m["S, D"], ctx.pdma, 0)


@device(chip={n})
def kernel(ctx: Context, xh: HbmTensor) -> HbmTensor:
    arena = Arena()
    xd = xh.to_dm(m["1 # 2"], m["S # 256"], m["D"], ctx.tdma, arena.take_dm(4 * 128))
    return all_reduce(ctx, ax, arena, xd, algorithm="{algorithm}")


out = launch(kernel, ctx, xh)
""".replace("HbmTensor) -> HbmTensor", "Any) -> Any").replace("import numpy", "from typing import Any\n\nimport numpy")
_REDUCE_LINES = {"dtype": "f32", "n": "2", "algorithm": "butterfly"}


def _reduce(failing: dict[str, str], fixed: dict[str, str] | None = None) -> Snippet:
    return Snippet(_REDUCE.format(**(_REDUCE_LINES | failing)), _REDUCE.format(**(_REDUCE_LINES | (fixed or {}))))


# x[H, S, D] with its two halves on the two clusters, summed across them (L7603-7610)
_CLUSTERS = """from typing import Any

import numpy as np
from visa import AxisSet, Context, HostTensor, device, i32, launch
from visa.kernels import Arena, cluster_all_reduce

ax = AxisSet(H=2, S=16, D=128)
m = ax.m
ctx = Context.acquire()
xh = HostTensor.from_numpy(np.ones((2, 16, 128), np.int32), i32, m["H, S, D"], axes="H S D").to_hbm(
    m["1"], m["H, S, D"], ctx.pdma, 0)


@device(chip=1)
def kernel(ctx: Context, xh: Any) -> Any:
    arena = Arena()
    xd = xh.to_dm({cluster}, m["S # 256"], m["H, D"], ctx.tdma, arena.take_dm(8 * 128))
    return cluster_all_reduce(ctx, ax, arena, xd)


out = launch(kernel, ctx, xh)
"""

# the same with rows of 12 i32 (one flit and a half)
_CLUSTERS12 = (_CLUSTERS.replace("D=128", "D=12").replace("16, 128)", "16, 12)").replace("8 * 128", "4 * 16")
               .replace('m["H, D"]', "{element}"))

# a row-wise softmax of 8 rows of 64 scores (one row per slice)
_SOFTMAX = """from typing import Any

import numpy as np
from visa import AxisSet, Context, HostTensor, bf16, device, launch
from visa.kernels import Arena, Rows

ax = AxisSet(T=8, D=64)
m = ax.m
rows = Rows(ax, "T", "D")
ctx = Context.acquire()
scores = HostTensor.rand(bf16, m["T, D"], np.random.default_rng(0)).to_hbm(m["1"], m["T, D"], ctx.pdma, 0)


@device(chip=1)
def kernel(ctx: Context, scores: Any) -> Any:
    arena = Arena()
    return rows.store(ctx, arena, rows.softmax(ctx, arena, rows.load(ctx, arena, scores), scale={scale}))


probabilities = launch(kernel, ctx, scores)
"""

#: site key → the failing and the fixed program.
KERNELS_LIB: dict[str, Snippet] = {
    "gemm.Gemm.__init__ HardwareLimitError: k_tile a trf row": module(
        _NEW, "gemm = Gemm(AxisSet(M=32, N=256, K=4096), k_tile=2048)   # a TRF Row holds 1024 bf16 per column",
        "gemm = Gemm(AxisSet(M=32, N=256, K=4096), k_tile=1024)"),
    "gemm.Gemm.__init__ HardwareLimitError: m_block a block holds": module(
        _NEW, "gemm = Gemm(AxisSet(M=64, N=256, K=512), m_block=0)",
        "gemm = Gemm(AxisSet(M=64, N=256, K=512), m_block=1)"),
    "gemm.Gemm.__init__ HardwareLimitError: a slice accumulates at": module(
        _NEW, "gemm = Gemm(AxisSet(M=48, N=256, K=512))   # M is tiled by 32",
        "gemm = Gemm(AxisSet(M=64, N=256, K=512))"),
    "gemm.Gemm.__init__ LayoutError: must be a multiple": module(
        _NEW, "gemm = Gemm(AxisSet(M=8, N=100, K=512))", "gemm = Gemm(AxisSet(M=8, N=128, K=512))   # N padded"),
    "gemm.Gemm.__init__ LayoutError: is no multiple of": module(
        _NEW, "gemm = Gemm(AxisSet(M=1, N=8192 + 96, K=1024), w_tiles=True)",
        "gemm = Gemm(AxisSet(M=1, N=8192 + 96, K=1024))   # w stored N-major"),
    "gemm.Gemm.__init__ HardwareLimitError: takes slices from slice": module(
        _NEW, "gemm = Gemm(AxisSet(M=1, N=512, K=512), first_slice=250)   # 16 slices from 250 pass 256",
        "gemm = Gemm(AxisSet(M=1, N=512, K=512), first_slice=240)"),
    "gemm.Gemm.__call__ HardwareLimitError: double buffering with k_tile": _gemm(
        _LONG_K, _LONG_K | {"body": "return gemm(ctx, arena, x, w, double_buffer=False)"}),
    "gemm.Gemm.__call__ LayoutError: the prefetched tile is": _gemm(
        {"before": _W2, "body": _PREFETCH.format(w="w2")}, {"before": _W2, "body": _PREFETCH.format(w="w")}),
    "gemm.Gemm.__call__ LayoutError: a gemm whose x": _gemm(
        {"body": "return gemm(ctx, arena, x, w, stream=True, out_dm=True)   # the output kept in DM"},
        {"body": "return gemm(ctx, arena, x, w, stream=True)"}),
    "gemm.Gemm.__call__ LayoutError: a gemm in n": _gemm(
        {"sizes": "M=1, N=8192 + 32, K=32", "body": "return gemm(ctx, arena, x, w, out_dm=True)   # two N parts"},
        {"sizes": "M=1, N=8192 + 32, K=32"}),
    "gemm.Gemm.prefetch LayoutError: a gemm of two": _gemm(
        {"sizes": "M=1, N=8192 + 32, K=32", "body": _PREFETCH.format(w="w")},
        {"sizes": "M=1, N=8192 + 32, K=32"}),
    "gemm.Gemm.block_of HardwareLimitError: m_block the f32 partials": _gemm(
        _RESIDENT | {"options": ", k_tile=512, m_block=2"}, _RESIDENT | {"options": ", k_tile=512, m_block=1"}),
    "rows.Rows.__init__ HardwareLimitError: rows need more than": module(
        _ROWS, 'rows = Rows(AxisSet(T=300, D=64), "T", "D")   # one row per slice',
        'rows = Rows(AxisSet(T=256, D=64), "T", "D")'),
    "rows.Rows.__init__ LayoutError: is not a multiple": module(
        _ROWS, 'rows = Rows(AxisSet(T=8, D=60), "T", "D")', 'rows = Rows(AxisSet(T=8, D=64), "T", "D")   # padded'),
    "rows.Rows.softmax LayoutError: softmax scale must be": Snippet(
        _SOFTMAX.format(scale="-0.125"), _SOFTMAX.format(scale="0.125")),
    "moe.MoeRouting.__init__ LayoutError: a token's expert scores": module(
        _MOE, "routing = MoeRouting(AxisSet(T=16, E=6, K=2, Bt=8))",
        "routing = MoeRouting(AxisSet(T=16, E=8, K=2, Bt=8))"),
    "moe.MoeRouting.__init__ LayoutError: an axis of size": module(
        _MOE, "routing = MoeRouting(AxisSet(T=1, E=8, K=2, Bt=8))   # one decode token",
        "routing = MoeRouting(AxisSet(T=2, E=8, K=2, Bt=8))   # padded with a dummy token"),
    "moe.MoeRouting.__init__ LayoutError: must be between 1": module(
        _MOE, "routing = MoeRouting(AxisSet(T=16, E=8, K=9, Bt=8))",
        "routing = MoeRouting(AxisSet(T=16, E=8, K=2, Bt=8))"),
    "moe.MoeRouting.__init__ HardwareLimitError: the block is at": module(
        _MOE, "routing = MoeRouting(AxisSet(T=16, E=8, K=2, Bt=64))",
        "routing = MoeRouting(AxisSet(T=16, E=8, K=2, Bt=32))"),
    "moe.MoeRouting.__init__ LayoutError: axis has size the": module(
        _MOE, "ax = AxisSet(T=16, E=8, K=2, Bt=8, G=3)   # G is the routing's own grid axis\nrouting = MoeRouting(ax)",
        "ax = AxisSet(T=16, E=8, K=2, Bt=8)\nrouting = MoeRouting(ax)   # it declares G itself"),
    "moe.TokenRows.__init__ HardwareLimitError: tokens need more than": module(
        _MOE, "rows = TokenRows(AxisSet(T=512, K=2, D=64))", "rows = TokenRows(AxisSet(T=256, K=2, D=64))"),
    "moe.TokenRows.__init__ LayoutError: the k selected values": module(
        _MOE, "rows = TokenRows(AxisSet(T=16, K=3, D=64))", "rows = TokenRows(AxisSet(T=16, K=4, D=64))"),
    "moe_wide.WideRouting.__init__ HardwareLimitError: tokens need more than": module(
        _MOE, "routing = MoeRouting(AxisSet(T=512, E=16, K=2, Bt=8))",
        "routing = MoeRouting(AxisSet(T=256, E=16, K=2, Bt=8))"),
    "moe_wide.WideRouting.__init__ LayoutError: a token's experts fill": module(
        _MOE, "routing = MoeRouting(AxisSet(T=16, E=12, K=2, Bt=8))",
        "routing = MoeRouting(AxisSet(T=16, E=16, K=2, Bt=8))   # 4 never-selected experts"),
    "collectives.all_reduce LayoutError: unknown allreduce algorithm": _reduce(
        {"algorithm": "tree"}, {"algorithm": "ring"}),
    "collectives.all_reduce LayoutError: a butterfly pairs chips": _reduce({"n": "3"}, {"n": "3", "algorithm": "ring"}),
    "collectives.all_reduce DtypeError: the ring adds each": _reduce(
        {"dtype": "bf16", "algorithm": "ring"}, {"dtype": "bf16", "algorithm": "butterfly"}),
    "collectives.cluster_all_reduce LayoutError: x's cluster holds no": Snippet(
        _CLUSTERS.format(cluster='m["1 # 2"]'), _CLUSTERS.format(cluster='m["H"]').replace('m["H, D"]', 'm["D"]')),
    "collectives.add_pair LayoutError: x's element holds elements": Snippet(
        _CLUSTERS12.format(cluster='m["H"]', element='m["D"]'), _CLUSTERS12.format(cluster='m["H"]',
                                                                                element='m["D # 16"]')),
    "gemm.Gemm.__call__ DtypeError: is the gemm contracts": _gemm(
        {"before": "from visa import f32\nx32 = HostTensor.rand(f32, m[\"M, K\"], rng).to_hbm(m[\"1\"], m[\"M, K\"], "
                   "ctx.pdma, 1 << 29)", "body": "return gemm(ctx, arena, x32, w)  # type: ignore[arg-type]"}),
    "dequant.Q4Dequant.__init__ LayoutError: a k tile of": module(
        "from visa import AxisSet\nfrom visa.kernels import Gemm, Q4Dequant",
        "deq = Q4Dequant(Gemm(AxisSet(M=1, N=32, K=576)))   # K tiles of 288: 9 blocks",
        "deq = Q4Dequant(Gemm(AxisSet(M=1, N=32, K=576), k_tile=576))"),
    "gemm_i8.i8_gemm_kernels LayoutError: n with rows per": module(
        "from visa.kernels.gemm_i8 import i8_gemm_kernels", "kernels = i8_gemm_kernels(1000, 64)",
        "kernels = i8_gemm_kernels(2048, 64)"),
}
