"""``visa.kernels``: typed functions that build kernels for the shapes they are given (issue 14).

A layer above the tensors and streams and below the command line: each builder takes an
:class:`~visa.mapping.AxisSet` and axis names, derives the mappings, and chains the engines' own stages —
no engine rule is repeated here.  :class:`Arena` hands out DM, VRF and HBM addresses so that kernels compose in
one ``@device`` function.

- :class:`Rows`: RMSNorm, row-wise softmax (max-subtracted), SwiGLU, per-row statistics.
- :class:`Gemm`: ``x[M, K] · w[N, K]ᵀ`` tiled along K and N with f32 partials (GEMV when M = 1 … 32).
- :mod:`visa.kernels.bounds`: each kernel's derived error bound against a float64 numpy reference.
- :class:`Attention`: single-head ``softmax(q Kᵀ/√d_k) V`` over a given cache, composed of the two above.
- :class:`Embedding`, :class:`KvCache`, :class:`CausalMask`: table lookups by an on-device gather, the KV-cache
  append by in-place DMA, the causal mask as a branch log (:mod:`visa.kernels.cache`, L7982–8431).
- :func:`all_reduce` (:mod:`visa.kernels.collectives`): the sum over the chips on every chip, by a butterfly or
  a ring of ChipShuffle DMAs and Vector Engine adds (L7382–7610); the kernels take a ``chip`` mapping so each
  chip computes its shard in one launch (tensor parallelism); :func:`cluster_all_reduce` the same across the two
  clusters of a chip (one cluster swap DMA and one add).
- :mod:`visa.kernels.gemm_i8`: the i8 GEMM whose K is split over the slices and the two clusters, its partials
  reduced over the slice ring and then across the clusters (the 16384³ benchmark's kernels).
- :mod:`visa.kernels.moe`: the MoE block's routing (branchless TopK with FilterCompaction, expert mask, cumsums by
  the carried operand, Expert_IDs, Scatter_Idx) and its per-token float work (routing softmax, weighted sum).
"""

from visa.kernels import bounds, moe
from visa.kernels.attention import Attention
from visa.kernels.cache import CausalMask, Embedding, KvCache
from visa.kernels.collectives import all_reduce, cluster_all_reduce
from visa.kernels.dequant import Q4Dequant
from visa.kernels.gemm import Gemm
from visa.kernels.memory import Arena
from visa.kernels.rows import Rows

__all__ = ["Arena", "Attention", "CausalMask", "Embedding", "Gemm", "KvCache", "Q4Dequant", "Rows", "all_reduce",
           "bounds", "cluster_all_reduce", "moe"]
