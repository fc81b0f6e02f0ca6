"""A tensor passed where another layout is expected: compared by the manual's equivalence (L1017–1028)."""

from visa import Context, HbmTensor, axes, device, i32, launch, m

axes(A=2048)


@device(chip=1)
def kernel(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> HbmTensor[i32, m["1"], m["A"]]:
    return x


def host(ctx: Context, same: HbmTensor[i32, m["1"], m["A / 8, A % 8"]],
         other: HbmTensor[i32, m["1"], m["A % 8, A / 8"]]) -> HbmTensor[i32, m["1"], m["A % 8, A / 8"]]:
    launch(kernel, ctx, same)
    launch(kernel, ctx, other)
    kernel(ctx, other)
    return launch(kernel, ctx, same)


def wrong_count(ctx: Context, x: HbmTensor[i32, m["1"], m["A"]]) -> None:
    launch(kernel, ctx, x, x)  # the kernel takes one tensor after its Context
