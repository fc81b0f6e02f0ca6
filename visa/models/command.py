"""``visa generate "prompt" --max-tokens N [--length N] [--chips N] [--weights q4_1] [--temperature T --top-k K
--seed S]``: SmolLM2-135M-Instruct on the simulator, the tokens streamed as they come (design API.md §8);
``--length``: the KV cache's positions (default 256, a multiple of 32), which the prompt's tokens and the
``--max-tokens`` new ones share — a prompt too long for it is refused before any launch (exit status 1, the
refusal in the flags' words), ``--max-tokens`` alone past it before the model loads; ``--chips 2`` or ``4``: the
tensor-parallel split (:mod:`visa.models.parallel`); ``--weights q4_1``: the blocks' matrices kept 4-bit in HBM
and dequantised on the device (:class:`~visa.kernels.Q4Dequant`; default ``bf16``: dequantised on the host at
load).  A flag's value outside its range (``--max-tokens 0``, ``--length 100``, ``--temperature nan``,
``--top-k 0``, ``--seed -1``, ``--chips 3``) is argparse's refusal naming the flag (exit status 2).

Standard output gets the prompt and the continuation as it grows, then the summary: the simulated cycles of a
decode step (per token), the tokens per second that makes at the profile's clock, the decode step's roofline
utilisation (its memory bound — every weight and the KV cache read once from HBM, on several chips one chip's
share from its own HBM — over its cycles), the prefill's cycles, on several chips the cycles of the AllReduces, and
the wall time of loading, prefill and decode.  On a terminal a progress line on standard error says
what is running (loading, prefill, decode step i of N) and for how long; in a log there is none.
"""

from __future__ import annotations

import argparse
import gc
import math
import re
import sys
import time

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from visa.validate import option_int

__all__ = ["add_parser", "generate"]


def _length(text: str) -> int:
    """An argparse type: the KV cache's positions, a multiple of 32 of at least 64 (SmolLM2's rule, V0046)."""
    n = option_int(64, "the KV cache's positions: a multiple of 32, at least 64")(text)
    if n % 32:
        raise argparse.ArgumentTypeError(f"{n} is no multiple of 32 (the KV cache's positions: the kernels' S)")
    return n


def _temperature(text: str) -> float:
    """An argparse type: a finite temperature of at least 0 (0: greedy)."""
    try:
        t = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(t) or t < 0:
        raise argparse.ArgumentTypeError(f"{t} is no finite number of at least 0 (0: greedy)")
    return t


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``visa generate`` on the command line's subparsers."""
    gen = sub.add_parser("generate", help="generate text with SmolLM2-135M on the simulator (tcp-visa[models])",
                         description="Generate the continuation of PROMPT with SmolLM2-135M-Instruct on the "
                                     "simulated chip. The prompt's tokens and the new ones share the KV cache: "
                                     "their sum must not exceed --length (a longer prompt is refused, exit "
                                     "status 1, before any launch).")
    gen.add_argument("prompt", help="the text to continue (at least one token)")
    gen.add_argument("--max-tokens", type=option_int(1, "new tokens to generate"), default=16, metavar="N",
                     help="new tokens to generate, at least 1 (default 16; fewer if the model ends its text)")
    gen.add_argument("--length", type=_length, default=256, metavar="N",
                     help="positions of the KV cache: the prompt's tokens plus --max-tokens must fit "
                          "(a multiple of 32, at least 64; default 256)")
    gen.add_argument("--chips", type=int, default=1, choices=(1, 2, 4),
                     help="chips of the tensor-parallel split (default 1)")
    gen.add_argument("--weights", default="bf16", choices=("bf16", "q4_1"),
                     help="the blocks' matrices in HBM: bf16 (default, dequantised on the host) or q4_1 (4-bit, "
                          "dequantised on the device before each GEMM; one chip)")
    gen.add_argument("--temperature", type=_temperature, default=0.0, metavar="T",
                     help="0 (default): greedy; above 0: sampled from softmax(logits / T)")
    gen.add_argument("--top-k", type=option_int(1, "the most likely tokens to sample from"), default=None,
                     metavar="K", help="sample from the K most likely tokens only (default: all; with "
                                       "--temperature above 0)")
    gen.add_argument("--seed", type=option_int(0, "the sampler's seed"), default=None, metavar="S",
                     help="the sampler's seed (default: a fresh one)")
    gen.set_defaults(func=generate)


def _as_flags(message: str) -> str:
    """A refusal's text as the command line's user reads it: the options ``chips=N``, ``weights='w'`` and
    ``length=N`` (:class:`~visa.models.ModelOptionError`, :class:`~visa.models.ContextLengthError`) as the flags
    that set them, ``--chips N``, ``--weights w``, ``--length N``; the fix of a prompt too long for the KV cache
    (``ask fewer tokens or load with a larger length=``) in the flags' words."""
    message = message.replace("ask fewer tokens or load with a larger length=",
                              "shorten the prompt, ask fewer --max-tokens or give a larger --length")
    message = re.sub(r"\b(chips|weights|length)=(?:'([\w.]+)'|([\w.]+))", lambda m: f"--{m[1]} {m[2] or m[3]}",
                     message)
    return re.sub(r"\((chips|weights|length)=\)|\b(chips|weights|length)=(?![\w'])",
                  lambda m: f"(--{m[1]})" if m[1] else f"--{m[2]}", message)


def generate(args: argparse.Namespace) -> int:
    """Run ``visa generate`` (module docstring); the exit status."""
    out = Console(soft_wrap=True, highlight=False)
    err = Console(stderr=True, soft_wrap=True, highlight=False)
    try:
        from visa.models import SmolLM2
    except ImportError as exc:  # pragma: no cover - the extra's packages are imported lazily
        err.print(f"visa generate needs the models extra: pip install 'tcp-visa[models]' ({exc})")
        return 2
    from visa.errors import VisaError

    length = getattr(args, "length", 256)
    if args.max_tokens + 1 > length:  # a prompt has a token at least: refused before the model loads
        err.print(f"visa generate: --max-tokens {args.max_tokens} and a prompt of at least one token exceed the KV "
                  f"cache's --length {length} positions; fix: ask fewer --max-tokens or give a larger --length",
                  markup=False)
        return 1
    start = time.perf_counter()
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err,
                        transient=True, disable=not err.is_terminal)
    try:
        with progress:
            weights = getattr(args, "weights", "bf16")
            task = progress.add_task("loading SmolLM2-135M-Instruct (dequantise, upload to HBM)"
                                     if weights == "bf16" else "loading SmolLM2-135M-Instruct (Q4_1 to HBM)",
                                     total=None)
            model = SmolLM2.load(chips=args.chips, weights=weights, length=length)
            # the loaded model's ~200,000 Python objects (tokenizer, weights, plans) live until this command ends:
            # out of the collector's sight, a full collection no longer walks them every few decode steps (one
            # every ~3 steps took 0.2-0.3 s, issue 25's wall time); nothing is computed differently
            gc.freeze()
            loaded = time.perf_counter()
            ids = model.tokenizer.encode(args.prompt)
            progress.update(task, description=f"prefill: {len(ids)} prompt tokens")
            out.print(args.prompt, end="", markup=False)
            shown = [""]

            def on_token(token: int, text: str) -> None:
                out.print(text[len(shown[0]):], end="", markup=False)
                shown[0] = text
                done = len(model.report().decode) + 1
                progress.update(task, description=f"decode: token {done + 1} of {args.max_tokens}")

            model.generate(args.prompt, args.max_tokens, temperature=args.temperature, top_k=args.top_k,
                           seed=args.seed, on_token=on_token)
    except VisaError as exc:
        out.print()
        err.print(f"visa generate: {_as_flags(str(exc))}", markup=False)
        return 1
    out.print()
    end = time.perf_counter()
    report = model.report()
    prefill = [s for s in report.steps if s.kind == "prefill"]
    decode = report.decode
    out.print(f"— {len(decode) + 1} tokens on {args.chips} simulated {model.ctx.hw.name} chip"
              f"{'s' if args.chips > 1 else ''}", markup=False)
    out.print(f"  prefill: {sum(s.tokens for s in prefill)} tokens, {sum(s.cycles for s in prefill):,} cycles",
              markup=False)
    if decode:
        out.print(f"  decode: {report.cycles_per_token:,.0f} cycles/token = {report.tokens_per_s:,.0f} tokens/s at "
                  f"{report.clock_hz / 1e9:g} GHz; roofline utilisation {report.utilisation:.1%} (memory bound "
                  f"{report.decode_bound_cycles:,.0f} cycles: {report.weight_bytes / 1e6:.0f} MB of "
                  f"{report.weights} weights and the KV cache from HBM{' per chip' if args.chips > 1 else ''})",
                  markup=False)
    if args.chips > 1 and decode:
        out.print(f"  {args.chips} chips, tensor-parallel (one launch over m[\"C\"]: each chip runs the cycles above "
                  f"on its shard): the AllReduces take {report.collective_per_token:,.0f} cycles of a decode step "
                  f"({report.collective_per_token / report.cycles_per_token:.1%}) and "
                  f"{sum(s.collective for s in prefill):,} of the prefill", markup=False)
    pre_wall = sum(s.wall for s in prefill)
    dec_wall = sum(s.wall for s in decode)
    out.print(f"  wall: {end - start:.1f} s (load {loaded - start:.1f} s, prefill {pre_wall:.1f} s, decode "
              f"{dec_wall:.1f} s{f' = {dec_wall / len(decode):.1f} s/token' if decode else ''})", markup=False)
    return 0


def main() -> None:  # pragma: no cover - for ``python -m visa.models.command``
    parser = argparse.ArgumentParser(prog="visa")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args()
    sys.exit(args.func(args))
