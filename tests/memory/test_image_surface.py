"""``DenseImage``'s public surface is the small one its docstring lists (issue 23, "Reference mode"): a new public
method is a decision to make there, not an accident; the layers above memory name none of its private ones."""

from __future__ import annotations

import ast
from pathlib import Path

from visa.memory.images import DenseImage

SURFACE = {"nbytes", "lead_shape", "state", "name", "read_data", "all_written", "known_bytes", "read_view", "gather",
           "flat_image", "scatter", "flat_data", "flat_range", "mark_written", "mask_for_write", "settle", "poison",
           "unwrite", "data", "written", "flat", "record_replicas", "replica_labels", "knows_replicas",
           "add_reader", "handed"}

PACKAGE = Path(__file__).resolve().parents[2] / "visa"


def test_the_public_surface_is_the_documented_one() -> None:
    public = {n for n in dir(DenseImage) if not n.startswith("_")}
    assert public == SURFACE
    doc = DenseImage.__doc__ or ""
    assert all(f"`{n}`" in doc or f"``{n}``" in doc for n in SURFACE)


def test_no_layer_above_memory_names_an_image_private() -> None:
    private = {"_read_nest", "_write_nest", "_write_nest_into", "_nest_written", "_gather_words", "_scatter_words",
               "_flat_span", "_known_units", "_page_bytes", "_flat_raw", "_raw", "_cover", "_defer_copy",
               "_write_copies", "_read_units", "_sources"}  # (the distinctive ones: `_data`, `_known` are common)
    assert private <= set(vars(DenseImage)) | {"_write_nest_into"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "memory" in path.relative_to(PACKAGE).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.attr}")
    assert not found, found
