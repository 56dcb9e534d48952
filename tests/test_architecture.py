"""The stage order, written once and checked: every import inside ``src/mcudeploy`` goes from
a later stage to an earlier one (or within one stage), module-level and function-local
imports alike, so no stage calls back up the pipeline. ARCHITECTURE.md shows the same order.

Every way of importing counts: ``import mcudeploy.x``, ``from mcudeploy import x, y`` (each
name), ``from .. import x, y`` (each name), ``from ..x import y``, and
``importlib.import_module("mcudeploy.x")`` / ``import_module(f"{__package__}.y")``; a dynamic
import of a module the checker cannot name is allowed only in the files of
:data:`DYNAMIC_IMPORTS`, each with its reason. Every name in :data:`STAGES` is a module or
package that exists. The tree is parsed once (each file's text parsed once per run).

Every check is a function of a package root (:func:`findings`), so the probes run it on a
temporary copy of the package with a hole written into it (an import up the pipeline in each
spelling, a stale stage name, a module without a stage) and assert that it fails.

The format libraries stay at the edge: ``onnx``, ``tflite`` and ``ai_edge_litert`` are
imported only by the importers and the exporters (ruff's banned-api rule says the same),
``h5py`` (Keras files) only by the importers; TensorFlow Lite Micro, an independent
reference runtime, only by ``validate``; TensorFlow and Keras nowhere (test references).
"""
from __future__ import annotations

import ast
import shutil
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
def _parse(text: str) -> ast.Module:
    return ast.parse(text)


def _tree(path: Path) -> ast.Module:
    """The module at ``path``, parsed once per text (a probe rewritten in place is parsed again)."""
    return _parse(path.read_text(encoding="utf-8"))


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


@lru_cache(maxsize=None)
def _imports(relative: Path, text: str) -> tuple[tuple[int, str | None, bool], ...]:
    """:func:`imports_of` the module with ``text`` at ``relative``, walked once per text."""
    return tuple(imports_of(relative, _parse(text)))


def _file_imports(root: Path, path: Path):
    return _imports(path.relative_to(root), path.read_text(encoding="utf-8"))


def violations_of(relative: Path, tree: ast.Module, imports=None) -> list[str]:
    """The stage-order breaches of one module (``relative`` to the package folder)."""
    stage, found = _stage_of(relative), []
    for line, target, internal in (imports if imports is not None else imports_of(relative, tree)):
        if not internal or target == "__version__":
            continue
        if target is None:
            if relative.as_posix() not in DYNAMIC_IMPORTS:
                found.append(f"{relative}:{line}: a dynamic import the architecture check cannot name")
        elif target in RANK and RANK[target] > RANK[stage]:
            found.append(f"{relative}:{line}: {stage} imports {target}")
    return found


def _modules(root: Path = PACKAGE) -> list[Path]:
    return sorted(path for path in root.rglob("*.py") if "__pycache__" not in path.parts)


def stage_findings(root: Path = PACKAGE) -> list[str]:
    """Top-level modules without a stage, and stages that name no module or package."""
    tops = {_stage_of(path.relative_to(root)) for path in _modules(root)}
    return ([f"{name}: add the new package to STAGES (and ARCHITECTURE.md)" for name in sorted(tops - set(RANK))]
            + [f"{name}: a stage in STAGES names no module or package any more" for name in sorted(set(RANK) - tops)])


def import_findings(root: Path = PACKAGE) -> list[str]:
    return [v for path in _modules(root) for v in violations_of(path.relative_to(root), None,  # type: ignore[arg-type]
                                                                   _file_imports(root, path))]


def edge_findings(library: str, root: Path = PACKAGE) -> list[str]:
    return [f"{path.relative_to(root)}:{line}: imports {library}" for path in _modules(root)
            for line, target, internal in _file_imports(root, path)
            if not internal and target is not None and (target == library or target.startswith(library + "."))
            and _stage_of(path.relative_to(root)) not in EDGE_LIBRARIES[library]]


def findings(root: Path = PACKAGE) -> list[str]:
    """Everything this file checks, over the package at ``root``."""
    return (stage_findings(root) + import_findings(root)
            + [f for library in sorted(EDGE_LIBRARIES) for f in edge_findings(library, root)]
            + [f"{name}: in DYNAMIC_IMPORTS, no such file" for name in DYNAMIC_IMPORTS if not (root / name).is_file()])


def test_every_top_level_module_has_a_stage_and_every_stage_exists():
    assert stage_findings() == []


def test_imports_go_from_later_stages_to_earlier_ones():
    assert import_findings() == []


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
    assert edge_findings(library) == []


# -- the checks run on a copy of the package with a hole written into it --------------------

@pytest.fixture(scope="module")
def package_copy(tmp_path_factory):
    """The package's Python files copied once; each probe adds or removes files and undoes it."""
    root = tmp_path_factory.mktemp("tree") / "mcudeploy"
    shutil.copytree(PACKAGE, root, ignore=lambda folder, names: [n for n in names if n == "__pycache__"
                                                                 or (Path(folder, n).is_file() and not n.endswith(".py"))])
    return root


def test_the_copy_of_the_package_passes(package_copy):
    assert findings(package_copy) == []


@pytest.mark.parametrize("where, probe", [
    ("ir/probe.py", "from mcudeploy import codegen"),
    ("ir/probe.py", "from mcudeploy import errors, codegen"),
    ("ir/probe.py", "from .. import errors, codegen"),
    ("ir/probe.py", "import mcudeploy.codegen.emit_network"),
    ("ir/probe.py", "import importlib\nimportlib.import_module('mcudeploy.codegen')"),
    ("ir/probe.py", "import importlib\nname = 'mcudeploy.codegen'\nimportlib.import_module(name)"),
    ("plan/probe.py", "def late():\n    from ..pipeline import verify\n    return verify"),
    ("pipeline_probe.py", "X = 1"),                           # a top-level module with no stage
    ("ir/probe.py", "import tensorflow"),                      # a test reference inside the package
])
def test_a_probe_in_the_copy_makes_the_check_fail(package_copy, where, probe):
    path = package_copy / where
    path.write_text(probe + "\n", encoding="utf-8")
    try:
        found = findings(package_copy)
    finally:
        path.unlink()
    assert found and all(where.split("/")[-1].removesuffix(".py") in f for f in found), found


@pytest.mark.parametrize("stage", ["notes", "pipeline", "workflow"])
def test_a_stale_stage_name_makes_the_check_fail(package_copy, stage):
    """A stage module or package that no longer exists (moved away in the copy)."""
    source = package_copy / stage if (package_copy / stage).is_dir() else package_copy / f"{stage}.py"
    moved = package_copy.parent / f"moved-{stage}"
    source.rename(moved)
    try:
        found = stage_findings(package_copy)
    finally:
        moved.rename(source)
    assert found == [f"{stage}: a stage in STAGES names no module or package any more"]


def test_the_tree_is_parsed_once(tmp_path, monkeypatch):
    """Every check, run twice, parses each file once (the checks share one parse per text);
    on a small package (the ``ir`` stage and the foundation's ``errors``) to stay fast."""
    root = tmp_path / "mcudeploy"
    shutil.copytree(PACKAGE / "ir", root / "ir", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "errors.py").write_text((PACKAGE / "errors.py").read_text(encoding="utf-8") + "# a copy\n",
                                    encoding="utf-8")
    parsed: list[str] = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.append(text) or real(text, *a, **k))
    _parse.cache_clear()
    _imports.cache_clear()
    findings(root)
    findings(root)
    texts = [path.read_text(encoding="utf-8") for path in _modules(root)]
    assert len(texts) > 10 and sorted(parsed) == sorted(set(texts))
