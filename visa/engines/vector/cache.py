"""The vector engine's plan cache: :mod:`visa.engines.cache` (one rule, one place)."""

from visa.engines.cache import cached, exact_key

__all__ = ["exact_key", "cached"]
