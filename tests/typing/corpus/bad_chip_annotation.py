"""A kernel parameter annotated with another chip count than its @device(chip=N) (manual L1079): reported at
the parameter's annotation, before any launch (issue 27 item 9); an argument over another chip count, at the
launch that passes it."""

from typing import Any

from visa import Context, HbmTensor, axes, device, i32, launch, m

axes(A=2048)


@device(chip=2)
def two_chips(ctx: Context,
              x: HbmTensor[i32, m["1"], m["A"]],
              y: HbmTensor[i32, m["1 # 2"], m["A"]]) -> None:
    pass


@device(chip=1)
def one_chip(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]],
             y: HbmTensor[i32, m["A / 1024"], m["A % 1024"]]) -> None:
    pass


@device(chip=2)
def any_chips(ctx: Context, y: HbmTensor[i32, Any, m["A"]]) -> None:
    del y


def host(ctx: Context, y: HbmTensor[i32, m["1"], m["A"]]) -> None:
    launch(any_chips, ctx, y)  # the parameter takes any Chip; the argument spans 1 chip, the kernel runs on 2
