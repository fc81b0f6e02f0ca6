"""The mapping algebra (manual "Mapping Tensors", L538–1161; "Sequencer", L1219–1688)."""

from visa.mapping.axes import AxisSet, Skew, axes, skew
from visa.mapping.core import IDENTITY, Index, M, Mapping, MappingFactory, i, m, pair_of
from visa.mapping.evaluate import Evaluation, RelationError

__all__ = ["AxisSet", "Skew", "axes", "skew", "Index", "Mapping", "MappingFactory", "M", "i", "m", "pair_of",
           "IDENTITY", "Evaluation", "RelationError"]
