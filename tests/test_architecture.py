"""The stage order, written once and checked: every import inside ``src/mcudeploy`` goes from
a later stage to an earlier one (or within one stage), module-level and function-local
imports alike, so no stage calls back up the pipeline. ARCHITECTURE.md shows the same order.

Every way of importing counts: ``import mcudeploy.x``, ``from mcudeploy import x, y`` (each
name), ``from .. import x, y`` (each name), ``from ..x import y``, and
``importlib.import_module("mcudeploy.x")`` / ``import_module(f"{__package__}.y")``; a dynamic
import of a module the checker cannot name is allowed only in the files of
:data:`DYNAMIC_IMPORTS`, each with its reason. Every name in :data:`STAGES` is a module or
package that exists. The tree is parsed once.

The format libraries stay at the edge: ``onnx``, ``tflite`` and ``ai_edge_litert`` are
imported only by the importers and the exporters (ruff's banned-api rule says the same),
``h5py`` (Keras files) only by the importers; TensorFlow Lite Micro, an independent
reference runtime, only by ``validate``; TensorFlow and Keras nowhere (test references).
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mcudeploy"

# Earlier stages first. A module may import from its own stage and from any earlier one.
STAGES: list[set[str]] = [
    {"errors", "units", "limits", "safe_io", "package_data", "progress", "extras", "text_inputs", "notes"},   # foundation: no pipeline knowledge
    {"ir"},
    {"arithmetic", "targets", "options", "data_files", "data_report"},        # integer arithmetic spec; data
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
    {"codegen", "preprocess"},                                 # preprocess: its C goes through codegen's literals
    {"validate"},
    {"pipeline"},                                              # the outer pipeline: quantize ... verify, once
    {"runs"},
    {"report", "doctor", "sweep"},
    {"workflow"},                                              # the staged deployment: uses every stage above
    {"cli"},
    {"__init__", "__main__"},
]
RANK = {name: index for index, stage in enumerate(STAGES) for name in stage}
EDGE_LIBRARIES = {"onnx": {"importers", "exporters"}, "tflite": {"importers", "exporters"},
                  "ai_edge_litert": {"importers", "exporters"}, "tflite_micro": {"validate"},
                  "h5py": {"importers"},
                  # Keras models are read with h5py alone: TensorFlow and Keras are test references
                  "tensorflow": set(), "keras": set(), "tf_keras": set()}
# files that import a module named at run time, and why that cannot reach up the pipeline
DYNAMIC_IMPORTS = {
    "__init__.py": "the lazy public API (the last stage may import every stage)",
    "sweep/sources.py": "a sweep file's generator module (the user's file, not a stage)",
    "extras.py": "an extra's third-party package (mcudeploy.extras.EXTRAS)",
}
IMPORT_FUNCTIONS = {"import_module", "__import__"}


@lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _stage_of(relative: Path) -> str:
    return relative.with_suffix("").parts[0]


def _package_of(relative: Path) -> list[str]:
    """``["mcudeploy", ...]``: the package a module at ``relative`` (under PACKAGE) is in."""
    return ["mcudeploy", *relative.parent.parts] if relative.parts else ["mcudeploy"]


def _absolute(parts: list[str]):
    """The stage an absolute module path names (``mcudeploy.x...`` -> ``x``), else None."""
    return parts[1] if len(parts) >= 2 and parts[0] == "mcudeploy" else None


def _from_import(node: ast.ImportFrom, package: list[str]):
    """``(stage or library, is_internal)`` of every name ``node`` imports."""
    if node.level:
        base = package[: len(package) - node.level + 1]
        target = base + (node.module.split(".") if node.module else [])
    else:
        target = (node.module or "").split(".")
    if target == ["mcudeploy"]:            # from mcudeploy import x, y / from .. import x, y
        for alias in node.names:
            yield alias.name, True
    elif _absolute(target) is not None:
        yield _absolute(target), True
    else:
        yield ".".join(target), False


def _dynamic(node: ast.Call, package: list[str]):
    """``(stage, True)`` of an ``import_module`` call the checker can resolve, ``(None, True)``
    when it cannot name the module, or nothing when ``node`` is not such a call."""
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    if name not in IMPORT_FUNCTIONS or not node.args:
        return
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        text = first.value
    elif isinstance(first, ast.JoinedStr) and first.values:
        head = first.values[0]
        if isinstance(head, ast.FormattedValue) and getattr(head.value, "id", None) in ("__package__", "__name__"):
            yield (package[1] if len(package) > 1 else "__init__"), True   # its own package
            return
        text = head.value if isinstance(head, ast.Constant) else ""
    else:
        yield None, True
        return
    if text.startswith("."):
        yield (package[1] if len(package) > 1 else text.lstrip(".").split(".")[0]), True
    elif text.startswith("mcudeploy."):
        yield text.split(".")[1], True
    elif text:
        yield text, False
    else:
        yield None, True


def imports_of(relative: Path, tree: ast.Module):
    """``(line, stage or library, is_internal)`` of every import in the module at ``relative``;
    ``None`` as the stage: a dynamic import the checker cannot name."""
    package = _package_of(relative)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for target, internal in _from_import(node, package):
                yield node.lineno, target, internal
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if _absolute(parts) is not None:
                    yield node.lineno, _absolute(parts), True
                else:
                    yield node.lineno, alias.name, False
        elif isinstance(node, ast.Call):
            for target, internal in _dynamic(node, package):
                yield node.lineno, target, internal


def violations_of(relative: Path, tree: ast.Module) -> list[str]:
    """The stage-order breaches of one module (``relative`` to the package folder)."""
    stage, found = _stage_of(relative), []
    for line, target, internal in imports_of(relative, tree):
        if not internal or target == "__version__":
            continue
        if target is None:
            if relative.as_posix() not in DYNAMIC_IMPORTS:
                found.append(f"{relative}:{line}: a dynamic import the architecture check cannot name")
        elif target in RANK and RANK[target] > RANK[stage]:
            found.append(f"{relative}:{line}: {stage} imports {target}")
    return found


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_top_level_module_has_a_stage_and_every_stage_exists():
    tops = {_stage_of(path.relative_to(PACKAGE)) for path in _modules()}
    assert tops - set(RANK) == set(), "add the new package to STAGES (and ARCHITECTURE.md)"
    assert set(RANK) - tops == set(), "a stage in STAGES names no module or package any more"


def test_imports_go_from_later_stages_to_earlier_ones():
    violations = [v for path in _modules() for v in violations_of(path.relative_to(PACKAGE), _tree(path))]
    assert violations == []


def test_every_dynamic_import_file_exists():
    assert all((PACKAGE / name).is_file() for name in DYNAMIC_IMPORTS)


@pytest.mark.parametrize("probe", [
    "from mcudeploy import codegen",
    "from mcudeploy import errors, codegen",
    "from .. import errors, codegen",
    "from ..codegen import emit_network",
    "import mcudeploy.codegen.emit_network",
    "import importlib\nimportlib.import_module('mcudeploy.codegen')",
    "from importlib import import_module\nimport_module('mcudeploy.validate.qemu')",
    "import importlib\nname = 'mcudeploy.codegen'\nimportlib.import_module(name)",
    "def late():\n    from ..runs import RunStore\n    return RunStore",
])
def test_probes_of_every_hole_are_caught(probe):
    """Each way of importing up the pipeline, written into a module of the ``ir`` stage."""
    assert violations_of(Path("ir") / "probe.py", ast.parse(probe)) != []


@pytest.mark.parametrize("probe", [
    "from .graph import Graph", "from ..errors import UsageError", "import numpy",
    "import importlib\nimportlib.import_module(f'{__package__}.opdefs')",
])
def test_allowed_imports_are_not_flagged(probe):
    assert violations_of(Path("ir") / "probe.py", ast.parse(probe)) == []


@pytest.mark.parametrize("library", sorted(EDGE_LIBRARIES))
def test_format_libraries_only_at_the_edge(library):
    offenders = [f"{path.relative_to(PACKAGE)}:{line}" for path in _modules()
                 for line, target, internal in imports_of(path.relative_to(PACKAGE), _tree(path))
                 if not internal and target is not None and (target == library or target.startswith(library + "."))
                 and _stage_of(path.relative_to(PACKAGE)) not in EDGE_LIBRARIES[library]]
    assert offenders == []
