"""docs/adding-an-op.md kept true: every IR op has each step of its checklist -- float and
integer reference, C kernel, estimator features, importer mapping -- or a stated reason in
docs/op-exemptions.toml; a stated reason for a step the op has is stale and fails too."""
from __future__ import annotations

import ast
import tomllib
from functools import lru_cache
from pathlib import Path

import pytest

import mcudeploy.codegen.emit_network  # noqa: F401  (registers the emitters)
from mcudeploy.codegen.kernel_calls import EMITTERS
from mcudeploy.estimate.features import FAMILIES
from mcudeploy.estimate.kernel_map import MCUDEPLOY_FAMILIES, feature_family
from mcudeploy.ir import all_ops
from mcudeploy.reference.float_kernels import all_kernels
from mcudeploy.reference.int_kernels import all_int_kernels

ROOT = Path(__file__).resolve().parents[1]
CHECKLIST = ROOT / "docs" / "adding-an-op.md"
EXEMPTIONS = ROOT / "docs" / "op-exemptions.toml"
IMPORTERS = ROOT / "src" / "mcudeploy" / "importers"
STEPS = ("float", "int", "c", "estimator", "importer")


@lru_cache(maxsize=1)
def importer_names() -> frozenset[str]:
    """Every string constant of the importers' code: an importer that writes an op names it."""
    return frozenset(node.value for path in IMPORTERS.rglob("*.py")
                     for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))


def estimator_families(op: str) -> list[str]:
    """The instruction-model families mcudeploy's code of ``op`` is priced with
    (:func:`mcudeploy.estimate.kernel_map.mcudeploy_kernel`: a Conv is either kind)."""
    if op == "Conv":
        return ["conv2d", "depthwise_conv2d"]
    return [MCUDEPLOY_FAMILIES[op]] if op in MCUDEPLOY_FAMILIES else []


def steps_present(op: str) -> set[str]:
    """The checklist steps ``op`` has (``estimator`` only counts for an op with a C kernel)."""
    present = {step for step, has in (("float", op in all_kernels()), ("int", op in all_int_kernels()),
                                      ("c", op in EMITTERS), ("importer", op in importer_names())) if has}
    families = estimator_families(op)
    if families and all(feature_family(family) in FAMILIES for family in families):
        present.add("estimator")
    return present


def steps_needed(op: str) -> set[str]:
    return set(STEPS) if op in EMITTERS else set(STEPS) - {"estimator"}


@lru_cache(maxsize=1)
def exemptions() -> dict[tuple[str, str], str]:
    """``(op, step) -> reason`` from docs/op-exemptions.toml."""
    table: dict[tuple[str, str], str] = {}
    for entry in tomllib.loads(EXEMPTIONS.read_text(encoding="utf-8"))["exemption"]:
        assert set(entry["steps"]) <= set(STEPS), entry["steps"]
        assert entry["reason"].strip(), "an exemption needs its reason"
        for op in entry["ops"]:
            for step in entry["steps"]:
                assert (op, step) not in table, f"{op} / {step} is exempted twice"
                table[(op, step)] = entry["reason"]
    return table


def checklist_gaps(op: str, table: dict[tuple[str, str], str] | None = None) -> list[str]:
    """What ``op`` lacks that no stated reason covers, and stated reasons that are stale."""
    present = steps_present(op)
    stated = {step for (name, step) in (exemptions() if table is None else table) if name == op}
    gaps = [f"{op}: no {step} step and no stated reason in {EXEMPTIONS.name}"
            for step in STEPS if step in steps_needed(op) and step not in present and step not in stated]
    gaps += [f"{op}: {EXEMPTIONS.name} says it lacks {step}, but it has it: remove the line"
             for step in sorted(stated) if step in present]
    return gaps


@pytest.mark.parametrize("op", sorted(all_ops()))
def test_every_op_has_each_step_or_a_stated_reason(op):
    assert checklist_gaps(op) == []


def test_a_c_kernel_has_its_integer_reference():
    """The integer reference is the C kernel's spec: no emitter without it."""
    assert sorted(op for op in EMITTERS if op not in all_int_kernels()) == []


def test_exemptions_name_ir_ops():
    assert sorted({op for op, _ in exemptions()} - set(all_ops())) == []


def test_an_op_without_anything_is_reported_for_every_step():
    """The check can fail: an op with no kernel, no emitter and no importer lacks every step."""
    gaps = checklist_gaps("NoSuchOpAnywhere")
    assert [gap.split(" step")[0].split("no ")[-1] for gap in gaps] == ["float", "int", "c", "importer"]


def test_a_stale_exemption_is_reported():
    stale = {**exemptions(), ("Conv", "int"): "pretend"}
    assert checklist_gaps("Conv", stale) == [
        "Conv: op-exemptions.toml says it lacks int, but it has it: remove the line"]


def test_the_checklist_names_every_step_and_the_exemptions_file():
    text = CHECKLIST.read_text(encoding="utf-8")
    for phrase in ("float reference", "integer reference", "C kernel", "estimator", "importer",
                   "op-exemptions.toml", "tests/test_op_checklist.py"):
        assert phrase in text, phrase
