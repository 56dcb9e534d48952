"""What the stages of one deploy share: the project, the results so far, the output paths, and
the models and the deployment, computed once (or, after ``--from``, loaded from the files the
earlier stages wrote).

    context = DeployContext(project)
    context.float_graph()       # the model as imported (verified), cached
    context.quantized_graph()   # the quantize stage's graph; after a resume the file it wrote
    context.paths.quantized     # <output>/<name>_int8.onnx, and the other output paths
    context.paths.write(context.paths.report, html)   # through the deploy's manifest

Every file a deploy writes goes through :meth:`OutputPaths.write`, the manifest discipline of
``generate`` (:func:`mcudeploy.codegen.output_dir.write_own_file`, manifest
:data:`DEPLOY_MANIFEST`): a file is replaced only when this deploy's manifest lists it with the
SHA-256 of what is on disk, so the user's files in the output folder (``"."``, ``".."``, any
existing folder) are never overwritten, and no symlink in the folder is written through;
:meth:`OutputPaths.check` makes the same checks for every name before the first stage. A
re-run, and ``--from STAGE``, rewrite the deploy's own files.

Input: a :class:`~.project.Project`. Output: the shared state; it never runs a stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..codegen.output_dir import check_output_folder, check_own_files, write_own_file
from ..driver import load_graph
from ..errors import UsageError
from ..ir import Graph, precision
from ..runs.records import sha256_of_file
from .project import Project
from .records import STATE_FILE, StageResult

DEPLOY_MANIFEST = ".mcudeploy-deploy-manifest.json"
OPTION = "[project] output"


@dataclass(frozen=True)
class OutputPaths:
    """Every file a deploy writes, under the project's output folder (module docstring)."""
    folder: Path
    name: str
    activations: str

    def files(self) -> list[Path]:
        """The files written directly in the folder (``firmware/`` is a generated project)."""
        return [self.quantized, self.quantization_report, self.deployment_config, self.fallback_config,
                self.passed_config, self.report, self.state]

    def check(self) -> None:
        """Before any stage: every file is absent or the deploy's own, no link on the way."""
        names = [path.name for path in self.files()]
        check_own_files(self.folder, [*names, self.firmware.name], manifest=DEPLOY_MANIFEST, option=OPTION)
        if self.firmware.is_dir():
            check_output_folder(self.firmware)

    def write(self, path: Path, data: str | bytes) -> Path:
        """Write one of :meth:`files` through the manifest (module docstring)."""
        payload = data.encode("utf-8", errors="backslashreplace") if isinstance(data, str) else data
        return write_own_file(self.folder, path.relative_to(self.folder).as_posix(), payload,
                              manifest=DEPLOY_MANIFEST, option=OPTION)

    @property
    def quantized(self) -> Path:
        return self.folder / f"{self.name}_{self.activations}.onnx"

    @property
    def quantization_report(self) -> Path:
        return self.folder / "quantization.json"

    @property
    def firmware(self) -> Path:
        return self.folder / "firmware"

    @property
    def deployment_config(self) -> Path:
        return self.folder / "deployment.toml"

    @property
    def fallback_config(self) -> Path:
        return self.folder / "fallback.toml"

    @property
    def passed_config(self) -> Path:
        return self.folder / "passed.toml"

    @property
    def report(self) -> Path:
        return self.folder / "report.html"

    @property
    def state(self) -> Path:
        return self.folder / STATE_FILE


@dataclass
class DeployContext:
    project: Project
    results: dict[str, StageResult] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    progress: bool = True

    @property
    def paths(self) -> OutputPaths:
        return OutputPaths(self.project.output, self.project.name,
                           self.project.section("calibration")["activations"])

    @property
    def options(self):
        """The project's deployment options."""
        return self.project.deployment

    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        return dict(self.project.section("project")["input_shapes"] or {})

    def float_graph(self) -> Graph:
        """The model as imported (a fresh copy each call: stages may rewrite it)."""
        if "source" not in self.cache:
            self.cache["source"] = load_graph(self.project.model, input_shapes=self.input_shapes())
        return self.cache["source"].copy()

    def model_is_quantized(self) -> bool:
        return precision(self.float_graph()) != "float"

    def quantized_graph(self) -> Graph:
        """The quantized model: the quantize stage's graph in this deploy, the project's model
        when it is quantized already, else the file the quantize stage wrote (checked against
        the SHA-256 it recorded)."""
        if "quantized" in self.cache:
            return self.cache["quantized"].copy()
        if self.model_is_quantized():
            return self.float_graph()
        path = self.paths.quantized
        if not path.is_file():
            raise UsageError(f"{path}: the quantized model the quantize stage writes is missing; run "
                             "'mcudeploy deploy --from quantize'")
        details = self.results.get("quantize", StageResult("quantize")).details
        recorded = details.get("quantized_sha256")
        if recorded and sha256_of_file(path) != recorded:
            raise UsageError(f"{path} changed since the quantize stage wrote it (SHA-256 {recorded[:12]}...); "
                             "run 'mcudeploy deploy --from quantize'")
        if details.get("file_precision", "integer") != details.get("graph_precision", "integer"):
            raise UsageError(f"{path} loads as a {details['file_precision']} model, not as the "
                             f"{details['graph_precision']} graph the quantize stage made (the ONNX QDQ export "
                             "loses some nodes' integer form; see that stage's warning): a resumed deploy cannot "
                             "use it; run 'mcudeploy deploy --from quantize'")
        graph = load_graph(path)
        self.cache["quantized"] = graph
        return graph.copy()

    def relative(self, path: Path) -> str:
        """``path`` relative to the project folder (as the records show it)."""
        try:
            return str(Path(path).resolve().relative_to(self.project.folder))
        except ValueError:
            return str(path)
