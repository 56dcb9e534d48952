"""The stage order, written once and checked: every import inside ``src/mcudeploy`` goes from
a later stage to an earlier one (or within one stage), module-level and function-local
imports alike, so no stage calls back up the pipeline. ARCHITECTURE.md shows the same order.

The format libraries stay at the edge: ``onnx``, ``tflite`` and ``ai_edge_litert`` are
imported only by the importers and the exporters (ruff's banned-api rule says the same);
TensorFlow Lite Micro, an independent reference runtime, only by ``validate``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mcudeploy"

# Earlier stages first. A module may import from its own stage and from any earlier one.
STAGES: list[set[str]] = [
    {"errors", "units", "limits", "safe_io", "console", "package_data", "text_inputs"},   # foundation: no pipeline knowledge
    {"ir"},
    {"arithmetic", "targets", "options", "data_files"},        # integer arithmetic spec; data
    {"reference"},                                             # the executable spec
    {"importers", "exporters"},                                # the format edge: read / write IR graphs
    {"passes"},
    {"quantize"},
    {"mapping"},
    {"kernels"},
    {"plan"},
    {"deployment"},
    {"estimate"},
    {"driver"},
    {"lint", "search"},
    {"codegen"},
    {"validate"},
    {"runs"},
    {"report", "doctor", "sweep"},
    {"workflow"},                                              # the staged deployment: uses every stage above
    {"cli"},
    {"__init__", "__main__"},
]
RANK = {name: index for index, stage in enumerate(STAGES) for name in stage}
EDGE_LIBRARIES = {"onnx": {"importers", "exporters"}, "tflite": {"importers", "exporters"},
                  "ai_edge_litert": {"importers", "exporters"}, "tflite_micro": {"validate"}}


def _stage_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _imports(path: Path):
    """(line, imported top-level stage or library, is_relative) of every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if path.name == "__init__.py":
        package = package[:-1]
    else:
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                if len(target) >= 2:
                    yield node.lineno, target[1], True
                elif node.names:
                    yield node.lineno, node.names[0].name, True
            elif node.module:
                yield node.lineno, node.module, False
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, False


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def test_every_top_level_module_has_a_stage():
    tops = {_stage_of(path) for path in _modules()}
    assert tops - set(RANK) == set(), "add the new package to STAGES (and ARCHITECTURE.md)"


def test_imports_go_from_later_stages_to_earlier_ones():
    violations = []
    for path in _modules():
        stage = _stage_of(path)
        for line, target, relative in _imports(path):
            if not relative:
                if target.startswith("mcudeploy."):
                    target = target.split(".")[1]
                else:
                    continue
            if target in ("__version__",):
                continue
            if target in RANK and RANK[target] > RANK[stage]:
                violations.append(f"{path.relative_to(PACKAGE)}:{line}: {stage} imports {target}")
    assert violations == []


@pytest.mark.parametrize("library", sorted(EDGE_LIBRARIES))
def test_format_libraries_only_at_the_edge(library):
    offenders = [f"{path.relative_to(PACKAGE)}:{line}" for path in _modules() for line, target, relative in _imports(path)
                 if not relative and (target == library or target.startswith(library + "."))
                 and _stage_of(path) not in EDGE_LIBRARIES[library]]
    assert offenders == []
