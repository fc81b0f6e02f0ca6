"""Without the plugin, the stage types alone reject a method on the wrong stage (manual L1107, L3792)."""

from typing import Any

from visa import CollectTensor, FetchTensor, Mapping, i8


def wrong_stages(s: FetchTensor[Any, Any, Any, Any, Any, Any], c: CollectTensor[Any, Any, Any, Any, Any, Any],
                 x: Mapping) -> None:
    s.contract(x)
    s.fetch(i8, x, x)
    c.switch(x, x, None)
    c.collect(x, x).commit(x, 0)
