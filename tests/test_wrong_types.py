"""Every public constructor and method on tensors, views, streams and contexts refuses a wrong Python type with a
``TypeError`` or ``VisaError`` whose message names the parameter (issue 16; refusals per design API.md §5).

The table below gives, per call, arguments that work; each argument in turn is replaced by values of the wrong
type for its kind (a mapping given as text, an address given as ``"0"`` or ``None``, a numpy dtype, ...).  A
coverage check makes the table systematic: a public method that takes arguments and is neither in the table nor
exempted (with the reason) fails the test, so a new method cannot skip the check.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from visa import (
    AccumulationKind,
    AccumulationTensor,
    AlignedTensor,
    AxisSet,
    BeginTensor,
    CastTensor,
    CollectTensor,
    Context,
    ContractionTensor,
    DmTensor,
    DmTensorView,
    FetchTensor,
    HbmTensor,
    HbmTensorView,
    HostTensor,
    SwitchTensor,
    TransposeTensor,
    TrfAddress,
    TrfTensor,
    VectorFinalTensor,
    VrfTensor,
    bf16,
    device,
    i32,
    launch,
)
from visa.context import TuContext
from visa.engines.vector import BranchMode, ClipBinaryOpF32
from visa.errors import VisaError
from visa.hw import RNGD

ax = AxisSet(I=256, J=2048)
m = ax.m
Chip, Cluster, Slice = m["1"], m["1 # 2"], m["I"]
TRANSPOSED, SPLIT = m["J, I"], m["I, J / 16, J % 16"]  # result annotations for launch's check

#: wrong values per kind of parameter
WRONG: dict[str, list[object]] = {
    "mapping": ["I", None, 3, ("I",)],
    "int": ["0", None, 1.5, b"0"],
    "dtype": [np.int32, None, int, np.dtype("float32")],
    "pdma": [None, "ctx.pdma", 0],
    "tdma": [None, "ctx.tdma", 0],
    "ctx": [None, "ctx", 0],
    "hw": [None, "RNGD"],
    "view": [None, "view", 0],
    "trf": [None, "trf"],
    "trf_address": [None, "Full", 0],
    "rng": [None, 0, "seed"],
    "array": [None, "text", {"I": 1}],
    "axes": [1.5, 3, [1, 2]],
    "kernel": [None, 3, "kernel"],
    "overflow": [None, 3, "clip"],
    "index": [None, "I", 3],
}


class World:
    """One context with a tensor of every kind and a stream at every stage (the relu example's shapes)."""

    def __init__(self) -> None:
        ctx = self.ctx = Context.acquire()
        rng = np.random.default_rng(0)
        self.host = HostTensor.rand(bf16, m["I, J"], rng)
        self.vec_host = HostTensor.rand(bf16, m["J"], rng)
        self.hbm = self.host.to_hbm(Chip, m["I, J"], ctx.pdma, 0)
        vec_hbm = self.vec_host.to_hbm(Chip, m["J"], ctx.pdma, 1 << 28)
        self.dm = self.hbm.to_dm(Cluster, Slice, m["J"], ctx.tdma, 0)
        vec_dm = vec_hbm.to_dm(Cluster, Slice, m["J"], ctx.tdma, 1 << 12)
        self.trf = (ctx.sub.begin(vec_dm.view()).fetch(bf16, m["1"], m["J"]).collect(m["J / 16"], m["J % 16"])
                    .to_trf(m["1"], m["J"], TrfAddress.Full))
        self.begin = ctx.main.begin(self.dm.view())
        self.fetch = ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
        self.collect = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                        .collect(m["J / 32, J % 32 / 16"], m["J % 16"]))
        self.aligned = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                        .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf))
        self.contracted = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                           .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                           .contract(m["1"]))
        self.accumulated = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                            .collect(m["J / 32, J % 32 / 16"], m["J % 16"])
                            .align(m["J / 32"], m["J % 32"], self.trf).contract(m["1"])
                            .accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved))
        self.vinit = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                      .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                      .contract(m["1"]).accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved).vector_init())
        self.vbranch = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                        .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                        .contract(m["1"]).accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved).vector_init()
                        .vector_intra_slice_branch(BranchMode.Unconditional))
        self.final = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                      .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                      .contract(m["1"]).accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved).vector_init()
                      .vector_intra_slice_branch(BranchMode.Unconditional).vector_final())
        self.cast = (ctx.main.begin(self.dm.view()).fetch(bf16, m["J / 32"], m["J % 32"])
                     .collect(m["J / 32, J % 32 / 16"], m["J % 16"]).align(m["J / 32"], m["J % 32"], self.trf)
                     .contract(m["1"]).accumulate(m["1"], m["1 # 8"], AccumulationKind.Interleaved).vector_init()
                     .vector_intra_slice_branch(BranchMode.Unconditional).vector_final().cast(bf16, m["1 # 16"]))


Case = tuple[str, Callable[..., Any], dict[str, Any], dict[str, str]]


def cases(w: World) -> list[Case]:
    ctx, hbm, dm = w.ctx, w.hbm, w.dm
    free = iter(range(1 << 26, 1 << 30, 1 << 22))  # fresh HBM addresses
    return [
        ("HostTensor.from_numpy", HostTensor.from_numpy,
         dict(array=np.zeros((256, 2048)), dtype=bf16, mapping=m["I, J"], axes="I J", overflow="error"),
         dict(array="array", dtype="dtype", mapping="mapping", axes="axes", overflow="overflow")),
        ("HostTensor.rand", HostTensor.rand, dict(dtype=i32, mapping=m["J"], rng=np.random.default_rng(1)),
         dict(dtype="dtype", mapping="mapping", rng="rng")),
        ("HostTensor.zeros", HostTensor.zeros, dict(dtype=i32, mapping=m["J"]), dict(dtype="dtype", mapping="mapping")),
        ("HostTensor.numpy", w.host.numpy, dict(axes="I J"), dict(axes="axes")),
        ("HostTensor.to_hbm", w.host.to_hbm, dict(chip=Chip, element=m["I, J"], pdma=ctx.pdma, address=next(free)),
         dict(chip="mapping", element="mapping", pdma="pdma", address="int")),
        ("HbmTensor", HbmTensor, dict(ctx=ctx, dtype=i32, chip=Chip, element=m["J"], address=next(free)),
         dict(ctx="ctx", dtype="dtype", chip="mapping", element="mapping", address="int")),
        ("HbmTensor.from_addr", HbmTensor.from_addr, dict(ctx=ctx, dtype=i32, chip=Chip, element=m["J"], address=0),
         dict(ctx="ctx", dtype="dtype", chip="mapping", element="mapping", address="int")),
        ("DmTensor", DmTensor, dict(ctx=ctx, dtype=i32, chip=Chip, cluster=Cluster, slice_=Slice, element=m["1"],
                                    address=1 << 16),
         dict(ctx="ctx", dtype="dtype", chip="mapping", cluster="mapping", slice_="mapping", element="mapping",
              address="int")),
        ("DmTensor.from_addr", DmTensor.from_addr, dict(ctx=ctx, dtype=i32, chip=Chip, cluster=Cluster, slice_=Slice,
                                                        element=m["1"], address=0),
         dict(ctx="ctx", dtype="dtype", chip="mapping", cluster="mapping", slice_="mapping", element="mapping",
              address="int")),
        ("VrfTensor", VrfTensor, dict(ctx=ctx, dtype=i32, chip=Chip, cluster=Cluster, slice_=Slice, element=m["1"],
                                      address=0),
         dict(ctx="ctx", dtype="dtype", chip="mapping", cluster="mapping", slice_="mapping", element="mapping",
              address="int")),
        ("TrfTensor", TrfTensor, dict(ctx=ctx, dtype=i32, chip=Chip, cluster=Cluster, slice_=Slice, row=m["1"],
                                      element=m["1"], trf_address=TrfAddress.SecondHalf),
         dict(ctx="ctx", dtype="dtype", chip="mapping", cluster="mapping", slice_="mapping", row="mapping",
              element="mapping", trf_address="trf_address")),
        ("HbmTensor.to_dm", hbm.to_dm, dict(cluster=Cluster, slice_=Slice, element=m["J"], tdma=ctx.tdma,
                                            address=1 << 14),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensor.to_hbm", hbm.to_hbm, dict(chip=Chip, element=m["I, J"], tdma=ctx.tdma, address=next(free)),
         dict(chip="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensor.to_host", hbm.to_host, dict(element=m["I, J"], pdma=ctx.pdma),
         dict(element="mapping", pdma="pdma")),
        ("HbmTensor.relabel", hbm.relabel, dict(Element=m["I, J"]), dict(Element="mapping")),
        ("HbmTensor.logical", hbm.logical, dict(axes="I J"), dict(axes="axes")),
        ("DmTensor.to_hbm", dm.to_hbm, dict(element=m["J"], tdma=ctx.tdma, address=next(free)),
         dict(element="mapping", tdma="tdma", address="int")),
        ("DmTensor.to_dm", dm.to_dm, dict(cluster=Cluster, slice_=Slice, element=m["J"], tdma=ctx.tdma,
                                          address=1 << 15),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensorView.tile", hbm.view().tile, dict(dim=m["I"], size=2, tile_mapping=m["I = 2, J"], start=0),
         dict(dim="mapping", size="int", tile_mapping="mapping", start="int")),
        ("HbmTensorView.relabel", hbm.view().relabel, dict(element=m["I, J"]), dict(element="mapping")),
        ("HbmTensorView.to_dm", hbm.view().to_dm, dict(cluster=Cluster, slice_=Slice, element=m["J"], tdma=ctx.tdma,
                                                       address=1 << 14),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensorView.to_hbm", hbm.view().to_hbm, dict(chip=Chip, element=m["I, J"], tdma=ctx.tdma,
                                                         address=next(free)),
         dict(chip="mapping", element="mapping", tdma="tdma", address="int")),
        ("HbmTensorView.to_host", hbm.view().to_host, dict(element=m["I, J"], pdma=ctx.pdma),
         dict(element="mapping", pdma="pdma")),
        ("DmTensorView.to_hbm", dm.view().to_hbm, dict(element=m["J"], tdma=ctx.tdma, address=next(free)),
         dict(element="mapping", tdma="tdma", address="int")),
        ("DmTensorView.to_dm", dm.view().to_dm, dict(cluster=Cluster, slice_=Slice, element=m["J"], tdma=ctx.tdma,
                                                     address=1 << 15),
         dict(cluster="mapping", slice_="mapping", element="mapping", tdma="tdma", address="int")),
        ("DmTensorView.tile", dm.view().tile, dict(dim=m["J"], size=2, tile_mapping=m["J = 2"], start=0),
         dict(dim="mapping", size="int", tile_mapping="mapping", start="int")),
        ("Context.acquire", Context.acquire, dict(hw=RNGD), dict(hw="hw")),
        ("TuContext.begin", ctx.main.begin, dict(view=dm.view()), dict(view="view")),
        ("TuContext.begin_interleaved", ctx.main.begin_interleaved,
         dict(axis=m["1 # 2"], lhs=dm.view(), rhs=dm.view()), dict(axis="mapping", lhs="view", rhs="view")),
        ("device", device, dict(chip=1), dict(chip="int")),
        ("launch", launch, dict(kernel=device(chip=1)(lambda c: None), ctx=ctx), dict(kernel="kernel", ctx="ctx")),
        ("Mapping.position_of", m["J"].position_of, dict(index={"J": 1}), dict(index="index")),
        ("Mapping.map", m["J"].map, dict(position=1), dict(position="int")),
        ("Mapping.pad", m["J"].pad, dict(n=4096), dict(n="int")),
        ("BeginTensor.fetch", w.begin.fetch, dict(dtype=bf16, time=m["J / 32"], packet=m["J % 32"]),
         dict(dtype="dtype", time="mapping", packet="mapping")),
        ("FetchTensor.collect", w.fetch.collect, dict(time=m["J / 32, J % 32 / 16"], packet=m["J % 16"]),
         dict(time="mapping", packet="mapping")),
        ("FetchTensor.commit", w.fetch.commit, dict(element=m["J"], address=1 << 16),
         dict(element="mapping", address="int")),
        ("FetchTensor.transpose", w.fetch.transpose, dict(time=m["J / 32"], packet=m["J % 32"]),
         dict(time="mapping", packet="mapping")),
        ("FetchTensor.commit_view", w.fetch.commit_view, dict(view=dm.view()), dict(view="view")),
        ("CollectTensor.align", w.collect.align, dict(time=m["J / 32"], packet=m["J % 32"], trf=w.trf),
         dict(time="mapping", packet="mapping", trf="trf")),
        ("CollectTensor.to_vrf", w.collect.to_vrf, dict(element=m["J"], address=0),
         dict(element="mapping", address="int")),
        ("CollectTensor.to_trf", w.collect.to_trf, dict(row=m["1"], element=m["J"], address=TrfAddress.Full),
         dict(row="mapping", element="mapping", address="trf_address")),
        ("CollectTensor.cast", w.collect.cast, dict(dtype=bf16, packet=m["J % 16"]),
         dict(dtype="dtype", packet="mapping")),
        ("AlignedTensor.contract", w.aligned.contract, dict(packet=m["1"]), dict(packet="mapping")),
        ("ContractionTensor.accumulate", w.contracted.accumulate,
         dict(time=m["1"], packet=m["1 # 8"], kind=AccumulationKind.Interleaved),
         dict(time="mapping", packet="mapping", kind="trf")),
        ("AccumulationTensor.cast", w.accumulated.cast, dict(dtype=bf16, packet=m["1 # 16"]),
         dict(dtype="dtype", packet="mapping")),
        ("AccumulationTensor.commit", w.accumulated.commit, dict(element=m["1 # 8"], address=1 << 16),
         dict(element="mapping", address="int")),
        ("VectorInitTensor.vector_intra_slice_branch", w.vinit.vector_intra_slice_branch,
         dict(mode=BranchMode.Unconditional), dict(mode="trf")),
        ("VectorBranchTensor.vector_clip", w.vbranch.vector_clip, dict(op=ClipBinaryOpF32.Max, operand=0.0),
         dict(op="trf")),
        ("VectorFinalTensor.cast", w.final.cast, dict(dtype=bf16, packet=m["1 # 16"]),
         dict(dtype="dtype", packet="mapping")),
        ("CastTensor.commit", w.cast.commit, dict(element=m["1 # 4"], address=1 << 13),
         dict(element="mapping", address="int")),
        ("CastTensor.transpose", w.cast.transpose, dict(time=m["1"], packet=m["1 # 16"]),
         dict(time="mapping", packet="mapping")),
    ]


#: Public methods that take arguments but are not user calls, or are covered through another row.
EXEMPT = {
    "check_context": "internal guard (takes the operation's own context)",
    "check_readable": "internal guard (takes the calling operation's name)",
    "image": "direct byte access for tests, by chip number",
    "mapping": "looks up a level by name; a wrong name is a KeyError of a dict lookup",
    "level": "as mapping()",
    "take": "internal typestate step of every stage",
    "then": "internal typestate step of every stage",
    "record": "the schedule's internal bookkeeping",
    "trace": "a report (pid is a number shown as is)",
    "write_trace": "a report written to a path",
    "fetch_with_table": "as fetch (same dtype/mapping checks) plus a LookupTable",
    "fetch_with_zero_point": "as fetch plus a zero point",
    "fetch_with_zero_points": "as fetch plus zero points",
    "switch": "as collect (same mapping checks) plus a SwitchConfig",
    "commit_view": "covered on FetchTensor",
    "collect": "covered on FetchTensor",
    "commit": "covered on FetchTensor, AccumulationTensor and CastTensor",
    "transpose": "covered on FetchTensor and CastTensor",
    "cast": "covered on CollectTensor, AccumulationTensor and VectorFinalTensor",
    "relabel": "covered on HbmTensor and the views",
    "logical": "covered on HbmTensor",
    "to_dm": "covered on HbmTensor, DmTensor and both views",
    "to_hbm": "covered on every tensor and view",
}

CLASSES = [HostTensor, HbmTensor, DmTensor, TrfTensor, VrfTensor, HbmTensorView, DmTensorView, Context, TuContext,
           BeginTensor, FetchTensor, CollectTensor, SwitchTensor, AlignedTensor, ContractionTensor,
           AccumulationTensor, CastTensor, TransposeTensor, VectorFinalTensor]


@pytest.fixture(scope="module")
def world() -> World:
    return World()


def test_every_public_method_with_arguments_is_in_the_table(world: World) -> None:
    covered = {name.split(".")[-1] for name, *_ in cases(world)}
    missing = []
    for cls in CLASSES:
        for name, fn in inspect.getmembers(cls, callable):
            if name.startswith("_") or name in covered or name in EXEMPT:
                continue
            params = [p for p in inspect.signature(fn).parameters.values() if p.name not in ("self", "cls")]
            if params:
                missing.append(f"{cls.__name__}.{name}")
    assert not missing, f"add these to the wrong-type table (or EXEMPT, with a reason): {missing}"


def test_wrong_types_are_refused_naming_the_parameter(world: World) -> None:
    failures = []
    count = 0
    for name, fn, good, kinds in cases(world):
        for param, kind in kinds.items():
            for bad in WRONG[kind]:
                count += 1
                args = {**good, param: bad}
                try:
                    fn(**args)
                except (TypeError, VisaError) as err:
                    if type(err) is TypeError and not isinstance(err, VisaError):
                        failures.append(f"{name}({param}={bad!r}): a bare TypeError: {err}")
                    elif param.rstrip("_") not in str(err) and param not in str(err):
                        failures.append(f"{name}({param}={bad!r}): the message does not name {param}: {err}")
                except Exception as err:  # noqa: BLE001 - every escape is collected and reported
                    failures.append(f"{name}({param}={bad!r}): {type(err).__name__} escaped: {err}")
                else:
                    failures.append(f"{name}({param}={bad!r}) was accepted")
    assert count > 300
    assert not failures, "\n".join(failures)


def test_device_validates_its_chip_count() -> None:
    for bad in (2.5, "2", None, True):
        with pytest.raises(TypeError, match="parameter chip must be an int"):
            device(chip=bad)  # type: ignore[arg-type]


def test_launch_checks_the_result_against_the_annotation(world: World) -> None:
    ctx = world.ctx

    @device(chip=1)
    def none(ctx: Context) -> HbmTensor[bf16, Any, Any]:
        return None  # type: ignore[return-value]

    @device(chip=1)
    def number(ctx: Context) -> HbmTensor[bf16, Any, Any]:
        return 3  # type: ignore[return-value]

    @device(chip=1)
    def dm_instead(ctx: Context) -> HbmTensor[bf16, Any, Any]:
        return world.dm  # type: ignore[return-value]

    @device(chip=1)
    def says_none(ctx: Context) -> None:
        return world.hbm  # type: ignore[return-value]

    for kernel, got in ((none, "None"), (number, "3"), (dm_instead, "DmTensor"), (says_none, "HbmTensor")):
        with pytest.raises(TypeError, match=f"parameter return must be .*got {got}"):
            launch(kernel, ctx)

    @device(chip=1)
    def fine(ctx: Context) -> HbmTensor[bf16, Any, Any]:
        return world.hbm

    assert launch(fine, ctx) is world.hbm


def test_launch_checks_the_results_dtype_and_mappings(world: World) -> None:
    from visa.errors import DtypeError, LayoutError

    ctx = world.ctx

    @device(chip=1)
    def wrong_dtype(ctx: Context) -> HbmTensor[i32, Any, Any]:
        return world.hbm  # type: ignore[return-value]

    @device(chip=1)
    def wrong_layout(ctx: Context) -> HbmTensor[bf16, Any, TRANSPOSED]:
        return world.hbm  # type: ignore[return-value]

    @device(chip=1)
    def equivalent_layout(ctx: Context) -> HbmTensor[bf16, Chip, SPLIT]:
        return world.hbm  # type: ignore[return-value]

    with pytest.raises(DtypeError, match="annotated to return i32 elements"):
        launch(wrong_dtype, ctx)
    with pytest.raises(LayoutError) as err:
        launch(wrong_layout, ctx)
    assert err.value.level == "Element" and 'm["J, I"]' in str(err.value)
    assert launch(equivalent_layout, ctx) is world.hbm  # equal by the manual's equivalence (L1017–1028)
